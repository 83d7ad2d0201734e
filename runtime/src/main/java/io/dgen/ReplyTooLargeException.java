package io.dgen;

/**
 * A call's reply is larger than a reply may be ({@value #MAX_REPLY_BYTES} bytes, encoded). The
 * reply is written in the transaction that runs the call, next to the state change and the rest of
 * a batch, and FoundationDB refuses a transaction over 10,000,000 bytes: a larger reply would fail
 * every commit of its batch. So the call fails instead, and **nothing of it is committed**:
 *
 * <ul>
 *   <li>an inline call or a priority call throws it to the caller; its state change is discarded
 *       and the call is not queued;
 *   <li>a queued call fails like a callback that threw: the failure counts toward the message's
 *       {@code deadLetterThreshold} (the message stays queued and is retried until then), and the
 *       waiting caller gets this exception at the first failure, not at its timeout.
 * </ul>
 *
 * <p>Return large results some other way: write them under keys of your own through {@code
 * TxContext} in parts, and reply with where to find them.
 */
public final class ReplyTooLargeException extends DGenException {

  private static final long serialVersionUID = 1L;

  /**
   * The largest encoded reply, in bytes: half a FoundationDB transaction, leaving the rest to the
   * state change and the batch around it.
   */
  public static final long MAX_REPLY_BYTES = 5_000_000;

  private final long replyBytes;
  private final long limitBytes;

  /**
   * Creates the exception.
   *
   * @param message what was too large, with context
   * @param replyBytes the encoded reply's size
   * @param limitBytes the limit it exceeded
   */
  public ReplyTooLargeException(String message, long replyBytes, long limitBytes) {
    super(message);
    this.replyBytes = replyBytes;
    this.limitBytes = limitBytes;
  }

  /** The encoded size of the refused reply, in bytes. */
  public long replyBytes() {
    return replyBytes;
  }

  /** The limit it exceeded, in bytes. */
  public long limitBytes() {
    return limitBytes;
  }
}
