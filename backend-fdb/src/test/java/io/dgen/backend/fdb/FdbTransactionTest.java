package io.dgen.backend.fdb;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.apple.foundationdb.FDBException;
import com.apple.foundationdb.MutationType;
import com.apple.foundationdb.tuple.Tuple;
import io.dgen.backend.BackendException;
import io.dgen.backend.KeyValue;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * The SPI operations of {@link FdbTransaction}, each checked against the fdb-java call it makes.
 */
class FdbTransactionTest {

  private static final byte[] KEY = {'k'};
  private static final byte[] VALUE = {'v'};

  private final FakeFdb.FakeDatabase db = new FakeFdb.FakeDatabase();
  private final FakeFdb.FakeTransaction fake = db.next();
  private final FdbWatches watches = new FdbWatches();
  private final FdbTransaction tx =
      new FdbTransaction(fake.proxy, watches, java.util.UUID.randomUUID(), 1, 0);

  @Test
  void set_passesKeyAndValue() {
    tx.set(KEY, VALUE);

    FakeFdb.Call call = fake.last("set");
    assertThat((byte[]) call.arg(0)).isEqualTo(KEY);
    assertThat((byte[]) call.arg(1)).isEqualTo(VALUE);
  }

  @Test
  void set_oversizedKeyOrValueFailsAtTheCallWithoutReachingTheClient() {
    assertThatThrownBy(() -> tx.set(new byte[10_001], VALUE))
        .isInstanceOfSatisfying(BackendException.class, e -> assertThat(e.code()).isEqualTo(2102));
    assertThatThrownBy(() -> tx.set(KEY, new byte[100_001]))
        .isInstanceOfSatisfying(BackendException.class, e -> assertThat(e.code()).isEqualTo(2103));

    assertThat(fake.methods()).doesNotContain("set");
  }

  @Test
  void clearAndClearRange_mapToClear() {
    tx.clear(KEY);
    tx.clearRange(new byte[] {1}, new byte[] {2});

    assertThat(fake.methods()).containsExactly("clear", "clear");
    assertThat(fake.last("clear").args()).hasSize(2);
  }

  @Test
  void clearRange_invertedFailsWith2005AtTheCall() {
    assertThatThrownBy(() -> tx.clearRange(new byte[] {2}, new byte[] {1}))
        .isInstanceOfSatisfying(BackendException.class, e -> assertThat(e.code()).isEqualTo(2005));
    assertThat(fake.methods()).isEmpty();
  }

  @Test
  void add_isMutateAddWithALittleEndianOperand() {
    tx.add(KEY, 258);

    FakeFdb.Call call = fake.last("mutate");
    assertThat(call.arg(0)).isEqualTo(MutationType.ADD);
    assertThat((byte[]) call.arg(1)).isEqualTo(KEY);
    assertThat((byte[]) call.arg(2)).containsExactly(2, 1, 0, 0, 0, 0, 0, 0);
  }

  @Test
  void add_oversizedKeyFailsWith2102() {
    assertThatThrownBy(() -> tx.add(new byte[10_001], 1))
        .isInstanceOfSatisfying(BackendException.class, e -> assertThat(e.code()).isEqualTo(2102));
  }

  @Test
  void setVersionstampedValue_isMutateWithPrefixPlaceholderAndOffset() {
    tx.setVersionstampedValue(KEY, new byte[] {'p'});

    FakeFdb.Call call = fake.last("mutate");
    assertThat(call.arg(0)).isEqualTo(MutationType.SET_VERSIONSTAMPED_VALUE);
    assertThat((byte[]) call.arg(1)).isEqualTo(KEY);
    assertThat((byte[]) call.arg(2))
        .isEqualTo(FdbEncoding.versionstampedValueParam(new byte[] {'p'}));
  }

  @Test
  void setVersionstampedValue_checksTheStoredValueLength() {
    assertThatThrownBy(() -> tx.setVersionstampedValue(KEY, new byte[99_991]))
        .isInstanceOfSatisfying(BackendException.class, e -> assertThat(e.code()).isEqualTo(2103));
    assertThat(fake.methods()).isEmpty();
  }

  @Test
  void setVersionstampedKey_withoutAnIncompleteStampIsRejected() {
    assertThatThrownBy(() -> tx.setVersionstampedKey(KEY, Tuple.from("no stamp"), VALUE))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("incomplete Versionstamp");
    assertThat(fake.methods()).isEmpty();
  }

  @Test
  void getAsync_returnsTheValue() {
    fake.answer("get", args -> CompletableFuture.completedFuture(VALUE));

    assertThat(tx.get(KEY)).isEqualTo(VALUE);
  }

  @Test
  void getAsync_failsWithBackendExceptionCarryingTheCode() {
    FDBException tooOld = new FDBException("too old", 1007);
    fake.answer("get", args -> CompletableFuture.failedFuture(tooOld));

    Throwable failure = tx.getAsync(KEY).handle((value, e) -> e).join();

    assertThat(failure)
        .isInstanceOfSatisfying(BackendException.class, e -> assertThat(e.code()).isEqualTo(1007))
        .hasCause(tooOld);
    assertThatThrownBy(() -> tx.get(KEY)).isInstanceOf(BackendException.class);
  }

  @Test
  void getAsync_synchronousFailureOfTheClientGoesIntoTheFuture() {
    fake.answer(
        "get",
        args -> {
          throw new IllegalStateException("Transaction has been invalidated by reset");
        });

    assertThat(tx.getAsync(KEY).handle((value, e) -> e).join())
        .isInstanceOf(IllegalStateException.class);
  }

