package io.dgen.backend.fdb;

import com.apple.foundationdb.MutationType;
import com.apple.foundationdb.tuple.Tuple;
import io.dgen.backend.ReadTransaction;
import io.dgen.backend.Transaction;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;

/**
 * One attempt of {@link FdbBackend#run}: the SPI's {@link Transaction} over an fdb-java
 * transaction.
 *
 * <p>Every operation maps to one fdb-java call. The adapter adds only what the SPI specifies and
 * fdb-java does differently: key and value limits ({@code 2102}/{@code 2103}) and inverted ranges
 * ({@code 2005}) are raised by the call itself instead of being latched and reported at the next
 * read or commit; the {@code ADD} operand and the versionstamped-value parameter are encoded here
 * ({@link FdbEncoding}); failures become {@code BackendException} ({@link FdbErrors}).
 */
final class FdbTransaction extends FdbReadTransaction implements Transaction {

  private final com.apple.foundationdb.Transaction tr;
  private final FdbWatches watches;
  private final ReadTransaction snapshot;
  private final List<CompletableFuture<byte[]>> versionstamps = new ArrayList<>();

  private final UUID runId;
  private final int attempt;
  private final int retriedAfter;

  FdbTransaction(
      com.apple.foundationdb.Transaction tr,
      FdbWatches watches,
      UUID runId,
      int attempt,
      int retriedAfter) {
    super(tr);
    this.retriedAfter = retriedAfter;
    this.runId = runId;
    this.attempt = attempt;
    this.tr = tr;
    this.watches = watches;
    this.snapshot = new FdbReadTransaction(tr.snapshot());
  }

  @Override
  public ReadTransaction snapshot() {
    return snapshot;
  }

  @Override
  public UUID runId() {
    return runId;
  }

  @Override
  public int attempt() {
    return attempt;
  }

  @Override
  public int retriedAfter() {
    return retriedAfter;
  }

  @Override
  public void set(byte[] key, byte[] value) {
    FdbEncoding.checkKey(key);
    FdbEncoding.checkValue(value);
    try {
      tr.set(key, value);
    } catch (RuntimeException e) {
      throw FdbErrors.map(e);
    }
  }

  @Override
  public void clear(byte[] key) {
    try {
      tr.clear(key);
    } catch (RuntimeException e) {
      throw FdbErrors.map(e);
    }
  }

  @Override
  public void clearRange(byte[] begin, byte[] end) {
    FdbEncoding.checkRange(begin, end);
    try {
      tr.clear(begin, end);
    } catch (RuntimeException e) {
      throw FdbErrors.map(e);
    }
  }

  @Override
  public void add(byte[] key, long delta) {
    FdbEncoding.checkKey(key);
    mutate(MutationType.ADD, key, FdbEncoding.addOperand(delta));
  }

  @Override
  public void setVersionstampedKey(byte[] prefix, Tuple key, byte[] value) {
    if (!key.hasIncompleteVersionstamp()) {
      throw new IllegalArgumentException(
          "the key tuple must hold exactly one incomplete Versionstamp, it holds none: " + key);
    }
    // packWithVersionstamp rejects a tuple with several incomplete stamps, and appends the 4-byte
    // little-endian position of the stamp (API >= 520), counted from the start of prefix. It asks
    // FDB.instance() for the API version, which is safe here: a transaction exists only once a
    // backend has been opened and the version selected.
    byte[] param = key.packWithVersionstamp(prefix);
    FdbEncoding.checkVersionstampedKeyParam(param);
    FdbEncoding.checkValue(value);
    mutate(MutationType.SET_VERSIONSTAMPED_KEY, param, value);
  }

  @Override
  public void setVersionstampedValue(byte[] key, byte[] valuePrefix) {
    FdbEncoding.checkKey(key);
    FdbEncoding.checkVersionstampedValuePrefix(valuePrefix);
    mutate(
        MutationType.SET_VERSIONSTAMPED_VALUE,
        key,
        FdbEncoding.versionstampedValueParam(valuePrefix));
  }

  @Override
  public CompletableFuture<byte[]> getVersionstamp() {
    CompletableFuture<byte[]> stamp;
    try {
      stamp = FdbErrors.adapt(tr.getVersionstamp());
    } catch (RuntimeException e) {
      return FdbErrors.failed(e);
    }
    synchronized (versionstamps) {
      versionstamps.add(stamp);
    }
    return stamp;
  }

  /**
   * A future that completes once every versionstamp future of this attempt has completed, either
   * way. The client sets the stamp together with the commit's outcome but hands each future to the
   * executor separately, so the commit's future can complete first; {@link FdbBackend#run} waits
   * for this before returning, which makes a stamp returned from the body available as soon as
   * {@code run} returns.
   */
  CompletableFuture<Void> versionstampsSettled() {
    List<CompletableFuture<?>> settled = new ArrayList<>();
    synchronized (versionstamps) {
      for (CompletableFuture<byte[]> stamp : versionstamps) {
        settled.add(stamp.handle((value, failure) -> null));
      }
    }
    return CompletableFuture.allOf(settled.toArray(new CompletableFuture<?>[0]));
  }

  @Override
  public CompletableFuture<Void> watch(byte[] key) {
    CompletableFuture<Void> source;
    try {
      source = tr.watch(key);
    } catch (RuntimeException e) {
      return FdbErrors.failed(e);
    }
    return watches.track(source);
  }

  @Override
  public void addReadConflictKey(byte[] key) {
    try {
      tr.addReadConflictKey(key);
    } catch (RuntimeException e) {
      throw FdbErrors.map(e);
    }
  }

  @Override
  public void addReadConflictRange(byte[] begin, byte[] end) {
    FdbEncoding.checkRange(begin, end);
    try {
      tr.addReadConflictRange(begin, end);
    } catch (RuntimeException e) {
      throw FdbErrors.map(e);
    }
  }

  @Override
  public void addWriteConflictKey(byte[] key) {
    try {
      tr.addWriteConflictKey(key);
    } catch (RuntimeException e) {
      throw FdbErrors.map(e);
    }
  }

  @Override
  public void addWriteConflictRange(byte[] begin, byte[] end) {
    FdbEncoding.checkRange(begin, end);
    try {
      tr.addWriteConflictRange(begin, end);
    } catch (RuntimeException e) {
      throw FdbErrors.map(e);
    }
  }

  @Override
  public long getApproximateSize() {
    try {
      return FdbErrors.join(tr.getApproximateSize());
    } catch (RuntimeException e) {
      throw FdbErrors.map(e);
    }
  }

  private void mutate(MutationType type, byte[] key, byte[] param) {
    try {
      tr.mutate(type, key, param);
    } catch (RuntimeException e) {
      throw FdbErrors.map(e);
    }
  }
}
