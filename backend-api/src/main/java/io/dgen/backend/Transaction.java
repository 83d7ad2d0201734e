package io.dgen.backend;

import com.apple.foundationdb.tuple.Tuple;
import com.apple.foundationdb.tuple.Versionstamp;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;

/**
 * One attempt of a transaction run by {@link Backend#run}: serializable reads, writes, atomic
 * operations, versionstamps and watches, committed together or not at all.
 *
 * <h2>Isolation and conflicts</h2>
 *
 * Reads made through this object are serializable: each adds a read-conflict range, and the commit
 * fails with {@link BackendException#NOT_COMMITTED not_committed (1020)} if a transaction that
 * committed after this attempt's read version wrote into one of them ({@link Backend#run} then
 * retries). Reads through {@link #snapshot()}, atomic operations and blind writes add no read
 * conflict. A transaction that only reads never conflicts. Ranges the attempt already wrote are
 * left out of later read-conflict ranges, as FoundationDB does: write-then-read adds no conflict,
 * read-then-write does.
 *
 * <h2>Limits</h2>
 *
 * A key longer than 10,000 bytes fails with {@link BackendException#KEY_TOO_LARGE 2102} and a value
 * longer than 100,000 bytes with {@link BackendException#VALUE_TOO_LARGE 2103}; both are raised by
 * the write call itself (FoundationDB's client defers them to the next read or commit; the
 * FoundationDB backend checks them eagerly so that both backends behave alike). More than
 * 10,000,000 bytes of mutations and conflict ranges fails the commit with {@link
 * BackendException#TRANSACTION_TOO_LARGE 2101}. An attempt whose commit comes more than five
 * seconds after its read version fails with {@link BackendException#TRANSACTION_TOO_OLD 1007} and
 * is retried with a fresh read version.
 *
 * <h2>Threading</h2>
 *
 * Not thread-safe for writes. Methods must not be called after the body passed to {@link
 * Backend#run} has returned, except on the futures it handed out.
 */
public interface Transaction extends ReadTransaction {

  /**
   * Returns the snapshot view of this attempt: the same read version and read-your-writes, but its
   * reads add no read-conflict ranges.
   *
   * @return the snapshot view
   */
  ReadTransaction snapshot();

  /**
   * Sets {@code key} to {@code value}.
   *
   * @param key the key, at most 10,000 bytes
   * @param value the value, at most 100,000 bytes
   * @throws BackendException {@code 2102} or {@code 2103} if a limit is exceeded
   */
  void set(byte[] key, byte[] value);

  /**
   * Removes {@code key} if present.
   *
   * @param key the key
   */
  void clear(byte[] key);

  /**
   * Removes every key in {@code [begin, end)}. Costs only the bounds, not the data removed.
   *
   * @param begin the first key removed (inclusive)
   * @param end the end of the range (exclusive)
   * @throws BackendException {@code 2005 inverted_range} if {@code begin} sorts after {@code end}
   */
  void clearRange(byte[] begin, byte[] end);

  /**
   * Atomically adds {@code delta} to the 64-bit little-endian integer stored at {@code key}
   * (FoundationDB's {@code ADD}); an absent key counts as zero, overflow wraps. Adds no read
   * conflict, so concurrent adders never conflict with each other.
   *
   * @param key the key
   * @param delta the signed amount to add
   */
  void add(byte[] key, long delta);

  /**
   * Writes {@code value} at a key that embeds this transaction's versionstamp, known only at
   * commit: the key is {@code prefix} followed by {@code key} packed as a tuple, where {@code key}
   * holds exactly one incomplete {@link Versionstamp} (made with {@link
   * Versionstamp#incomplete(int)}). At commit the incomplete stamp is replaced by the commit's
   * 10-byte transaction versionstamp and the stamp's user version. Keys stamped by later commits
   * sort after keys stamped by earlier ones.
   *
   * <p>The stamped key cannot be read back in the same attempt; a read that would see it fails with
   * {@link BackendException#ACCESSED_UNREADABLE 1036}.
   *
   * @param prefix raw bytes before the tuple, e.g. a tenant's subspace prefix
   * @param key a tuple with exactly one incomplete versionstamp
   * @param value the value
   * @throws IllegalArgumentException if {@code key} does not hold exactly one incomplete stamp
   */
  void setVersionstampedKey(byte[] prefix, Tuple key, byte[] value);

