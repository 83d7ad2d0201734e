package io.dgen.internal;

import com.apple.foundationdb.tuple.Tuple;
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
final class TrackingTransaction implements Transaction {

  /** Packed size assumed for a versionstamped key's tuple (the stamp alone packs to 13 bytes). */
  private static final int STAMPED_KEY_ESTIMATE = 64;

  private final Transaction tx;
  private boolean wrote;
  private long mutationBytes;
  private int nextUserVersion;
  private long @Nullable [] rung;
  private int rungCount;

  TrackingTransaction(Transaction tx) {
    this.tx = tx;
  }

  boolean wrote() {
    return wrote;
  }

  /**
   * The bytes of the mutations made through this object so far (keys and values, range bounds): a
   * running total, O(1) to ask, unlike {@link #getApproximateSize()}. Conflict ranges are not
   * counted; callers that cap a transaction by it keep a wide margin below FoundationDB's limit.
   */
  long mutationBytes() {
    return mutationBytes;
  }

  private void wrote(long bytes) {
    wrote = true;
    mutationBytes += bytes;
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
    return tx.getAsync(key);
  }

  @Override
  public CompletableFuture<List<KeyValue>> getRangeAsync(
      byte[] begin, byte[] end, int limit, boolean reverse) {
    return tx.getRangeAsync(begin, end, limit, reverse);
  }

  @Override
  public long getReadVersion() {
    return tx.getReadVersion();
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
    tx.set(key, value);
  }

  @Override
  public void clear(byte[] key) {
    wrote(key.length);
    tx.clear(key);
  }

  @Override
  public void clearRange(byte[] begin, byte[] end) {
    wrote(begin.length + end.length);
    tx.clearRange(begin, end);
  }

  @Override
  public void add(byte[] key, long delta) {
    wrote(key.length + 8);
    tx.add(key, delta);
  }

  @Override
  public void setVersionstampedKey(byte[] prefix, Tuple key, byte[] value) {
    // An estimate: Tuple.getPackedSize() of a tuple with an incomplete versionstamp asks the
    // native FoundationDB client for its API version, which the runtime must never load.
    wrote(prefix.length + STAMPED_KEY_ESTIMATE + value.length);
    tx.setVersionstampedKey(prefix, key, value);
  }

  @Override
  public void setVersionstampedValue(byte[] key, byte[] valuePrefix) {
    wrote(key.length + valuePrefix.length + 10);
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
    tx.addReadConflictKey(key);
  }

  @Override
  public void addReadConflictRange(byte[] begin, byte[] end) {
    tx.addReadConflictRange(begin, end);
  }

  @Override
  public void addWriteConflictKey(byte[] key) {
    wrote(0);
    tx.addWriteConflictKey(key);
  }

  @Override
  public void addWriteConflictRange(byte[] begin, byte[] end) {
    wrote(0);
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
