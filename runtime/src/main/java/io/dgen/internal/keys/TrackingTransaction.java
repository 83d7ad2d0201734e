package io.dgen.internal.keys;

import com.apple.foundationdb.tuple.Tuple;
import com.apple.foundationdb.tuple.Versionstamp;
import io.dgen.backend.ByteKeys;
import io.dgen.backend.KeyValue;
import io.dgen.backend.ReadTransaction;
import io.dgen.backend.Transaction;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import org.jspecify.annotations.Nullable;

/**
 * A transaction that remembers whether anything was written through it, including by user callbacks
 * through {@code TxContext}. The runtime writes its commit marker only into attempts that write, so
 * read-only work stays read-only (and cheap) on FoundationDB.
 */
public final class TrackingTransaction implements Transaction {

  /** Packed size assumed for a versionstamped key's tuple that cannot be measured. */
  private static final int STAMPED_KEY_ESTIMATE = 64;

  /** A packed incomplete versionstamp: its type code, ten bytes of version, two of user version. */
  private static final int PACKED_STAMP = 13;

  /**
   * Bytes {@link #sizeBound} allows per operation beyond its keys and values: FoundationDB's client
   * counts its mutation and conflict-range records too. 64 is too few for its mutations
   * (SizeBoundTest fails on FoundationDB with it), 128 enough; this doubles that.
   */
  private static final int PER_OPERATION = 256;

  /** What {@link #sizeBound} starts from: the commit marker's read on a retry goes around us. */
  static final int UNTRACKED = 4_096;

  private final Transaction tx;
  private boolean wrote;
  private long writes;
  private long mutationBytes;
  private long sizeBound = UNTRACKED;
  private int nextUserVersion;
  private long @Nullable [] rung;
  private int rungCount;

  public TrackingTransaction(Transaction tx) {
    this.tx = tx;
  }

  public boolean wrote() {
    return wrote;
  }

  /**
   * How many writes (mutations and write conflict ranges) were made through this object so far: a
   * callback that leaves it unchanged wrote nothing, so what it refused can be dropped from the
   * transaction it ran in.
   */
  public long writes() {
    return writes;
  }

  /**
   * The bytes of the mutations made through this object so far (keys and values, range bounds): a
   * running total, O(1) to ask, unlike {@link #getApproximateSize()}. Conflict ranges are not
   * counted; callers that cap a transaction by it keep a wide margin below FoundationDB's limit.
   */
  public long mutationBytes() {
    return mutationBytes;
  }

  private void wrote(long bytes) {
    wrote = true;
    writes++;
    mutationBytes += bytes;
  }

  /**
   * An upper bound of {@link #getApproximateSize()} (FoundationDB's own count: mutations, read and
   * write conflict ranges) for everything done through this object, or -1 once an operation made it
   * unknown. O(1) to ask, where {@code getApproximateSize} is a call into the client library (and
   * in the memory backend a pass over the transaction): a caller that only needs to know that the
   * transaction is far from FoundationDB's limit asks this first.
   */
  public long sizeBound() {
    return sizeBound;
  }

  /** Adds to {@link #sizeBound} an operation of {@code bytes} keys and values. */
  private void bound(long bytes) {
    if (sizeBound >= 0) {
      sizeBound += bytes + PER_OPERATION;
    }
  }

  /**
   * The packed size of a tuple whose last element is its only incomplete versionstamp (a queue
   * item's key, a wake-log entry), measured without the stamp (which would load the client
   * library); -1 for any other tuple.
   */
  private static long packedWithTrailingStamp(Tuple key) {
    int n = key.size();
    if (n == 0 || !(key.get(n - 1) instanceof Versionstamp v) || v.isComplete()) {
      return -1;
    }
    if (n == 1) {
      return PACKED_STAMP;
    }
    Tuple rest = key.popBack();
    return rest.hasIncompleteVersionstamp() ? -1 : rest.getPackedSize() + PACKED_STAMP;
  }

  /** The conflict range of one key: the key and the key after it. */
  private static long keyRange(byte[] key) {
    return 2L * key.length + 1;
  }

  /** The user version of the next versionstamped queue key pushed in this attempt. */
  int nextUserVersion() {
    if (nextUserVersion > 0xffff) {
      throw new IllegalStateException("more than 65,536 pushes in one transaction");
    }
    return nextUserVersion++;
  }

