package io.dgen.backend;

import com.apple.foundationdb.tuple.Tuple;
import com.apple.foundationdb.tuple.Versionstamp;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import org.jspecify.annotations.Nullable;

/**
 * A {@link Transaction} that forwards every call to another one: the base of the backend decorators
 * in this package, which override only what they change. Every write that succeeded is reported to
 * {@link #wrote(long)}, so that a decorator can tell a writing attempt from a read-only one and
 * count its bytes without overriding each write.
 */
abstract class ForwardingTransaction implements Transaction {

  private static final int STAMP_BYTES = 10;

  /** The transaction calls are forwarded to. */
  final Transaction delegate;

  ForwardingTransaction(Transaction delegate) {
    this.delegate = delegate;
  }

  /**
   * Called after each write that succeeded, including conflict-range-only writes (which make the
   * attempt non-read-only).
   *
   * @param bytes the key and value bytes the write stores once committed (range clears: their
   *     bounds; conflict ranges: 0)
   */
  abstract void wrote(long bytes);

  @Override
  public CompletableFuture<byte @Nullable []> getAsync(byte[] key) {
    return delegate.getAsync(key);
  }

  @Override
  public byte @Nullable [] get(byte[] key) {
    return delegate.get(key);
  }

  @Override
  public CompletableFuture<List<KeyValue>> getRangeAsync(
      byte[] begin, byte[] end, int limit, boolean reverse) {
    return delegate.getRangeAsync(begin, end, limit, reverse);
  }

  @Override
  public List<KeyValue> getRange(byte[] begin, byte[] end, int limit, boolean reverse) {
    return delegate.getRange(begin, end, limit, reverse);
  }

  @Override
  public List<KeyValue> getRange(byte[] begin, byte[] end) {
    return delegate.getRange(begin, end);
  }

  @Override
  public long getReadVersion() {
    return delegate.getReadVersion();
  }

  @Override
  public CompletableFuture<Long> getReadVersionAsync() {
    return delegate.getReadVersionAsync();
  }

  @Override
  public boolean isSnapshot() {
    return delegate.isSnapshot();
  }

  @Override
  public ReadTransaction snapshot() {
    return delegate.snapshot();
  }

  @Override
  public void set(byte[] key, byte[] value) {
    delegate.set(key, value);
    wrote(key.length + value.length);
  }

  @Override
  public void clear(byte[] key) {
    delegate.clear(key);
    wrote(key.length);
  }

  @Override
  public void clearRange(byte[] begin, byte[] end) {
    delegate.clearRange(begin, end);
    wrote(ByteKeys.clearedBytes(begin, end));
  }

  @Override
  public void add(byte[] key, long delta) {
    delegate.add(key, delta);
    wrote(key.length + Long.BYTES);
  }

  @Override
  public void setVersionstampedKey(byte[] prefix, Tuple key, byte[] value) {
    delegate.setVersionstampedKey(prefix, key, value);
    wrote(prefix.length + completed(key).pack().length + value.length);
  }

  @Override
  public void setVersionstampedValue(byte[] key, byte[] valuePrefix) {
    delegate.setVersionstampedValue(key, valuePrefix);
    wrote(key.length + valuePrefix.length + STAMP_BYTES);
  }

  @Override
  public CompletableFuture<byte[]> getVersionstamp() {
    return delegate.getVersionstamp();
  }

  @Override
  public CompletableFuture<Void> watch(byte[] key) {
    return delegate.watch(key);
  }

  @Override
  public void addReadConflictKey(byte[] key) {
    delegate.addReadConflictKey(key);
  }

  @Override
  public void addReadConflictRange(byte[] begin, byte[] end) {
    delegate.addReadConflictRange(begin, end);
  }

  @Override
  public void addWriteConflictKey(byte[] key) {
    delegate.addWriteConflictKey(key);
    wrote(0);
  }

  @Override
  public void addWriteConflictRange(byte[] begin, byte[] end) {
    delegate.addWriteConflictRange(begin, end);
    wrote(0);
  }

  @Override
  public UUID runId() {
    return delegate.runId();
  }

  @Override
  public int attempt() {
    return delegate.attempt();
  }

  @Override
  public int retriedAfter() {
    return delegate.retriedAfter();
  }

  @Override
  public long getApproximateSize() {
    return delegate.getApproximateSize();
  }

  /**
   * {@code key} with each incomplete versionstamp replaced by a complete one of the same user
   * version: it packs to the length the stamped key will have, without the native client (packing
   * an incomplete stamp asks fdb-java for the API version).
   */
  private static Tuple completed(Tuple key) {
    List<Object> items = new ArrayList<>(key.size());
    for (Object item : key.getItems()) {
      if (item instanceof Versionstamp v && !v.isComplete()) {
        items.add(Versionstamp.complete(new byte[STAMP_BYTES], v.getUserVersion()));
      } else if (item instanceof Tuple nested) {
        items.add(completed(nested));
      } else {
        items.add(item);
      }
    }
    return Tuple.fromList(items);
  }

  @Override
  public String toString() {
    return getClass().getSimpleName() + "{" + delegate + "}";
  }
}