  /**
   * Writes {@code valuePrefix} followed by this transaction's 10-byte versionstamp to {@code key},
   * the stamp filled in at commit. The value cannot be read back in the same attempt.
   *
   * @param key the key
   * @param valuePrefix bytes stored before the stamp (may be empty)
   */
  void setVersionstampedValue(byte[] key, byte[] valuePrefix);

  /**
   * Returns a future of this transaction's 10-byte versionstamp: the 8-byte big-endian commit
   * version and the 2-byte order within the commit batch. It completes only after a successful
   * commit; it fails with {@link BackendException#NO_COMMIT_VERSION 2021} if the transaction
   * committed without writing, and with the commit's error (or {@link
   * BackendException#TRANSACTION_INVALID_VERSION 2020}) if it did not commit.
   *
   * @return the versionstamp future
   */
  CompletableFuture<byte[]> getVersionstamp();

  /**
   * Watches {@code key}: the returned future completes after a later commit changes the key's value
   * (setting the identical value is no change). The watch reads the key as of this attempt, is
   * armed when this transaction commits, and fails with the commit's error if the commit fails.
   * Cancelling the future disarms the watch and frees its slot.
   *
   * @param key the key
   * @return a future completed when the value differs from the one this attempt saw
   * @throws BackendException {@code 1032 too_many_watches} (on the future) when the backend's limit
   *     of outstanding watches is reached
   */
  CompletableFuture<Void> watch(byte[] key);

  /**
   * Adds {@code [key, keyAfter(key))} to the read-conflict set, as a read of the key would, without
   * reading it. Adds nothing for a key this attempt already wrote.
   *
   * @param key the key
   */
  void addReadConflictKey(byte[] key);

  /**
   * Adds {@code [begin, end)} to the read-conflict set.
   *
   * @param begin the first key (inclusive)
   * @param end the end (exclusive)
   * @throws BackendException {@code 2005 inverted_range} if {@code begin} sorts after {@code end}
   */
  void addReadConflictRange(byte[] begin, byte[] end);

  /**
   * Adds {@code [key, keyAfter(key))} to the write-conflict set without writing: concurrent readers
   * of the key conflict with this transaction, which is no longer read-only.
   *
   * @param key the key
   */
  void addWriteConflictKey(byte[] key);

  /**
   * Adds {@code [begin, end)} to the write-conflict set.
   *
   * @param begin the first key (inclusive)
   * @param end the end (exclusive)
   * @throws BackendException {@code 2005 inverted_range} if {@code begin} sorts after {@code end}
   */
  void addWriteConflictRange(byte[] begin, byte[] end);

  /**
   * Identifies the {@link Backend#run} (or {@link Backend#runAsync}) call this attempt belongs to:
   * every attempt of one run returns the same id, and no other run does. The most significant 64
   * bits grow with the run's start time (see {@link RunIds}), so ids of old runs sort first.
   *
   * <p>With {@link #attempt()}, this lets a body that may be re-executed after {@code
   * commit_unknown_result (1021)} recognise its own earlier commit: write a marker keyed by the run
   * id, and on a later attempt check it first.
   *
   * @return the run's id
   */
  UUID runId();

  /**
   * Which attempt of its run this is: 1 for the first, 2 for the first retry, and so on.
   *
   * @return the attempt number, at least 1
   */
  int attempt();

  /**
   * Why this attempt runs: the {@linkplain BackendException#code() code} of the retryable error
   * that ended the previous attempt of its run (for example {@code not_committed (1020)}), or 0 for
   * a run's first attempt. Lets a caller count its retries by cause without a retry loop of its
   * own.
   *
   * @return the previous attempt's error code, or 0
   */
  default int retriedAfter() {
    return 0;
  }

  /**
   * Returns an estimate of the bytes this attempt would commit (mutations and conflict ranges), the
   * quantity that FoundationDB's 10,000,000-byte limit applies to.
   *
   * @return the approximate size in bytes
   */
  long getApproximateSize();
}
