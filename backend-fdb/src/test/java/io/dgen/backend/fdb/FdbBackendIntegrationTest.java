package io.dgen.backend.fdb;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

import com.apple.foundationdb.subspace.Subspace;
import com.apple.foundationdb.tuple.Tuple;
import com.apple.foundationdb.tuple.Versionstamp;
import io.dgen.backend.BackendException;
import io.dgen.backend.ByteKeys;
import io.dgen.backend.KeyValue;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * What the conformance suite cannot see: the FoundationDB-specific options and lifecycle of {@link
 * FdbBackend}, and the byte layouts the adapter produces, checked on a real cluster.
 */
@ExtendWith(FdbTestEnvironment.class)
@Timeout(120)
class FdbBackendIntegrationTest {

  private static final Duration WAIT = Duration.ofSeconds(10);

  private FdbBackend backend;
  private String tenant;
  private byte[] prefix;

  @BeforeEach
  void openTenant() {
    backend = FdbTestEnvironment.openBackend();
    tenant = UUID.randomUUID().toString();
    prefix = backend.directory("fdb-backend-test", tenant).getKey();
  }

  @AfterEach
  void removeTenant() {
    try {
      backend.removeDirectory("fdb-backend-test", tenant);
    } finally {
      backend.close();
    }
  }

  private byte[] key(Object... elements) {
    return ByteKeys.concat(prefix, Tuple.from(elements).pack());
  }

  @Test
  void directory_isADirectoryLayerDirectory() {
    Subspace again = backend.directory("fdb-backend-test", tenant);

    assertThat(again.getKey()).isEqualTo(prefix);
    assertThat(backend.openDirectory("fdb-backend-test", tenant))
        .get()
        .extracting(Subspace::getKey)
        .isEqualTo(prefix);
    assertThat(backend.openDirectory("fdb-backend-test", tenant, "absent")).isEmpty();
  }

  @Test
  void removeDirectory_clearsItsKeysAndReportsWhetherItExisted() {
    backend.run(
        tx -> {
          tx.set(key("a"), new byte[] {1});
          return null;
        });

    assertThat(backend.removeDirectory("fdb-backend-test", tenant)).isTrue();
    assertThat(backend.removeDirectory("fdb-backend-test", tenant)).isFalse();
    byte[] after = backend.run(tx -> tx.get(key("a")));
    assertThat(after).isNull();
  }

  @Test
  void add_storesALittleEndianCounter() {
    backend.run(
        tx -> {
          tx.add(key("n"), 5);
          tx.add(key("n"), -2);
          return null;
        });

    byte[] stored = backend.run(tx -> tx.get(key("n")));
    assertThat(ByteBuffer.wrap(stored).order(ByteOrder.LITTLE_ENDIAN).getLong()).isEqualTo(3);
  }

  @Test
  void versionstampedKeyAndValue_holdTheCommitsStamp() {
    CompletableFuture<byte[]> stampFuture =
        backend.run(
            tx -> {
              tx.setVersionstampedKey(
                  prefix, Tuple.from("q", Versionstamp.incomplete(7)), key("v"));
              tx.setVersionstampedValue(key("v"), new byte[] {'p'});
              return tx.getVersionstamp();
            });
    byte[] stamp = stampFuture.join();

    byte[] expectedKey =
        ByteKeys.concat(prefix, Tuple.from("q", Versionstamp.complete(stamp, 7)).pack());
    List<KeyValue> rows = backend.run(tx -> tx.getRange(key("q"), ByteKeys.strinc(key("q"))));
    assertThat(rows).containsExactly(new KeyValue(expectedKey, key("v")));
    byte[] value = backend.run(tx -> tx.get(key("v")));
    assertThat(value).isEqualTo(ByteKeys.concat(new byte[] {'p'}, stamp));
  }

  @Test
  void readsAndSizes_comeFromTheCluster() {
    long[] observed =
        backend.run(
            tx -> {
              tx.set(key("s"), new byte[100]);
              return new long[] {tx.getReadVersion(), tx.getApproximateSize()};
            });

    assertThat(observed[0]).isPositive();
    assertThat(observed[1]).isGreaterThanOrEqualTo(100);
  }

  @Test
  void oversizedKey_failsAtTheCallAndTheTransactionStillCommits() {
    byte[] big = new byte[10_001];

    backend.run(
        tx -> {
          assertThatThrownBy(() -> tx.set(big, new byte[0]))
              .isInstanceOfSatisfying(
                  BackendException.class, e -> assertThat(e.code()).isEqualTo(2102));
          tx.set(key("ok"), new byte[] {1});
          return null;
        });

    byte[] ok = backend.run(tx -> tx.get(key("ok")));
    assertThat(ok).containsExactly(1);
  }

