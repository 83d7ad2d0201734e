package io.dgen;

/**
 * A state write would not fit in one FoundationDB transaction. Thrown before anything is written:
 * the transaction that carried the callback aborts, and the stored state is unchanged.
 *
 * <p>The runtime allows a state write at most {@value #DEFAULT_BUDGET} bytes of the transaction,
 * counted as FoundationDB does: for every key set, the key and value plus the key's write-conflict
 * range (three times the key, plus the value); for every range cleared, both bounds twice. It never
 * allows more than the transaction has left: FoundationDB's 10,000,000-byte limit less what the
 * transaction holds already (the queue items a batch consumes, replies, the callbacks' own writes,
 * conflict ranges) less a 100,000-byte margin for the version key and the commit. In a batch of
 * several messages, a write refused so runs the messages again one at a time; alone, it is the
 * message's failure. With the structured encoding only the difference from the stored state counts,
 * so a large state may keep growing by small changes; a write that rewrites a part (the first
 * write, a change of shape, a term that changed) counts that whole part.
 *
 * <p>The exception also reports a single key that would exceed FoundationDB's 10,000-byte key
 * limit; field names and ids are kept below it by storing an object or list whose names are too
 * long as one term.
 */
public final class StateTooLargeException extends DGenException {

  private static final long serialVersionUID = 1L;

  /** The bytes of a transaction a state write may use. */
  public static final long DEFAULT_BUDGET = 9_000_000;

  private final long encodedBytes;
  private final long limitBytes;

  /**
   * Creates the exception.
   *
   * @param message what was too large, with context
   * @param encodedBytes the bytes the write would have used
   * @param limitBytes the limit it exceeded
   */
  public StateTooLargeException(String message, long encodedBytes, long limitBytes) {
    super(message);
    this.encodedBytes = encodedBytes;
    this.limitBytes = limitBytes;
  }

  /** The bytes the refused write would have used (of a transaction, or of one key). */
  public long encodedBytes() {
    return encodedBytes;
  }

  /** The limit those bytes exceeded. */
  public long limitBytes() {
    return limitBytes;
  }
}