  @Test
  void getRangeAsync_passesLimitAndReverseAndConvertsRows() {
    fake.answer(
        "getRange",
        args ->
            FakeFdb.rows(
                List.of(
                    new com.apple.foundationdb.KeyValue(new byte[] {2}, new byte[] {20}),
                    new com.apple.foundationdb.KeyValue(new byte[] {1}, new byte[] {10}))));

    List<KeyValue> rows = tx.getRange(new byte[] {0}, new byte[] {9}, 2, true);

    assertThat(rows)
        .containsExactly(
            new KeyValue(new byte[] {2}, new byte[] {20}),
            new KeyValue(new byte[] {1}, new byte[] {10}));
    FakeFdb.Call call = fake.last("getRange");
    assertThat(call.args()).hasSize(4);
    assertThat(call.arg(2)).isEqualTo(2);
    assertThat(call.arg(3)).isEqualTo(true);
  }

  @Test
  void getRangeAsync_emptyOrInvertedRangeReturnsNothingWithoutAsking() {
    assertThat(tx.getRange(new byte[] {1}, new byte[] {1})).isEmpty();
    assertThat(tx.getRange(new byte[] {2}, new byte[] {1})).isEmpty();
    assertThat(fake.methods()).isEmpty();
  }

  @Test
  void getRangeAsync_negativeLimitIsRejected() {
    assertThatThrownBy(() -> tx.getRangeAsync(new byte[] {0}, new byte[] {1}, -1, false))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void getRangeAsync_failureIsMapped() {
    fake.answer(
        "getRange",
        args -> FakeFdb.rows(CompletableFuture.failedFuture(new FDBException("x", 1036))));

    assertThatThrownBy(() -> tx.getRange(new byte[] {0}, new byte[] {1}))
        .isInstanceOfSatisfying(BackendException.class, e -> assertThat(e.code()).isEqualTo(1036));
  }

  @Test
  void snapshot_readsThroughTheClientsSnapshotView() {
    fake.answer("snapshot.get", args -> CompletableFuture.completedFuture(VALUE));

    assertThat(tx.snapshot().isSnapshot()).isTrue();
    assertThat(tx.isSnapshot()).isFalse();
    assertThat(tx.snapshot().get(KEY)).isEqualTo(VALUE);
    assertThat(fake.methods()).contains("snapshot.get").doesNotContain("get");
  }

  @Test
  void getReadVersionAndApproximateSize_waitForTheClient() {
    fake.answer("getReadVersion", args -> CompletableFuture.completedFuture(42L));
    fake.answer("getApproximateSize", args -> CompletableFuture.completedFuture(99L));

    assertThat(tx.getReadVersion()).isEqualTo(42L);
    assertThat(tx.getApproximateSize()).isEqualTo(99L);
  }

  @Test
  void getVersionstamp_isAdapted() {
    byte[] stamp = new byte[10];
    stamp[9] = 1;
    fake.answer("getVersionstamp", args -> CompletableFuture.completedFuture(stamp));

    assertThat(tx.getVersionstamp().join()).isEqualTo(stamp);
  }

  @Test
  void conflictRanges_mapOneToOne() {
    tx.addReadConflictKey(KEY);
    tx.addReadConflictRange(new byte[] {1}, new byte[] {2});
    tx.addWriteConflictKey(KEY);
    tx.addWriteConflictRange(new byte[] {1}, new byte[] {2});

    assertThat(fake.methods())
        .containsExactly(
            "addReadConflictKey",
            "addReadConflictRange",
            "addWriteConflictKey",
            "addWriteConflictRange");
  }

  @Test
  void conflictRanges_invertedFailWith2005() {
    assertThatThrownBy(() -> tx.addReadConflictRange(new byte[] {2}, new byte[] {1}))
        .isInstanceOf(BackendException.class);
    assertThatThrownBy(() -> tx.addWriteConflictRange(new byte[] {2}, new byte[] {1}))
        .isInstanceOf(BackendException.class);
    assertThat(fake.methods()).isEmpty();
  }

  @Test
  void conflictRanges_synchronousClientErrorIsMapped() {
    fake.answer(
        "addWriteConflictKey",
        args -> {
          throw new FDBException("key outside legal range", 2004);
        });

    assertThatThrownBy(() -> tx.addWriteConflictKey(new byte[] {(byte) 0xff}))
        .isInstanceOfSatisfying(BackendException.class, e -> assertThat(e.code()).isEqualTo(2004));
  }

  @Test
  void watch_cancellingTheFutureCancelsTheClientsWatch() {
    CompletableFuture<Void> source = new CompletableFuture<>();
    fake.answer("watch", args -> source);

    CompletableFuture<Void> watch = tx.watch(KEY);
    assertThat(watches.size()).isEqualTo(1);
    watch.cancel(true);

    assertThat(source).isCancelled();
    assertThat(watches.size()).isZero();
  }

  @Test
  void watch_failureIsMapped() {
    fake.answer(
        "watch", args -> CompletableFuture.failedFuture(new FDBException("too many", 1032)));

    assertThat(tx.watch(KEY).handle((value, e) -> e).join())
        .isInstanceOfSatisfying(BackendException.class, e -> assertThat(e.code()).isEqualTo(1032));
    assertThat(watches.size()).isZero();
  }

  @Test
  void watch_closingTheRegistryFailsPendingWatchesWith1025() {
    CompletableFuture<Void> source = new CompletableFuture<>();
    fake.answer("watch", args -> source);
    CompletableFuture<Void> watch = tx.watch(KEY);

    watches.closeAll();

    assertThat(watch.handle((value, e) -> e))
        .succeedsWithin(Duration.ofSeconds(1))
        .isInstanceOfSatisfying(BackendException.class, e -> assertThat(e.code()).isEqualTo(1025));
    assertThat(source).isCancelled();
    assertThat(watches.size()).isZero();
  }
}