  /** True the first time {@code wakeId} rings in this attempt (usually one id per attempt). */
  boolean firstRing(long wakeId) {
    long[] r = rung;
    for (int i = 0; i < rungCount; i++) {
      if (Objects.requireNonNull(r)[i] == wakeId) {
        return false;
      }
    }
    if (r == null || rungCount == r.length) {
      rung = r = Arrays.copyOf(r == null ? new long[0] : r, Math.max(2, rungCount * 2));
    }
    r[rungCount++] = wakeId;
    return true;
  }

  @Override
  public CompletableFuture<byte @Nullable []> getAsync(byte[] key) {
    bound(keyRange(key));
    return tx.getAsync(key);
  }

  @Override
  public CompletableFuture<List<KeyValue>> getRangeAsync(
      byte[] begin, byte[] end, int limit, boolean reverse) {
    bound(begin.length + end.length);
    return tx.getRangeAsync(begin, end, limit, reverse);
  }

  @Override
  public long getReadVersion() {
    return tx.getReadVersion();
  }

  @Override
  public CompletableFuture<Long> getReadVersionAsync() {
    return tx.getReadVersionAsync();
  }

  @Override
  public boolean isSnapshot() {
    return false;
  }

  @Override
  public ReadTransaction snapshot() {
    return tx.snapshot();
  }

  @Override
  public void set(byte[] key, byte[] value) {
    wrote(key.length + value.length);
    bound(key.length + value.length + keyRange(key));
    tx.set(key, value);
  }

  @Override
  public void clear(byte[] key) {
    wrote(key.length);
    bound(2 * keyRange(key));
    tx.clear(key);
  }

  @Override
  public void clearRange(byte[] begin, byte[] end) {
    wrote(ByteKeys.clearedBytes(begin, end));
    bound(2L * (begin.length + end.length));
    tx.clearRange(begin, end);
  }

  @Override
  public void add(byte[] key, long delta) {
    wrote(key.length + 8);
    bound(key.length + 8 + keyRange(key));
    tx.add(key, delta);
  }

  @Override
  public void setVersionstampedKey(byte[] prefix, Tuple key, byte[] value) {
    // Tuple.getPackedSize() of a tuple with an incomplete versionstamp asks the native
    // FoundationDB client for its API version, which the runtime must never load: a stamp that is
    // not the last element is estimated, and makes the size bound unknown.
    long packed = packedWithTrailingStamp(key);
    long size = prefix.length + (packed >= 0 ? packed : STAMPED_KEY_ESTIMATE);
    wrote(size + value.length);
    if (packed >= 0) {
      bound(size + 4 + value.length + 2 * size + 1);
    } else {
      sizeBound = -1;
    }
    tx.setVersionstampedKey(prefix, key, value);
  }

  @Override
  public void setVersionstampedValue(byte[] key, byte[] valuePrefix) {
    wrote(key.length + valuePrefix.length + 10);
    bound(key.length + valuePrefix.length + 14 + keyRange(key));
    tx.setVersionstampedValue(key, valuePrefix);
  }

  @Override
  public CompletableFuture<byte[]> getVersionstamp() {
    return tx.getVersionstamp();
  }

  @Override
  public CompletableFuture<Void> watch(byte[] key) {
    return tx.watch(key);
  }

  @Override
  public void addReadConflictKey(byte[] key) {
    bound(keyRange(key));
    tx.addReadConflictKey(key);
  }

  @Override
  public void addReadConflictRange(byte[] begin, byte[] end) {
    bound(begin.length + end.length);
    tx.addReadConflictRange(begin, end);
  }

  @Override
  public void addWriteConflictKey(byte[] key) {
    wrote(0);
    bound(keyRange(key));
    tx.addWriteConflictKey(key);
  }

  @Override
  public void addWriteConflictRange(byte[] begin, byte[] end) {
    wrote(0);
    bound(begin.length + end.length);
    tx.addWriteConflictRange(begin, end);
  }

  @Override
  public UUID runId() {
    return tx.runId();
  }

  @Override
  public int attempt() {
    return tx.attempt();
  }

  @Override
  public long getApproximateSize() {
    return tx.getApproximateSize();
  }
}