  @Test
  void run_retriesAConflictAndThrowsUserExceptionsUnwrapped() {
    AtomicInteger executions = new AtomicInteger();
    backend.run(
        tx -> {
          tx.get(key("c"));
          if (executions.incrementAndGet() == 1) {
            backend.run(
                other -> {
                  other.set(key("c"), new byte[] {1});
                  return null;
                });
          }
          tx.set(key("x"), new byte[] {1});
          return null;
        });
    assertThat(executions).hasValue(2);

    IllegalStateException mine = new IllegalStateException("mine");
    assertThatThrownBy(
            () ->
                backend.run(
                    tx -> {
                      throw mine;
                    }))
        .isSameAs(mine);
  }

  @Test
  void retryLimitZero_throwsTheConflictInsteadOfRetrying() {
    try (FdbBackend noRetry = FdbTestEnvironment.builder().retryLimit(0).open()) {
      AtomicInteger executions = new AtomicInteger();

      Throwable thrown =
          catchThrowable(
              () ->
                  noRetry.run(
                      tx -> {
                        executions.incrementAndGet();
                        tx.get(key("r"));
                        noRetry.run(
                            other -> {
                              other.set(key("r"), new byte[] {(byte) executions.get()});
                              return null;
                            });
                        tx.set(key("y"), new byte[] {1});
                        return null;
                      }));

      assertThat(thrown)
          .isInstanceOfSatisfying(
              BackendException.class, e -> assertThat(e.code()).isEqualTo(1020));
      assertThat(executions).hasValue(1);
    }
  }

  @Test
  void transactionTimeout_failsWith1031AndIsNotRetried() {
    try (FdbBackend impatient =
        FdbTestEnvironment.builder().transactionTimeout(Duration.ofMillis(1)).open()) {
      Throwable thrown =
          catchThrowable(
              () ->
                  impatient.run(
                      tx -> {
                        long deadline = System.nanoTime() + WAIT.toNanos();
                        while (System.nanoTime() < deadline) {
                          tx.get(key("t"));
                        }
                        return null;
                      }));

      assertThat(thrown)
          .isInstanceOfSatisfying(
              BackendException.class, e -> assertThat(e.code()).isEqualTo(1031));
    }
  }

  @Test
  void maxWatches_limitsOutstandingWatches() {
    try (FdbBackend limited = FdbTestEnvironment.builder().maxWatches(1).open()) {
      CompletableFuture<Void> first = limited.run(tx -> tx.watch(key("w1")));
      CompletableFuture<Void> second = limited.run(tx -> tx.watch(key("w2")));

      assertThat(second.handle((v, e) -> e))
          .succeedsWithin(WAIT)
          .isInstanceOfSatisfying(
              BackendException.class, e -> assertThat(e.code()).isEqualTo(1032));
      assertThat(first).isNotDone();
      first.cancel(true);
    }
  }

  @Test
  void watch_firesOnChangeAndCloseFailsPendingOnesWith1025() {
    CompletableFuture<Void> fires = backend.run(tx -> tx.watch(key("w")));
    backend.run(
        tx -> {
          tx.set(key("w"), new byte[] {1});
          return null;
        });
    assertThat(fires).succeedsWithin(WAIT);

    FdbBackend other = FdbTestEnvironment.openBackend();
    CompletableFuture<Void> pending = other.run(tx -> tx.watch(key("never")));
    assertThat(other.pendingWatches()).isEqualTo(1);
    other.close();

    assertThat(pending.handle((v, e) -> e))
        .succeedsWithin(WAIT)
        .isInstanceOfSatisfying(BackendException.class, e -> assertThat(e.code()).isEqualTo(1025));
  }

  @Test
  void automaticIdempotency_isAcceptedByTheCluster() {
    try (FdbBackend idempotent = FdbTestEnvironment.builder().automaticIdempotency(true).open()) {
      idempotent.run(
          tx -> {
            tx.add(key("i"), 1);
            return null;
          });
    }

    byte[] stored = backend.run(tx -> tx.get(key("i")));
    assertThat(ByteBuffer.wrap(stored).order(ByteOrder.LITTLE_ENDIAN).getLong()).isEqualTo(1);
  }

  @Test
  void anotherApiVersionInTheSameJvmIsRefusedClearly() {
    assertThatThrownBy(() -> FdbTestEnvironment.builder().apiVersion(720).open())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("730")
        .hasMessageContaining("already selected");
  }
}
