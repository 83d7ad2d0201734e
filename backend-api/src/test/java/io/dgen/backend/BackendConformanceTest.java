package io.dgen.backend;

import static java.nio.charset.StandardCharsets.UTF_8;
import static java.util.concurrent.TimeUnit.MILLISECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

import com.apple.foundationdb.subspace.Subspace;
import com.apple.foundationdb.tuple.Tuple;
import com.apple.foundationdb.tuple.Versionstamp;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.IntConsumer;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The contract of the backend SPI ({@link Backend}, {@link Transaction}, {@link ReadTransaction})
 * stated as tests: FoundationDB 7.3's client-visible semantics wherever the SPI exposes them
 * (conflict ranges, read-your-writes, atomic add, versionstamps, watches, limits, the retry loop,
 * tenant directories). Every backend runs it through a small subclass:
 *
 * <pre>{@code
 * class MemoryBackendConformanceTest extends BackendConformanceTest {
 *   @Override
 *   protected Backend newBackend() {
 *     return MemoryBackend.create();
 *   }
 * }
 * }</pre>
 *
 * <p>Each test works inside its own fresh directory {@code ("conformance", <random UUID>)} and
 * removes it afterwards, so the suite can run against a shared FoundationDB cluster. Tests that
 * need fault injection use the backend's own (see {@link #faults}) or else wrap it in a {@link
 * FaultInjectingBackend}, so they run on every backend. Tests that need a configurable watch limit
 * are skipped, with the reason shown, when the subclass does not provide them.
 *
 * <p>Conflicts are produced deterministically, without sleeping: on the first attempt of a
 * transaction T1, its body commits the interfering write in a separate, nested {@link Backend#run},
 * then lets T1 write and return. A conflict shows as a second execution of T1's body; its absence
 * as exactly one.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
public abstract class BackendConformanceTest {

  /** How long a positive asynchronous expectation (a watch firing, a future failing) may take. */
  private static final Duration WAIT = Duration.ofSeconds(10);

  /** How long a multi-threaded test's workers may take. */
  private static final Duration WAIT_THREADS = Duration.ofSeconds(100);

  /** More than FoundationDB's five-second transaction lifetime. */
  private static final Duration OVER_AGE = Duration.ofSeconds(6);

  private static final HexFormat HEX = HexFormat.of();

  private Backend backend;
  private String tenantId;
  private byte[] prefix;

  /**
   * Returns a fresh backend for one test. The suite calls it once before each test (some tests call
   * it again) and closes every backend it obtained. A FoundationDB implementation may return a
   * backend on a shared cluster: the suite only touches keys inside its own fresh directory.
   *
   * @return a new, open backend
   */
  protected abstract Backend newBackend();

  /**
   * Returns fault injection for {@code backend}, a backend this test obtained from {@link
   * #newBackend()}, if the implementation has its own. The default has none: the tests that need
   * faults then wrap the backend in a {@link FaultInjectingBackend} (or use it directly when {@link
   * #newBackend()} returned one).
   *
   * @param backend the backend under test
   * @return its fault injection, or empty
   */
  protected Optional<Faults> faults(Backend backend) {
    return Optional.empty();
  }

  /**
   * Returns a fresh backend whose limit of outstanding watches is {@code max} (FoundationDB's
   * {@code max_watches}, default 10,000) instead of the default. The default implementation skips
   * the calling test; override it where the limit is configurable. The test closes the backend.
   *
   * @param max the maximum number of watches not yet fired, failed or cancelled
   * @return a new, open backend with that limit
   */
  protected Backend newBackendWithMaxWatches(int max) {
    return Assumptions.abort("this backend cannot configure its watch limit for a test");
  }

  @BeforeEach
  final void openTenant() {
    backend = newBackend();
    tenantId = UUID.randomUUID().toString();
    prefix = backend.directory("conformance", tenantId).getKey();
  }

  @AfterEach
  final void removeTenant() {
    try {
      backend.removeDirectory("conformance", tenantId);
    } finally {
      backend.close();
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Plain reads and writes

  @Test
  void get_absentKey_returnsNull() {
    assertThat(value(key("missing"))).isNull();
  }

  @Test
  void set_committed_isVisibleToLaterTransactionsAndOverwritable() {
    put("k", "v1");
    assertThat(read("k")).isEqualTo("v1");
    put("k", "v2");
    assertThat(read("k")).isEqualTo("v2");
  }

  @Test
  void clear_removesOnlyThatKey() {
    put("a", "1");
    put("b", "2");
    backend.run(
        tx -> {
          tx.clear(key("a"));
          tx.clear(key("never-written"));
          return null;
        });
    assertThat(read("a")).isNull();
    assertThat(read("b")).isEqualTo("2");
  }

  @Test
  void clearRange_removesHalfOpenRangeOnly() {
    seed("a", "b", "b0", "c", "d");
    backend.run(
        tx -> {
          tx.clearRange(key("b"), key("c"));
          return null;
        });
    assertThat(keysIn("a", "z")).containsExactly("a", "c", "d");
  }

  @Test
  void clearRange_beginAfterEnd_raises2005() {
    AtomicInteger attempts = new AtomicInteger();
    backend.run(
        tx -> {
          attempts.incrementAndGet();
          assertCode(() -> tx.clearRange(key("b"), key("a")), BackendException.INVERTED_RANGE);
          tx.clearRange(key("a"), key("a"));
          return null;
        });
    assertThat(attempts).hasValue(1);
  }

  @Test
  void getRange_returnsKeysInUnsignedOrderHalfOpen() {
    byte[][] raw = {
      {(byte) 0x80}, {0x01}, {(byte) 0xff}, {0x7f, 0x00}, {0x7f},
    };
    backend.run(
        tx -> {
          for (byte[] r : raw) {
            tx.set(ByteKeys.concat(prefix, r), r);
          }
          return null;
        });
    List<KeyValue> all = backend.run(tx -> tx.getRange(prefix, ByteKeys.strinc(prefix)));
    assertThat(all)
        .extracting(kv -> HEX.formatHex(kv.value()))
        .containsExactly("01", "7f", "7f00", "80", "ff");
    List<KeyValue> halfOpen =
        backend.run(
            tx ->
                tx.getRange(
                    ByteKeys.concat(prefix, new byte[] {0x7f}),
                    ByteKeys.concat(prefix, new byte[] {(byte) 0x80})));
    assertThat(halfOpen).extracting(kv -> HEX.formatHex(kv.value())).containsExactly("7f", "7f00");
  }

  @Test
  void getRange_limitAndReverse_selectFromTheRightEnd() {
    seed("k1", "k2", "k3", "k4", "k5");
    assertThat(keysIn("k", "l", 2, false)).containsExactly("k1", "k2");
    assertThat(keysIn("k", "l", 2, true)).containsExactly("k5", "k4");
    assertThat(keysIn("k", "l", ReadTransaction.UNLIMITED, true))
        .containsExactly("k5", "k4", "k3", "k2", "k1");
    assertThat(keysIn("k", "l", 99, false)).containsExactly("k1", "k2", "k3", "k4", "k5");
  }

  @Test
  void getRange_beginNotBeforeEnd_returnsNoRows() {
    seed("k1", "k2");
    assertThat(keysIn("k1", "k1")).isEmpty();
    assertThat(keysIn("k2", "k1")).isEmpty();
    assertThat(keysIn("k2", "k1", 1, true)).isEmpty();
  }

  @Test
  void getRange_negativeLimit_throwsIllegalArgument() {
    backend.run(
        tx -> {
          assertThatThrownBy(() -> tx.getRange(key("a"), key("b"), -1, false))
              .isInstanceOf(IllegalArgumentException.class);
          return null;
        });
  }

  @Test
  void getReadVersion_isStableWithinAnAttemptAndSharedWithSnapshot() {
    backend.run(
        tx -> {
          long first = tx.getReadVersion();
          tx.get(key("a"));
          assertThat(tx.getReadVersion()).isEqualTo(first);
          assertThat(tx.snapshot().getReadVersion()).isEqualTo(first);
          return null;
        });
  }

  @Test
  void snapshot_isFlaggedAsSnapshot() {
    backend.run(
        tx -> {
          assertThat(tx.isSnapshot()).isFalse();
          assertThat(tx.snapshot().isSnapshot()).isTrue();
          return null;
        });
  }

  @Test
  void getAsync_error_isReportedThroughTheFuture() {
    byte[] system = {(byte) 0xff, 'x'};
    backend.run(
        tx -> {
          CompletableFuture<byte @Nullable []> f = tx.getAsync(system);
          assertThat(failureOf(f).code()).isEqualTo(BackendException.KEY_OUTSIDE_LEGAL_RANGE);
          return null;
        });
  }

  // ---------------------------------------------------------------------------------------------
  // Isolation and conflicts (FDB-SEMANTICS §1, §2, §9.1–§9.15)

  @Test
  void get_thenConcurrentWriteOfThatKey_conflictsAndRetrySeesTheWrite() {
    put("k", "old");
    List<String> seen = new CopyOnWriteArrayList<>();
    int attempts =
        race(tx -> seen.add(str(tx.get(key("k")))), other -> other.set(key("k"), bytes("new")));
    assertThat(attempts).isEqualTo(2);
    assertThat(seen).containsExactly("old", "new");
    assertThat(read("unrelated")).isEqualTo("attempt 2");
  }

  @Test
  void snapshotGet_thenConcurrentWrite_doesNotConflict() {
    put("k", "old");
    int attempts =
        race(tx -> tx.snapshot().get(key("k")), other -> other.set(key("k"), bytes("new")));
    assertThat(attempts).isEqualTo(1);
    assertThat(read("unrelated")).isEqualTo("attempt 1");
  }

  @Test
  void snapshotGetRange_thenConcurrentInsert_doesNotConflict() {
    seed("k1", "k2");
    int attempts =
        race(
            tx -> tx.snapshot().getRange(key("k"), key("l")),
            other -> other.set(key("k15"), bytes("new")));
    assertThat(attempts).isEqualTo(1);
  }

  @Test
  void readOnlyTransaction_concurrentWrite_commitsAndHasNoVersionstamp() {
    put("k", "old");
    AtomicInteger attempts = new AtomicInteger();
    AtomicReference<String> seen = new AtomicReference<>();
    CompletableFuture<byte[]> stamp =
        backend.run(
            tx -> {
              int attempt = attempts.incrementAndGet();
              seen.set(str(tx.get(key("k"))));
              if (attempt == 1) {
                put("k", "new");
              }
              return tx.getVersionstamp();
            });
    assertThat(attempts).hasValue(1);
    assertThat(seen).hasValue("old");
    assertThat(failureOf(stamp).code()).isEqualTo(BackendException.NO_COMMIT_VERSION);
  }

  @Test
  void read_afterReadVersionIsFixed_seesSnapshotNotLaterCommit() {
    put("k", "old");
    AtomicInteger attempts = new AtomicInteger();
    String seen =
        backend.run(
            tx -> {
              int attempt = attempts.incrementAndGet();
              tx.getReadVersion();
              if (attempt == 1) {
                put("k", "new");
              }
              return str(tx.get(key("k")));
            });
    assertThat(attempts).hasValue(1);
    assertThat(seen).isEqualTo("old");
    assertThat(read("k")).isEqualTo("new");
  }

  @Test
  void transactionStartedAfterCommit_seesItAndReadsAtOrAboveItsVersion() {
    CompletableFuture<byte[]> stamp =
        backend.run(
            tx -> {
              tx.set(key("k"), bytes("v"));
              return tx.getVersionstamp();
            });
    long commitVersion = commitVersion(stamp.join());
    backend.run(
        tx -> {
          assertThat(tx.getReadVersion()).isGreaterThanOrEqualTo(commitVersion);
          assertThat(str(tx.get(key("k")))).isEqualTo("v");
          return null;
        });
  }

  @Test
  void blindWrites_concurrent_bothCommitAndTheLaterCommitWins() {
    put("k", "initial");
    AtomicInteger attempts = new AtomicInteger();
    AtomicReference<CompletableFuture<byte[]>> otherStamp = new AtomicReference<>();
    CompletableFuture<byte[]> mine =
        backend.run(
            tx -> {
              int attempt = attempts.incrementAndGet();
              tx.set(key("k"), bytes("first-started"));
              if (attempt == 1) {
                otherStamp.set(
                    backend.run(
                        other -> {
                          other.set(key("k"), bytes("first-committed"));
                          return other.getVersionstamp();
                        }));
              }
              return tx.getVersionstamp();
            });
    assertThat(attempts).hasValue(1);
    assertThat(read("k")).isEqualTo("first-started");
    assertThat(compareStamps(mine.join(), otherStamp.get().join())).isPositive();
  }

  @Test
  void add_concurrentAddersOnMissingKey_allCommitWithExactTotal() throws Exception {
    int threads = 8;
    int perThread = 500;
    AtomicInteger executions = new AtomicInteger();
    inThreads(
        threads,
        id -> {
          for (int i = 0; i < perThread; i++) {
            backend.run(
                tx -> {
                  executions.incrementAndGet();
                  tx.add(key("counter"), 1);
                  return null;
                });
          }
        });
    assertThat(readLong("counter")).isEqualTo(threads * perThread);
    assertThat(executions).as("atomic adds never conflict").hasValue(threads * perThread);
  }

  @Test
  void readModifyWrite_eightThreadsThousandIncrements_exactTotalAfterRetries() throws Exception {
    int threads = 8;
    int perThread = 1_000;
    AtomicInteger executions = new AtomicInteger();
    // Every thread's first attempt reads before any of them commits, so conflicts are certain
    // rather than left to the scheduler of a loaded machine.
    CountDownLatch allRead = new CountDownLatch(threads);
    inThreads(
        threads,
        id -> {
          for (int i = 0; i < perThread; i++) {
            boolean first = i == 0;
            backend.run(
                tx -> {
                  executions.incrementAndGet();
                  byte[] v = tx.get(key("counter"));
                  if (first && allRead.getCount() > 0) {
                    allRead.countDown();
                    awaitQuietly(allRead);
                  }
                  tx.set(key("counter"), le64(v == null ? 1 : le64(v) + 1));
                  return null;
                });
          }
        });
    assertThat(readLong("counter")).isEqualTo(threads * perThread);
    assertThat(executions.get())
        .as("conflicting read-modify-writes must have been retried")
        .isGreaterThan(threads * perThread);
  }

  @Test
  void add_thenConcurrentWrite_doesNotConflict() {
    put("k", le64(10));
    int attempts = race(tx -> tx.add(key("k"), 1), other -> other.set(key("k"), le64(100)));
    assertThat(attempts).isEqualTo(1);
    assertThat(readLong("k")).isEqualTo(101);
  }

  @Test
  void add_racingAdders_neitherConflicts() {
    int attempts = race(tx -> tx.add(key("k"), 1), other -> other.add(key("k"), 10));
    assertThat(attempts).isEqualTo(1);
    assertThat(readLong("k")).isEqualTo(11);
  }

  @Test
  void add_thenSerializableGet_seesMergedValueAndConflicts() {
    put("k", le64(5));
    List<Long> seen = new CopyOnWriteArrayList<>();
    int attempts =
        race(
            tx -> {
              tx.add(key("k"), 1);
              seen.add(le64(tx.get(key("k"))));
            },
            other -> other.set(key("k"), le64(100)));
    assertThat(attempts).isEqualTo(2);
    assertThat(seen).containsExactly(6L, 101L);
    assertThat(readLong("k")).isEqualTo(101);
  }

  @Test
  void add_thenSnapshotGet_seesMergedValueWithoutConflict() {
    put("k", le64(5));
    List<Long> seen = new CopyOnWriteArrayList<>();
    int attempts =
        race(
            tx -> {
              tx.add(key("k"), 1);
              seen.add(le64(tx.snapshot().get(key("k"))));
            },
            other -> other.set(key("k"), le64(100)));
    assertThat(attempts).isEqualTo(1);
    assertThat(seen).containsExactly(6L);
    assertThat(readLong("k")).isEqualTo(101);
  }

  @Test
  void clearThenAdd_thenGet_isIndependentOfTheDatabaseAndDoesNotConflict() {
    put("k", le64(5));
    List<Long> seen = new CopyOnWriteArrayList<>();
    int attempts =
        race(
            tx -> {
              tx.clear(key("k"));
              tx.add(key("k"), 3);
              seen.add(le64(tx.get(key("k"))));
            },
            other -> other.set(key("k"), le64(100)));
    assertThat(attempts).isEqualTo(1);
    assertThat(seen).containsExactly(3L);
    assertThat(readLong("k")).isEqualTo(3);
  }

  /** Forward read with limit 2 over k1..k5 returns k1, k2 and reads only {@code [k, k2+\0)}. */
  @ParameterizedTest(name = "write {0} -> conflict {1}")
  @CsvSource({
    "k0, true", "k1, true", "k15, true", "k2, true",
    "k2+, false", "k25, false", "k3, false", "k9, false"
  })
  void getRange_limitReached_conflictsOnlyOnReadPart(String written, boolean conflicts) {
    seed("k1", "k2", "k3", "k4", "k5");
    List<List<String>> seen = new CopyOnWriteArrayList<>();
    int attempts =
        race(
            tx -> seen.add(names(tx.getRange(key("k"), key("l"), 2, false))),
            other -> other.set(keyAt(written), bytes("new")));
    assertThat(seen.get(0)).containsExactly("k1", "k2");
    assertThat(attempts).isEqualTo(conflicts ? 2 : 1);
  }

  /** Reverse read with limit 2 over k1..k5 returns k5, k4 and reads only {@code [k4, l)}. */
  @ParameterizedTest(name = "write {0} -> conflict {1}")
  @CsvSource({
    "k0, false", "k3, false", "k35, false", "k3+, false", "l, false",
    "k4, true", "k4+, true", "k45, true", "k5, true", "k9, true"
  })
  void getRangeReverse_limitReached_conflictsOnlyOnReadPart(String written, boolean conflicts) {
    seed("k1", "k2", "k3", "k4", "k5");
    List<List<String>> seen = new CopyOnWriteArrayList<>();
    int attempts =
        race(
            tx -> seen.add(names(tx.getRange(key("k"), key("l"), 2, true))),
            other -> other.set(keyAt(written), bytes("new")));
    assertThat(seen.get(0)).containsExactly("k5", "k4");
    assertThat(attempts).isEqualTo(conflicts ? 2 : 1);
  }

  /** A read that returned fewer rows than its limit read the whole {@code [k, l)}. */
  @ParameterizedTest(name = "limit {0}, reverse {1}, write {2} -> conflict {3}")
  @CsvSource({
    "10, false, k0, true",
    "10, false, k35, true",
    "10, false, k9, true",
    "10, false, j, false",
    "10, false, l, false",
    "10, true, k0, true",
    "10, true, k9, true",
    "10, true, l, false",
    "0, false, k0, true",
    "0, false, k9, true",
    "0, false, l, false",
    "0, true, k0, true"
  })
  void getRange_limitNotReached_conflictsOnWholeRange(
      int limit, boolean reverse, String written, boolean conflicts) {
    seed("k1", "k2", "k3", "k4", "k5");
    List<Integer> sizes = new CopyOnWriteArrayList<>();
    int attempts =
        race(
            tx -> sizes.add(tx.getRange(key("k"), key("l"), limit, reverse).size()),
            other -> other.set(keyAt(written), bytes("new")));
    assertThat(sizes.get(0)).isEqualTo(5);
    assertThat(attempts).isEqualTo(conflicts ? 2 : 1);
  }

  @Test
  void getRange_emptyRange_insertInsideConflicts() {
    seed("a", "z");
    List<List<String>> seen = new CopyOnWriteArrayList<>();
    int attempts =
        race(
            tx -> seen.add(names(tx.getRange(key("m"), key("n")))),
            other -> other.set(key("m5"), bytes("new")));
    assertThat(attempts).isEqualTo(2);
    assertThat(seen).containsExactly(List.of(), List.of("m5"));
  }

  @Test
  void getRange_emptyOrInvertedBounds_neverConflicts() {
    int attempts =
        race(
            tx -> {
              assertThat(tx.getRange(key("m"), key("m"))).isEmpty();
              assertThat(tx.getRange(key("n"), key("m"))).isEmpty();
              assertThat(tx.getRange(key("n"), key("m"), 1, true)).isEmpty();
            },
            other -> {
              other.set(key("m"), bytes("new"));
              other.set(key("m5"), bytes("new"));
            });
    assertThat(attempts).isEqualTo(1);
  }

  @Test
  void getRange_racedByInsertIntoTheRange_isRetriedAndRetrySeesTheInsert() {
    seed("k1", "k2", "k3");
    AtomicInteger attempts = new AtomicInteger();
    List<String> result =
        backend.run(
            tx -> {
              int attempt = attempts.incrementAndGet();
              List<String> rows = names(tx.getRange(key("k"), key("l")));
              if (attempt == 1) {
                put("k25", "inserted");
              }
              tx.set(key("count"), bytes(Integer.toString(rows.size())));
              return rows;
            });
    assertThat(attempts).hasValue(2);
    assertThat(result).containsExactly("k1", "k2", "k25", "k3");
    assertThat(read("count")).isEqualTo("4");
  }

  @Test
  void getRange_concurrentTransfers_alwaysSeesAConsistentSnapshot() throws Exception {
    int accounts = 10;
    long total = accounts * 100L;
    backend.run(
        tx -> {
          for (int i = 0; i < accounts; i++) {
            tx.set(key("acct" + i), le64(100));
          }
          return null;
        });
    AtomicBoolean stop = new AtomicBoolean();
    AtomicInteger transfers = new AtomicInteger();
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try {
      List<Future<?>> writers = new ArrayList<>();
      for (int w = 0; w < 2; w++) {
        Random random = new Random(42 + w);
        writers.add(
            pool.submit(
                () -> {
                  while (!stop.get()) {
                    int from = random.nextInt(accounts);
                    int to = (from + 1 + random.nextInt(accounts - 1)) % accounts;
                    backend.run(
                        tx -> {
                          long a = le64(tx.get(key("acct" + from)));
                          long b = le64(tx.get(key("acct" + to)));
                          tx.set(key("acct" + from), le64(a - 7));
                          tx.set(key("acct" + to), le64(b + 7));
                          return null;
                        });
                    transfers.incrementAndGet();
                  }
                  return null;
                }));
      }
      int reads = 0;
      while (reads < 200 || transfers.get() < 200) {
        boolean snapshot = reads % 2 == 0;
        List<KeyValue> rows =
            backend.run(
                tx ->
                    (snapshot ? tx.snapshot() : tx)
                        .getRange(key("acct"), ByteKeys.strinc(key("acct"))));
        assertThat(rows).hasSize(accounts);
        assertThat(rows.stream().mapToLong(kv -> le64(kv.value())).sum())
            .as("sum seen by read %s", reads)
            .isEqualTo(total);
        reads++;
      }
      stop.set(true);
      for (Future<?> w : writers) {
        w.get(WAIT_THREADS.toMillis(), MILLISECONDS);
      }
    } finally {
      stop.set(true);
      pool.shutdownNow();
    }
  }

  @Test
  void getRange_afterOwnClearRange_addsNoConflictForTheClearedPart() {
    seed("k1", "k2");
    int attempts =
        race(
            tx -> {
              tx.clearRange(key("k"), key("l"));
              assertThat(tx.getRange(key("k"), key("l"))).isEmpty();
            },
            other -> other.set(key("k15"), bytes("new")));
    assertThat(attempts).isEqualTo(1);
    assertThat(keysIn("k", "l")).isEmpty();
  }

  @ParameterizedTest(name = "write {0} -> conflict {1}")
  @CsvSource({"k2, false", "k1, true", "k3, true"})
  void getRange_afterOwnSet_conflictsOnlyOnKeysNotWritten(String written, boolean conflicts) {
    seed("k1", "k3");
    int attempts =
        race(
            tx -> {
              tx.set(key("k2"), bytes("mine"));
              assertThat(names(tx.getRange(key("k"), key("l")))).containsExactly("k1", "k2", "k3");
            },
            other -> other.set(key(written), bytes("new")));
    assertThat(attempts).isEqualTo(conflicts ? 2 : 1);
  }

  @Test
  void getRange_overOwnPendingAdd_stillConflictsOnThatKey() {
    seed("k1", "k3");
    put("k2", le64(1));
    int attempts =
        race(
            tx -> {
              tx.add(key("k2"), 1);
              assertThat(tx.getRange(key("k"), key("l"))).hasSize(3);
            },
            other -> other.set(key("k2"), le64(100)));
    assertThat(attempts)
        .as("a pending atomic op depends on the stored value, so its key stays in the read set")
        .isEqualTo(2);
    assertThat(readLong("k2")).isEqualTo(101);
  }

  @Test
  void set_thenGet_addsNoConflict() {
    int attempts =
        race(
            tx -> {
              tx.set(key("k"), bytes("mine"));
              assertThat(str(tx.get(key("k")))).isEqualTo("mine");
            },
            other -> other.set(key("k"), bytes("theirs")));
    assertThat(attempts).isEqualTo(1);
    assertThat(read("k")).isEqualTo("mine");
  }

  @Test
  void get_thenSet_conflicts() {
    int attempts =
        race(
            tx -> {
              tx.get(key("k"));
              tx.set(key("k"), bytes("mine"));
            },
            other -> other.set(key("k"), bytes("theirs")));
    assertThat(attempts).isEqualTo(2);
    assertThat(read("k")).isEqualTo("mine");
  }

  @Test
  void addReadConflictKey_afterOwnSet_addsNothing() {
    int attempts =
        race(
            tx -> {
              tx.set(key("k"), bytes("mine"));
              tx.addReadConflictKey(key("k"));
            },
            other -> other.set(key("k"), bytes("theirs")));
    assertThat(attempts).isEqualTo(1);
  }

  @Test
  void addReadConflictKey_beforeSet_conflicts() {
    int attempts =
        race(
            tx -> {
              tx.addReadConflictKey(key("k"));
              tx.set(key("k"), bytes("mine"));
            },
            other -> other.set(key("k"), bytes("theirs")));
    assertThat(attempts).isEqualTo(2);
  }

  @ParameterizedTest(name = "write {0} -> conflict {1}")
  @CsvSource({"a, true", "b, true", "b+, true", "c, false", "0, false"})
  void addReadConflictRange_conflictsOnHalfOpenRange(String written, boolean conflicts) {
    int attempts =
        race(
            tx -> tx.addReadConflictRange(key("a"), key("c")),
            other -> other.set(keyAt(written), bytes("new")));
    assertThat(attempts).isEqualTo(conflicts ? 2 : 1);
  }

  @Test
  void addReadConflictRange_emptyRange_isIgnored() {
    int attempts =
        race(
            tx -> tx.addReadConflictRange(key("a"), key("a")),
            other -> other.set(key("a"), bytes("new")));
    assertThat(attempts).isEqualTo(1);
  }

  @Test
  void addConflictRanges_beginAfterEnd_raise2005() {
    backend.run(
        tx -> {
          assertCode(
              () -> tx.addReadConflictRange(key("b"), key("a")), BackendException.INVERTED_RANGE);
          assertCode(
              () -> tx.addWriteConflictRange(key("b"), key("a")), BackendException.INVERTED_RANGE);
          return null;
        });
  }

  @Test
  void addWriteConflictKey_alone_isNotReadOnlyAndFailsConcurrentReader() {
    put("k", "v");
    int attempts = race(tx -> tx.get(key("k")), other -> other.addWriteConflictKey(key("k")));
    assertThat(attempts).isEqualTo(2);
    assertThat(read("k")).as("a write-conflict range writes nothing").isEqualTo("v");
  }

  @Test
  void addWriteConflictRange_failsConcurrentReaderInsideIt() {
    int attempts =
        race(tx -> tx.get(key("b")), other -> other.addWriteConflictRange(key("a"), key("c")));
    assertThat(attempts).isEqualTo(2);
  }

  // ---------------------------------------------------------------------------------------------
  // Read-your-writes (§3, §9.17)

  @Test
  void get_seesOwnPendingSetsClearsAndRangeClears() {
    seed("a", "b", "c", "d");
    backend.run(
        tx -> {
          tx.set(key("a"), bytes("A2"));
          tx.set(key("new"), bytes("N"));
          tx.clear(key("b"));
          tx.clearRange(key("c"), key("e"));
          tx.set(key("d"), bytes("D2"));
          assertThat(str(tx.get(key("a")))).isEqualTo("A2");
          assertThat(str(tx.get(key("new")))).isEqualTo("N");
          assertThat(tx.get(key("b"))).isNull();
          assertThat(tx.get(key("c"))).isNull();
          assertThat(str(tx.get(key("d")))).isEqualTo("D2");
          assertThat(str(tx.snapshot().get(key("a")))).isEqualTo("A2");
          assertThat(tx.snapshot().get(key("c"))).isNull();
          return null;
        });
    assertThat(read("a")).isEqualTo("A2");
    assertThat(read("b")).isNull();
    assertThat(read("c")).isNull();
    assertThat(read("d")).isEqualTo("D2");
  }

  @Test
  void getRange_mergesPendingWritesInKeyOrder_limitAndReverseApplyAfterMerging() {
    seed("a", "b", "c", "d", "e");
    List<KeyValue> expected =
        List.of(kv("a", "A2"), kv("b", "b"), kv("bb", "new"), kv("d5", "D5"), kv("e", "e"));
    backend.run(
        tx -> {
          tx.set(key("bb"), bytes("new"));
          tx.set(key("a"), bytes("A2"));
          tx.clear(key("c"));
          tx.clearRange(key("d"), key("e"));
          tx.set(key("d5"), bytes("D5"));
          for (ReadTransaction view : List.of(tx, tx.snapshot())) {
            assertThat(view.getRange(key("a"), key("z"))).containsExactlyElementsOf(expected);
            assertThat(view.getRange(key("a"), key("z"), 3, false))
                .containsExactlyElementsOf(expected.subList(0, 3));
            assertThat(view.getRange(key("a"), key("z"), 2, true))
                .containsExactly(expected.get(4), expected.get(3));
            assertThat(view.getRange(key("a"), key("z"), ReadTransaction.UNLIMITED, true))
                .containsExactlyElementsOf(reversed(expected));
            assertThat(view.getRange(key("b"), key("e"), 2, true))
                .containsExactly(expected.get(3), expected.get(2));
          }
          return null;
        });
    assertThat(rows(key("a"), key("z"))).containsExactlyElementsOf(expected);
  }

  @Test
  void getRange_seesOwnAtomicAddMergedWithStoredValue() {
    put("n", le64(40));
    backend.run(
        tx -> {
          tx.add(key("n"), 2);
          tx.add(key("m"), 7);
          List<KeyValue> rows = tx.getRange(key("m"), key("o"));
          assertThat(rows).containsExactly(kv(key("m"), le64(7)), kv(key("n"), le64(42)));
          return null;
        });
  }

  // ---------------------------------------------------------------------------------------------
  // Atomic add (§4 ADD, §9.18)

  @ParameterizedTest(name = "{0} + {1} = {2}")
  @CsvSource({
    "absent, 5, 0500000000000000",
    "empty, 5, 0500000000000000",
    "0500, 1, 0600000000000000",
    "01000000000000000909, 1, 0200000000000000",
    "ffffffffffffff7f, 1, 0000000000000080",
    "ffffffffffffffff, 1, 0000000000000000",
    "0a00000000000000, -3, 0700000000000000",
    "0000000000000000, -1, ffffffffffffffff"
  })
  void add_appliesLittleEndianWithLengthNormalizationAndWrapping(
      String existing, long delta, String expected) {
    if (!existing.equals("absent")) {
      put("k", existing.equals("empty") ? new byte[0] : HEX.parseHex(existing));
    }
    backend.run(
        tx -> {
          tx.add(key("k"), delta);
          return null;
        });
    assertThat(HEX.formatHex(backend.run(tx -> tx.get(key("k"))))).isEqualTo(expected);
  }

  @Test
  void add_severalInOneTransaction_applyInOrder() {
    backend.run(
        tx -> {
          tx.add(key("k"), 5);
          tx.add(key("k"), -2);
          tx.add(key("k"), 10);
          return null;
        });
    assertThat(readLong("k")).isEqualTo(13);
  }

  // ---------------------------------------------------------------------------------------------
  // Versionstamps (§4, §9.23–§9.27)

  @Test
  void setVersionstampedKey_storesPrefixAndTupleWithTheCompleteStamp() {
    byte[] value = bytes("payload");
    CompletableFuture<byte[]> stamp =
        backend.run(
            tx -> {
              tx.setVersionstampedKey(prefix, Tuple.from("log", Versionstamp.incomplete(7)), value);
              tx.setVersionstampedKey(
                  prefix, Tuple.from("log", Versionstamp.incomplete(3), "tail"), bytes("second"));
              return tx.getVersionstamp();
            });
    byte[] trVersion = stamp.join();
    assertThat(trVersion).hasSize(10);
    byte[] first =
        ByteKeys.concat(prefix, Tuple.from("log", Versionstamp.complete(trVersion, 7)).pack());
    byte[] second =
        ByteKeys.concat(
            prefix, Tuple.from("log", Versionstamp.complete(trVersion, 3), "tail").pack());
    byte[] logPrefix = ByteKeys.concat(prefix, Tuple.from("log").pack());
    List<KeyValue> rows = backend.run(tx -> tx.getRange(logPrefix, ByteKeys.strinc(logPrefix)));
    assertThat(rows).containsExactly(kv(second, bytes("second")), kv(first, value));
    Tuple decoded = Tuple.fromBytes(first, prefix.length, first.length - prefix.length);
    assertThat(decoded.getVersionstamp(1).getTransactionVersion()).isEqualTo(trVersion);
    assertThat(decoded.getVersionstamp(1).getUserVersion()).isEqualTo(7);
  }

  @Test
  void setVersionstampedValue_storesPrefixAndStampSharedByTheTransaction() {
    CompletableFuture<byte[]> stamp =
        backend.run(
            tx -> {
              tx.setVersionstampedValue(key("v1"), bytes("pre:"));
              tx.setVersionstampedValue(key("v2"), new byte[0]);
              tx.setVersionstampedKey(
                  prefix, Tuple.from("log", Versionstamp.incomplete(0)), bytes("x"));
              return tx.getVersionstamp();
            });
    byte[] s = stamp.join();
    assertThat(value(key("v1"))).isEqualTo(ByteKeys.concat(bytes("pre:"), s));
    assertThat(value(key("v2"))).isEqualTo(s);
    byte[] logKey = ByteKeys.concat(prefix, Tuple.from("log", Versionstamp.complete(s, 0)).pack());
    assertThat(read(logKey)).isEqualTo("x");
  }

  @Test
  void versionstamps_strictlyIncreaseAcrossCommits() {
    byte @Nullable [] previous = null;
    for (int i = 0; i < 5; i++) {
      int n = i;
      byte[] s =
          backend
              .run(
                  tx -> {
                    tx.set(key("k" + n), bytes("v"));
                    return tx.getVersionstamp();
                  })
              .join();
      if (previous != null) {
        assertThat(compareStamps(s, previous)).isPositive();
      }
      previous = s;
    }
  }

  @Test
  void getVersionstamp_completesOnlyAfterCommit() {
    CompletableFuture<byte[]> stamp =
        backend.run(
            tx -> {
              CompletableFuture<byte[]> f = tx.getVersionstamp();
              tx.set(key("k"), bytes("v"));
              assertThat(f).as("stamp while the body runs").isNotDone();
              return f;
            });
    assertThat(stamp).as("stamp after run returned").isDone();
    assertThat(stamp.join()).hasSize(10);
  }

  @Test
  void versionstampedValueAndKey_readInSameTransaction_raise1036_andTheCommitFails() {
    assertCommitFailsWith1036AfterStamping(
        tx -> {
          assertCode(() -> tx.get(key("v")), BackendException.ACCESSED_UNREADABLE);
          assertCode(() -> tx.snapshot().get(key("v")), BackendException.ACCESSED_UNREADABLE);
          assertCode(() -> tx.getRange(key("u"), key("w")), BackendException.ACCESSED_UNREADABLE);
          assertCode(
              () -> tx.getRange(logPrefix(), ByteKeys.strinc(logPrefix())),
              BackendException.ACCESSED_UNREADABLE);
          assertThat(str(tx.get(key("plain")))).isEqualTo("p");
        });
  }

  /** The reads of an unreadable key: each alone makes the commit fail with 1036. */
  enum UnreadableRead {
    GET,
    SNAPSHOT_GET,
    RANGE,
    SNAPSHOT_RANGE,
    REVERSE_RANGE,
    STAMPED_KEY_RANGE,
    SNAPSHOT_STAMPED_KEY_RANGE
  }

  @ParameterizedTest
  @EnumSource(UnreadableRead.class)
  void readOfUnreadableKey_caughtByTheBody_stillFailsTheCommitWith1036(UnreadableRead read) {
    byte[] log = logPrefix();
    byte[] logEnd = ByteKeys.strinc(log);
    assertCommitFailsWith1036AfterStamping(
        tx -> {
          ThrowingCallable call =
              switch (read) {
                case GET -> () -> tx.get(key("v"));
                case SNAPSHOT_GET -> () -> tx.snapshot().get(key("v"));
                case RANGE -> () -> tx.getRange(key("u"), key("w"));
                case SNAPSHOT_RANGE -> () -> tx.snapshot().getRange(key("u"), key("w"), 0, false);
                case REVERSE_RANGE -> () -> tx.getRange(key("a"), key("w"), 0, true);
                case STAMPED_KEY_RANGE -> () -> tx.getRange(log, logEnd);
                case SNAPSHOT_STAMPED_KEY_RANGE ->
                    () -> tx.snapshot().getRange(log, logEnd, 0, false);
              };
          assertCode(call, BackendException.ACCESSED_UNREADABLE);
        });
  }

  /**
   * Runs a transaction that sets {@code plain}, stamps the value of {@code v} (stored as "old"
   * before) and a key under {@code ("log")}, then runs {@code reads}; checks that the commit failed
   * with 1036 (FoundationDB: a transaction that read an unreadable key cannot commit), without a
   * retry, and that nothing was written.
   */
  private void assertCommitFailsWith1036AfterStamping(Consumer<Transaction> reads) {
    put("v", "old");
    AtomicInteger attempts = new AtomicInteger();
    BackendException e =
        backendError(
            () ->
                backend.run(
                    tx -> {
                      attempts.incrementAndGet();
                      tx.set(key("plain"), bytes("p"));
                      tx.setVersionstampedValue(key("v"), bytes("pre"));
                      tx.setVersionstampedKey(
                          prefix, Tuple.from("log", Versionstamp.incomplete(0)), bytes("x"));
                      reads.accept(tx);
                      return null;
                    }));
    assertThat(e.code()).isEqualTo(BackendException.ACCESSED_UNREADABLE);
    assertThat(attempts).hasValue(1);
    assertThat(read("v")).isEqualTo("old");
    assertThat(read("plain")).isNull();
  }

  private byte[] logPrefix() {
    return ByteKeys.concat(prefix, Tuple.from("log").pack());
  }

  @Test
  void readsThatStopBeforeTheUnreadableKey_letTheTransactionCommit() {
    put("a", "a");
    CompletableFuture<byte[]> stamp =
        backend.run(
            tx -> {
              tx.setVersionstampedValue(key("v"), bytes("pre"));
              assertThat(names(tx.getRange(key("a"), key("w"), 1, false))).containsExactly("a");
              assertThat(tx.getRange(key("v\0"), key("z"), 1, true)).isEmpty();
              return tx.getVersionstamp();
            });
    assertThat(value(key("v"))).isEqualTo(ByteKeys.concat(bytes("pre"), stamp.join()));
  }

  @Test
  void versionstampedValue_thenSetOrAdd_staysUnreadable() {
    for (Consumer<Transaction> write :
        List.<Consumer<Transaction>>of(
            tx -> tx.set(key("v"), bytes("new")), tx -> tx.add(key("v"), 1))) {
      assertThat(
              backendError(
                      () ->
                          backend.run(
                              tx -> {
                                tx.setVersionstampedValue(key("v"), bytes("pre"));
                                write.accept(tx);
                                return tx.get(key("v"));
                              }))
                  .code())
          .isEqualTo(BackendException.ACCESSED_UNREADABLE);
    }
    assertThat(read("v")).isNull();
  }

  @Test
  void versionstampedValue_thenClearOrClearRange_isReadableAgain_andCommits() {
    put("w", "kept");
    String seen =
        backend.run(
            tx -> {
              tx.setVersionstampedValue(key("v"), bytes("pre"));
              tx.clear(key("v"));
              assertThat(tx.get(key("v"))).isNull();
              tx.set(key("v"), bytes("after clear"));
              return str(tx.get(key("v")));
            });
    assertThat(seen).isEqualTo("after clear");
    assertThat(read("v")).isEqualTo("after clear");

    List<String> names =
        backend.run(
            tx -> {
              tx.setVersionstampedValue(key("v"), bytes("pre"));
              tx.clearRange(key("u"), key("w"));
              return names(tx.getRange(key("a"), key("z")));
            });
    assertThat(names).containsExactly("w");
    assertThat(read("v")).isNull();
  }

  @Test
  void watch_ofUnreadableKey_failsWith1036_andTheCommitStands() {
    List<CompletableFuture<Void>> watches = new CopyOnWriteArrayList<>();
    CompletableFuture<byte[]> stamp =
        backend.run(
            tx -> {
              tx.setVersionstampedValue(key("v"), bytes("pre"));
              watches.add(tx.watch(key("v")));
              return tx.getVersionstamp();
            });
    assertThat(failureOf(watches.get(0)).code()).isEqualTo(BackendException.ACCESSED_UNREADABLE);
    assertThat(value(key("v"))).isEqualTo(ByteKeys.concat(bytes("pre"), stamp.join()));
  }

  @Test
  void setVersionstampedKey_withoutExactlyOneIncompleteStamp_throwsIllegalArgument() {
    backend.run(
        tx -> {
          assertThatThrownBy(
                  () -> tx.setVersionstampedKey(prefix, Tuple.from("log", 1L), bytes("x")))
              .isInstanceOf(IllegalArgumentException.class);
          assertThatThrownBy(
                  () ->
                      tx.setVersionstampedKey(
                          prefix,
                          Tuple.from("log", Versionstamp.incomplete(1), Versionstamp.incomplete(2)),
                          bytes("x")))
              .isInstanceOf(IllegalArgumentException.class);
          return null;
        });
    byte[] logPrefix = ByteKeys.concat(prefix, Tuple.from("log").pack());
    assertThat(rows(logPrefix, ByteKeys.strinc(logPrefix))).isEmpty();
  }

  @Test
  void getVersionstamp_ofAttemptThatConflicted_fails() {
    List<CompletableFuture<byte[]>> stamps = new CopyOnWriteArrayList<>();
    int attempts =
        race(
            tx -> {
              tx.get(key("k"));
              stamps.add(tx.getVersionstamp());
            },
            other -> other.set(key("k"), bytes("new")));
    assertThat(attempts).isEqualTo(2);
    assertThat(failureOf(stamps.get(0)).code())
        .isIn(BackendException.NOT_COMMITTED, BackendException.TRANSACTION_INVALID_VERSION);
    assertThat(stamps.get(1).join()).hasSize(10);
  }

  @Test
  void getVersionstamp_ofTransactionThatNeverCommitted_fails() {
    IllegalStateException boom = new IllegalStateException("body gives up");
    AtomicReference<CompletableFuture<byte[]>> stamp = new AtomicReference<>();
    assertThatThrownBy(
            () ->
                backend.run(
                    tx -> {
                      tx.set(key("k"), bytes("v"));
                      stamp.set(tx.getVersionstamp());
                      throw boom;
                    }))
        .isSameAs(boom);
    assertThat(failureOf(stamp.get())).isNotNull();
  }

  @Test
  void versionstampOrder_equalsCommitOrderAcrossThreads() throws Exception {
    int threads = 4;
    int perThread = 50;
    record Commit(long seq, byte[] stamp, long begin, long end) {}
    record Result(long seq, CompletableFuture<byte[]> stamp) {}
    AtomicLong tickets = new AtomicLong();
    List<Commit> commits = Collections.synchronizedList(new ArrayList<>());
    inThreads(
        threads,
        id -> {
          for (int i = 0; i < perThread; i++) {
            long begin = tickets.incrementAndGet();
            Result r =
                backend.run(
                    tx -> {
                      byte[] v = tx.get(key("seq"));
                      long seq = v == null ? 0 : le64(v);
                      tx.set(key("seq"), le64(seq + 1));
                      tx.setVersionstampedKey(
                          prefix, Tuple.from("order", Versionstamp.incomplete(0)), le64(seq));
                      return new Result(seq, tx.getVersionstamp());
                    });
            assertThat(r.stamp()).isDone();
            long end = tickets.incrementAndGet();
            commits.add(new Commit(r.seq(), r.stamp().join(), begin, end));
          }
        });
    int n = threads * perThread;
    List<Commit> bySeq = new ArrayList<>(commits);
    bySeq.sort((a, b) -> Long.compare(a.seq(), b.seq()));
    assertThat(bySeq).extracting(Commit::seq).containsExactlyElementsOf(range(n));
    for (int i = 1; i < n; i++) {
      assertThat(compareStamps(bySeq.get(i).stamp(), bySeq.get(i - 1).stamp()))
          .as("stamp of commit %s after stamp of commit %s", i, i - 1)
          .isPositive();
    }
    for (Commit a : commits) {
      for (Commit b : commits) {
        if (a.end() < b.begin()) {
          assertThat(compareStamps(a.stamp(), b.stamp()))
              .as("a commit that returned before another began has the smaller stamp")
              .isNegative();
        }
      }
    }
    byte[] orderPrefix = ByteKeys.concat(prefix, Tuple.from("order").pack());
    List<KeyValue> rows = backend.run(tx -> tx.getRange(orderPrefix, ByteKeys.strinc(orderPrefix)));
    assertThat(rows).extracting(kv -> le64(kv.value())).containsExactlyElementsOf(range(n));
    for (KeyValue row : rows) {
      Tuple t = Tuple.fromBytes(row.key(), prefix.length, row.key().length - prefix.length);
      assertThat(t.getVersionstamp(1).getTransactionVersion())
          .isEqualTo(bySeq.get((int) le64(row.value())).stamp());
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Watches (§5, §9.28–§9.32)

  @Test
  void watch_firesAfterAnotherTransactionChangesTheValueNotAfterIdenticalWrite() {
    put("k", "a");
    CompletableFuture<Void> watch = backend.run(tx -> tx.watch(key("k")));
    assertThat(watch).isNotDone();
    put("k", "a");
    put("other", "x");
    assertThat(watch).as("after writing the identical value").isNotDone();
    put("k", "b");
    assertThat(watch).succeedsWithin(WAIT);
  }

  @Test
  void watch_ofAbsentKey_firesWhenTheKeyIsSet() {
    CompletableFuture<Void> watch = backend.run(tx -> tx.watch(key("k")));
    assertThat(watch).isNotDone();
    put("k", new byte[0]);
    assertThat(watch).succeedsWithin(WAIT);
  }

  @Test
  void watch_firesWhenTheKeyIsCleared() {
    put("k", "a");
    CompletableFuture<Void> watch = backend.run(tx -> tx.watch(key("k")));
    backend.run(
        tx -> {
          tx.clear(key("absent"));
          return null;
        });
    assertThat(watch).isNotDone();
    backend.run(
        tx -> {
          tx.clear(key("k"));
          return null;
        });
    assertThat(watch).succeedsWithin(WAIT);
  }

  @Test
  void watch_firesOnAtomicAddByAnotherTransaction() {
    put("k", le64(1));
    CompletableFuture<Void> watch = backend.run(tx -> tx.watch(key("k")));
    assertThat(watch).isNotDone();
    backend.run(
        tx -> {
          tx.add(key("k"), 1);
          return null;
        });
    assertThat(watch).succeedsWithin(WAIT);
  }

  @Test
  void watch_valueChangedBeforeItsTransactionCommitted_firesOnceArmed() {
    put("k", "a");
    AtomicInteger attempts = new AtomicInteger();
    CompletableFuture<Void> watch =
        backend.run(
            tx -> {
              int attempt = attempts.incrementAndGet();
              CompletableFuture<Void> w = tx.watch(key("k"));
              if (attempt == 1) {
                put("k", "b");
              }
              return w;
            });
    assertThat(attempts).as("a read-only transaction never conflicts").hasValue(1);
    assertThat(watch).succeedsWithin(WAIT);
  }

  @Test
  void watch_ownChangeInTheSameTransaction_fires() {
    put("k", "a");
    put("n", le64(1));
    List<CompletableFuture<Void>> watches =
        backend.run(
            tx -> {
              CompletableFuture<Void> byValue = tx.watch(key("k"));
              CompletableFuture<Void> byAdd = tx.watch(key("n"));
              tx.set(key("k"), bytes("b"));
              tx.add(key("n"), 1);
              return List.of(byValue, byAdd);
            });
    assertThat(watches.get(0)).succeedsWithin(WAIT);
    assertThat(watches.get(1)).succeedsWithin(WAIT);
  }

  @Test
  void watch_ownIdenticalWrite_doesNotFireUntilALaterChange() {
    put("k", "a");
    CompletableFuture<Void> watch =
        backend.run(
            tx -> {
              CompletableFuture<Void> w = tx.watch(key("k"));
              tx.set(key("k"), bytes("a"));
              return w;
            });
    assertThat(watch).isNotDone();
    put("k", "c");
    assertThat(watch).succeedsWithin(WAIT);
  }

  @Test
  void watch_keyChangedAfterReadVersion_makesItsWritingTransactionConflict() {
    put("k", "a");
    List<CompletableFuture<Void>> watches = new CopyOnWriteArrayList<>();
    int attempts =
        race(tx -> watches.add(tx.watch(key("k"))), other -> other.set(key("k"), bytes("b")));
    assertThat(attempts).isEqualTo(2);
    assertThat(watches).hasSize(2);
    watches.get(1).cancel(true);
  }

  @Test
  void watch_ofAttemptWhoseCommitConflicted_failsWith1020AndFinalAttemptsWatchWorks() {
    put("k", "a");
    List<CompletableFuture<Void>> watches = new CopyOnWriteArrayList<>();
    int attempts =
        race(tx -> watches.add(tx.watch(key("k"))), other -> other.set(key("k"), bytes("b")));
    assertThat(attempts).isEqualTo(2);
    assertThat(failureOf(watches.get(0)).code()).isEqualTo(BackendException.NOT_COMMITTED);
    assertThat(watches.get(1)).isNotDone();
    put("k", "c");
    assertThat(watches.get(1)).succeedsWithin(WAIT);
  }

  @Test
  void watch_ofTransactionThatNeverCommitted_failsWith1025() {
    IllegalStateException boom = new IllegalStateException("body gives up");
    AtomicReference<CompletableFuture<Void>> watch = new AtomicReference<>();
    assertThatThrownBy(
            () ->
                backend.run(
                    tx -> {
                      watch.set(tx.watch(key("k")));
                      tx.set(key("x"), bytes("x"));
                      throw boom;
                    }))
        .isSameAs(boom);
    assertThat(failureOf(watch.get()).code()).isEqualTo(BackendException.TRANSACTION_CANCELLED);
  }

  @Test
  void watch_limitReached_excessWatchFails1032AndCancellingOrFiringFreesASlot() {
    int max = 10;
    Backend limited = newBackendWithMaxWatches(max);
    String id = UUID.randomUUID().toString();
    List<CompletableFuture<Void>> all = new ArrayList<>();
    try {
      byte[] p = limited.directory("conformance", id).getKey();
      Function<Integer, byte[]> k = i -> ByteKeys.concat(p, bytes("w" + i));
      List<CompletableFuture<Void>> first =
          limited.run(
              tx -> {
                List<CompletableFuture<Void>> ws = new ArrayList<>();
                for (int i = 0; i < max; i++) {
                  ws.add(tx.watch(k.apply(i)));
                }
                return ws;
              });
      all.addAll(first);
      assertThat(first).allSatisfy(w -> assertThat(w).isNotDone());

      CompletableFuture<Void> excess = limited.run(tx -> tx.watch(k.apply(100)));
      all.add(excess);
      assertThat(failureOf(excess).code()).isEqualTo(BackendException.TOO_MANY_WATCHES);

      assertThat(first.get(0).cancel(true)).isTrue();
      CompletableFuture<Void> afterCancel = limited.run(tx -> tx.watch(k.apply(101)));
      all.add(afterCancel);
      setIn(limited, k.apply(101), "changed");
      assertThat(afterCancel).as("a cancelled watch frees its slot").succeedsWithin(WAIT);

      CompletableFuture<Void> afterFire = limited.run(tx -> tx.watch(k.apply(102)));
      all.add(afterFire);
      CompletableFuture<Void> overLimitAgain = limited.run(tx -> tx.watch(k.apply(103)));
      all.add(overLimitAgain);
      assertThat(failureOf(overLimitAgain).code())
          .as("the limit still holds after slots were freed")
          .isEqualTo(BackendException.TOO_MANY_WATCHES);
      setIn(limited, k.apply(102), "changed");
      assertThat(afterFire).as("a fired watch frees its slot").succeedsWithin(WAIT);
      setIn(limited, k.apply(1), "changed");
      assertThat(first.get(1)).succeedsWithin(WAIT);
    } finally {
      all.forEach(w -> w.cancel(true));
      try {
        limited.removeDirectory("conformance", id);
      } finally {
        limited.close();
      }
    }
  }

  @Test
  void close_failsPendingWatchesWith1025AndRejectsNewTransactions() {
    Backend other = newBackend();
    CompletableFuture<Void> watch;
    try {
      byte[] p = other.directory("conformance", tenantId).getKey();
      watch = other.run(tx -> tx.watch(ByteKeys.concat(p, bytes("k"))));
      assertThat(watch).isNotDone();
    } finally {
      other.close();
    }
    assertThat(failureOf(watch).code()).isEqualTo(BackendException.TRANSACTION_CANCELLED);
    assertThatThrownBy(() -> other.run(tx -> tx.get(key("k"))))
        .isInstanceOf(IllegalStateException.class);
    assertThat(
            Futures.unwrap(
                catchThrowable(
                    () ->
                        other
                            .runAsync(tx -> tx.getAsync(key("k")))
                            .get(WAIT.toMillis(), MILLISECONDS))))
        .isInstanceOf(IllegalStateException.class);
  }

  // ---------------------------------------------------------------------------------------------
  // Limits and system keys (§6, §9.34–§9.36)

  @Test
  void set_keyOfTenThousandBytes_isAccepted() {
    byte[] k = keyOfLength(10_000);
    setIn(backend, k, "v");
    assertThat(read(k)).isEqualTo("v");
  }

  @Test
  void set_keyOverTenThousandBytes_raises2102FromTheCallAndIsNotRetried() {
    assertWriteRaisedByCall(
        tx -> tx.set(keyOfLength(10_001), bytes("v")), BackendException.KEY_TOO_LARGE);
  }

  @Test
  void add_keyOverTenThousandBytes_raises2102FromTheCall() {
    assertWriteRaisedByCall(tx -> tx.add(keyOfLength(10_001), 1), BackendException.KEY_TOO_LARGE);
  }

  @Test
  void setVersionstampedValue_keyOverTenThousandBytes_raises2102FromTheCall() {
    assertWriteRaisedByCall(
        tx -> tx.setVersionstampedValue(keyOfLength(10_001), bytes("p")),
        BackendException.KEY_TOO_LARGE);
  }

  @Test
  void set_valueOfHundredThousandBytes_isAccepted() {
    put("k", new byte[100_000]);
    assertThat(value(key("k"))).hasSize(100_000);
  }

  @Test
  void set_valueOverHundredThousandBytes_raises2103FromTheCallAndIsNotRetried() {
    assertWriteRaisedByCall(
        tx -> tx.set(key("k"), new byte[100_001]), BackendException.VALUE_TOO_LARGE);
  }

  @Test
  void get_keyFarOverTheLimit_returnsNull() {
    byte[] k = keyOfLength(20_000);
    assertThat(value(k)).isNull();
  }

  @Test
  void commit_overTenMillionBytes_raises2101AndIsNotRetried() {
    byte[] value = new byte[100_000];
    AtomicInteger attempts = new AtomicInteger();
    assertCode(
        () ->
            backend.run(
                tx -> {
                  attempts.incrementAndGet();
                  for (int i = 0; i < 110; i++) {
                    tx.set(key("big" + i), value);
                  }
                  assertThat(tx.getApproximateSize()).isGreaterThan(10_000_000L);
                  return null;
                }),
        BackendException.TRANSACTION_TOO_LARGE);
    assertThat(attempts).hasValue(1);
    assertThat(value(key("big0"))).isNull();
  }

  @Test
  void commit_justUnderTenMillionBytes_succeedsAndApproximateSizeCountsTheWrites() {
    byte[] value = new byte[100_000];
    backend.run(
        tx -> {
          long empty = tx.getApproximateSize();
          tx.set(key("one"), value);
          assertThat(tx.getApproximateSize()).isGreaterThanOrEqualTo(empty + 100_000);
          for (int i = 0; i < 94; i++) {
            tx.set(key("big" + i), value);
          }
          assertThat(tx.getApproximateSize()).isGreaterThanOrEqualTo(9_500_000L);
          tx.clearRange(key("c"), key("d"));
          return null;
        });
    assertThat(value(key("big93"))).hasSize(100_000);
  }

  @Test
  void systemKeys_readOrWritten_raise2004() {
    byte[] system = {(byte) 0xff, 'x'};
    byte[] systemEnd = {(byte) 0xff, (byte) 0xff};
    backend.run(
        tx -> {
          assertCode(() -> tx.get(system), BackendException.KEY_OUTSIDE_LEGAL_RANGE);
          assertCode(() -> tx.snapshot().get(system), BackendException.KEY_OUTSIDE_LEGAL_RANGE);
          assertCode(
              () -> tx.getRange(key("a"), systemEnd, 1, false),
              BackendException.KEY_OUTSIDE_LEGAL_RANGE);
          assertThat(tx.getRange(key("a"), new byte[] {(byte) 0xff}, 1, false))
              .as("a range ending at \\xff is legal")
              .hasSizeLessThanOrEqualTo(1);
          return null;
        });
    AtomicInteger attempts = new AtomicInteger();
    assertCode(
        () ->
            backend.run(
                tx -> {
                  attempts.incrementAndGet();
                  tx.set(system, bytes("v"));
                  return null;
                }),
        BackendException.KEY_OUTSIDE_LEGAL_RANGE);
    assertThat(attempts).hasValue(1);
  }

  // ---------------------------------------------------------------------------------------------
  // The retry loop (§7, §9.37, §9.38)

  @Test
  void run_bodyThrowsRuntimeException_propagatesSameInstanceUncommittedNotRetried() {
    IllegalStateException boom = new IllegalStateException("boom");
    AtomicInteger attempts = new AtomicInteger();
    assertThatThrownBy(
            () ->
                backend.run(
                    tx -> {
                      attempts.incrementAndGet();
                      tx.set(key("k"), bytes("v"));
                      throw boom;
                    }))
        .isSameAs(boom);
    assertThat(attempts).hasValue(1);
    assertThat(read("k")).isNull();
  }

  @Test
  void run_nonRetryableBackendError_propagatesUnwrappedNotRetried() {
    AtomicInteger attempts = new AtomicInteger();
    AtomicReference<BackendException> raised = new AtomicReference<>();
    Throwable thrown =
        catchThrowable(
            () ->
                backend.run(
                    tx -> {
                      attempts.incrementAndGet();
                      try {
                        tx.clearRange(key("b"), key("a"));
                      } catch (BackendException e) {
                        raised.set(e);
                        throw e;
                      }
                      return null;
                    }));
    assertThat(thrown).isInstanceOf(BackendException.class);
    assertThat(((BackendException) thrown).code()).isEqualTo(BackendException.INVERTED_RANGE);
    assertThat(((BackendException) thrown).isRetryable()).isFalse();
    assertThat(attempts).hasValue(1);
  }

  @Test
  void runAsync_conflict_retriesBodyAndReturnsTheCommittedAttemptsResult() throws Exception {
    put("k", "old");
    AtomicInteger attempts = new AtomicInteger();
    CompletableFuture<String> result =
        backend.runAsync(
            tx -> {
              int attempt = attempts.incrementAndGet();
              String seen = str(tx.get(key("k")));
              if (attempt == 1) {
                put("k", "new");
              }
              tx.set(key("copy"), bytes(seen));
              return tx.getAsync(key("k")).thenApply(v -> seen + "/" + str(v));
            });
    assertThat(result.get(WAIT.toMillis(), MILLISECONDS)).isEqualTo("new/new");
    assertThat(attempts).hasValue(2);
    assertThat(read("copy")).isEqualTo("new");
  }

  @Test
  void runAsync_bodyFutureFails_resultFailsWithSameExceptionNotRetried() {
    IllegalStateException boom = new IllegalStateException("boom");
    AtomicInteger attempts = new AtomicInteger();
    CompletableFuture<Object> result =
        backend.runAsync(
            tx -> {
              attempts.incrementAndGet();
              tx.set(key("k"), bytes("v"));
              return CompletableFuture.failedFuture(boom);
            });
    assertThat(Futures.unwrap(catchThrowable(() -> result.get(WAIT.toMillis(), MILLISECONDS))))
        .isSameAs(boom);
    assertThat(attempts).hasValue(1);
    assertThat(read("k")).isNull();
  }

  @Test
  void runAsync_bodyThrows_resultFailsWithSameException() {
    IllegalStateException boom = new IllegalStateException("boom");
    CompletableFuture<Object> result =
        backend.runAsync(
            tx -> {
              throw boom;
            });
    assertThat(Futures.unwrap(catchThrowable(() -> result.get(WAIT.toMillis(), MILLISECONDS))))
        .isSameAs(boom);
  }

  @Test
  void run_injectedConflicts_reexecuteBodyAndApplyOnlyTheLastAttempt() {
    Faults faults = requireFaults();
    AtomicInteger attempts = new AtomicInteger();
    faults.failNextCommits(2);
    backend.run(
        tx -> {
          int attempt = attempts.incrementAndGet();
          tx.add(key("counter"), 1);
          tx.set(key("last"), bytes("attempt " + attempt));
          return null;
        });
    assertThat(attempts).hasValue(3);
    assertThat(readLong("counter")).isEqualTo(1);
    assertThat(read("last")).isEqualTo("attempt 3");
  }

  @Test
  void runIdAndAttempt_identifyTheRunAcrossItsRetries() throws Exception {
    Faults faults = requireFaults();
    List<java.util.UUID> ids = new java.util.concurrent.CopyOnWriteArrayList<>();
    List<Integer> numbers = new java.util.concurrent.CopyOnWriteArrayList<>();
    faults.failNextCommits(2);
    backend.run(
        tx -> {
          ids.add(tx.runId());
          numbers.add(tx.attempt());
          tx.set(key("k"), bytes("v"));
          return null;
        });
    assertThat(numbers).containsExactly(1, 2, 3);
    assertThat(ids).hasSize(3).containsOnly(ids.get(0));

    faults.failNextCommits(1);
    backend
        .runAsync(
            tx -> {
              ids.add(tx.runId());
              numbers.add(tx.attempt());
              tx.set(key("k"), bytes("w"));
              return CompletableFuture.completedFuture(null);
            })
        .get(WAIT.toMillis(), MILLISECONDS);
    assertThat(numbers).containsExactly(1, 2, 3, 1, 2);
    assertThat(ids.get(3)).isEqualTo(ids.get(4)).isNotEqualTo(ids.get(0));
    java.util.UUID later = backend.run(Transaction::runId);
    assertThat(later.getMostSignificantBits())
        .isGreaterThanOrEqualTo(
            RunIds.startingAt(System.currentTimeMillis() - 60_000).getMostSignificantBits());
  }

  @Test
  void retriedAfter_namesTheErrorThatEndedThePreviousAttempt() throws Exception {
    Faults faults = requireFaults();
    List<Integer> causes = new java.util.concurrent.CopyOnWriteArrayList<>();
    faults.failNextCommits(2);
    backend.run(
        tx -> {
          causes.add(tx.retriedAfter());
          tx.set(key("k"), bytes("v"));
          return null;
        });
    assertThat(causes).containsExactly(0, 1020, 1020);

    faults.failNextCommits(1);
    backend
        .runAsync(
            tx -> {
              causes.add(tx.retriedAfter());
              tx.set(key("k"), bytes("w"));
              return CompletableFuture.completedFuture(null);
            })
        .get(WAIT.toMillis(), MILLISECONDS);
    assertThat(causes).containsExactly(0, 1020, 1020, 0, 1020);
  }

  @Test
  void runAsync_injectedConflicts_reexecuteBody() throws Exception {
    Faults faults = requireFaults();
    AtomicInteger attempts = new AtomicInteger();
    faults.failNextCommits(2);
    CompletableFuture<Integer> result =
        backend.runAsync(
            tx -> {
              int attempt = attempts.incrementAndGet();
              tx.add(key("counter"), 1);
              return CompletableFuture.completedFuture(attempt);
            });
    assertThat(result.get(WAIT.toMillis(), MILLISECONDS)).isEqualTo(3);
    assertThat(readLong("counter")).isEqualTo(1);
  }

  @Test
  void run_commitUnknownResultAfterApplying_reexecutesBodyThatAlreadyCommitted() {
    Faults faults = requireFaults();
    AtomicInteger attempts = new AtomicInteger();
    faults.commitUnknownResult(1, true);
    backend.run(
        tx -> {
          attempts.incrementAndGet();
          tx.add(key("counter"), 1);
          return null;
        });
    assertThat(attempts).hasValue(2);
    assertThat(readLong("counter"))
        .as("a non-idempotent body is applied twice: bodies must be idempotent")
        .isEqualTo(2);
  }

  @Test
  void run_commitUnknownResultAfterApplying_markerGuardedBodyAppliesOnce() {
    Faults faults = requireFaults();
    AtomicInteger attempts = new AtomicInteger();
    byte[] marker = key("marker-" + UUID.randomUUID());
    faults.commitUnknownResult(1, true);
    backend.run(
        tx -> {
          attempts.incrementAndGet();
          if (tx.get(marker) != null) {
            return null;
          }
          tx.add(key("counter"), 1);
          tx.set(marker, new byte[0]);
          return null;
        });
    assertThat(attempts).hasValue(2);
    assertThat(readLong("counter")).isEqualTo(1);
  }

  @Test
  void run_commitUnknownResultWithoutApplying_appliesOnce() {
    Faults faults = requireFaults();
    AtomicInteger attempts = new AtomicInteger();
    faults.commitUnknownResult(1, false);
    backend.run(
        tx -> {
          attempts.incrementAndGet();
          tx.add(key("counter"), 1);
          return null;
        });
    assertThat(attempts).hasValue(2);
    assertThat(readLong("counter")).isEqualTo(1);
  }

  @Test
  void injectedFaults_failTheFailedAttemptsWatchesAndVersionstamps() {
    Faults faults = requireFaults();
    put("k", "a");
    record AttemptFutures(CompletableFuture<Void> watch, CompletableFuture<byte[]> stamp) {}
    List<AttemptFutures> conflicted = new CopyOnWriteArrayList<>();
    faults.failNextCommits(1);
    backend.run(
        tx -> {
          AttemptFutures f = new AttemptFutures(tx.watch(key("k")), tx.getVersionstamp());
          conflicted.add(f);
          tx.set(key("x"), bytes("x"));
          return null;
        });
    assertThat(conflicted).hasSize(2);
    assertThat(failureOf(conflicted.get(0).watch()).code())
        .isEqualTo(BackendException.NOT_COMMITTED);
    assertThat(failureOf(conflicted.get(0).stamp()).code())
        .isIn(BackendException.NOT_COMMITTED, BackendException.TRANSACTION_INVALID_VERSION);
    assertThat(conflicted.get(1).stamp().join()).hasSize(10);

    List<AttemptFutures> unknown = new CopyOnWriteArrayList<>();
    faults.commitUnknownResult(1, true);
    backend.run(
        tx -> {
          unknown.add(new AttemptFutures(tx.watch(key("k")), tx.getVersionstamp()));
          tx.set(key("y"), bytes("y"));
          return null;
        });
    assertThat(unknown).hasSize(2);
    assertThat(failureOf(unknown.get(0).watch()).code())
        .isEqualTo(BackendException.COMMIT_UNKNOWN_RESULT);
    assertThat(failureOf(unknown.get(0).stamp()).code())
        .isIn(BackendException.COMMIT_UNKNOWN_RESULT, BackendException.TRANSACTION_INVALID_VERSION);
    assertThat(unknown.get(1).stamp().join()).hasSize(10);
    conflicted.get(1).watch().cancel(true);
    unknown.get(1).watch().cancel(true);
  }

  @Test
  void commit_moreThanFiveSecondsAfterReadVersion_raises1007AndRunRetries() {
    Faults faults = requireFaults();
    put("k", "v");
    AtomicInteger attempts = new AtomicInteger();
    List<CompletableFuture<Void>> watches = new CopyOnWriteArrayList<>();
    backend.run(
        tx -> {
          int attempt = attempts.incrementAndGet();
          tx.get(key("k"));
          watches.add(tx.watch(key("k")));
          if (attempt == 1) {
            faults.advanceClock(OVER_AGE);
          }
          tx.set(key("x"), bytes("attempt " + attempt));
          return null;
        });
    assertThat(attempts).hasValue(2);
    assertThat(read("x")).isEqualTo("attempt 2");
    assertThat(failureOf(watches.get(0)).code()).isEqualTo(BackendException.TRANSACTION_TOO_OLD);
    watches.get(1).cancel(true);
  }

  @Test
  void writingCommit_moreThanFiveSecondsAfterReadVersion_raises1007_evenWithoutReadConflicts() {
    // FoundationDB adds a self-conflicting key to every writing commit, so a transaction that took
    // a read version (here by a snapshot read, or by getReadVersion) fails 1007 at commit once it
    // is five seconds old, although it has no read-conflict range of its own.
    Faults faults = requireFaults();
    put("k", "v");
    for (String how : List.of("snapshot read", "getReadVersion")) {
      AtomicInteger attempts = new AtomicInteger();
      backend.run(
          tx -> {
            int attempt = attempts.incrementAndGet();
            if (how.equals("snapshot read")) {
              tx.snapshot().get(key("k"));
            } else {
              tx.getReadVersion();
            }
            if (attempt == 1) {
              faults.advanceClock(OVER_AGE);
            }
            tx.set(key("x"), bytes(how + " " + attempt));
            return null;
          });
      assertThat(attempts).as(how).hasValue(2);
      assertThat(read("x")).isEqualTo(how + " 2");
    }
  }

  @Test
  void readOnlyTransaction_olderThanFiveSeconds_commitsWithoutRetry() {
    Faults faults = requireFaults();
    put("k", "v");
    AtomicInteger attempts = new AtomicInteger();
    String seen =
        backend.run(
            tx -> {
              attempts.incrementAndGet();
              String v = str(tx.get(key("k")));
              faults.advanceClock(OVER_AGE);
              return v;
            });
    assertThat(attempts).hasValue(1);
    assertThat(seen).isEqualTo("v");
  }

  // ---------------------------------------------------------------------------------------------
  // Tenant directories

  @Test
  void directory_createOrOpen_returnsTheSamePrefix() {
    Subspace a = backend.directory("conformance", tenantId, "a");
    Subspace again = backend.directory("conformance", tenantId, "a");
    assertThat(again.getKey()).isEqualTo(a.getKey());
    assertThat(backend.openDirectory("conformance", tenantId, "a"))
        .hasValueSatisfying(s -> assertThat(s.getKey()).isEqualTo(a.getKey()));
    assertThat(backend.directory("conformance", tenantId).getKey()).isEqualTo(prefix);
  }

  @Test
  void directories_areDisjoint() {
    List<byte[]> prefixes =
        List.of(
            prefix,
            backend.directory("conformance", tenantId, "a").getKey(),
            backend.directory("conformance", tenantId, "b").getKey(),
            backend.directory("conformance", tenantId, "a", "child").getKey());
    for (int i = 0; i < prefixes.size(); i++) {
      for (int j = 0; j < prefixes.size(); j++) {
        if (i != j) {
          assertThat(ByteKeys.startsWith(prefixes.get(i), prefixes.get(j)))
              .as("prefix %s starts with prefix %s", i, j)
              .isFalse();
        }
      }
    }
    byte[] inA = Tuple.from("same").pack(prefixes.get(1));
    byte[] inB = Tuple.from("same").pack(prefixes.get(2));
    setIn(backend, inA, "A");
    setIn(backend, inB, "B");
    assertThat(read(inA)).isEqualTo("A");
    assertThat(read(inB)).isEqualTo("B");
  }

  @Test
  void removeDirectory_clearsItsKeysAndSubdirectories() {
    byte[] a = backend.directory("conformance", tenantId, "a").getKey();
    byte[] child = backend.directory("conformance", tenantId, "a", "child").getKey();
    byte[] b = backend.directory("conformance", tenantId, "b").getKey();
    setIn(backend, ByteKeys.concat(a, bytes("k")), "1");
    setIn(backend, ByteKeys.concat(child, bytes("k")), "2");
    setIn(backend, ByteKeys.concat(b, bytes("k")), "3");

    assertThat(backend.removeDirectory("conformance", tenantId, "a")).isTrue();

    assertThat(backend.openDirectory("conformance", tenantId, "a")).isEmpty();
    assertThat(backend.openDirectory("conformance", tenantId, "a", "child")).isEmpty();
    assertThat(rows(a, ByteKeys.strinc(a))).isEmpty();
    assertThat(rows(child, ByteKeys.strinc(child))).isEmpty();
    assertThat(read(ByteKeys.concat(b, bytes("k")))).isEqualTo("3");
    assertThat(backend.removeDirectory("conformance", tenantId, "a")).isFalse();
  }

  @Test
  void listDirectories_namesTheDirectChildrenInOrder() {
    backend.directory("conformance", tenantId, "b");
    backend.directory("conformance", tenantId, "a", "child");
    backend.directory("conformance", tenantId, "a\0x");

    assertThat(backend.listDirectories("conformance", tenantId)).containsExactly("a", "a\0x", "b");
    assertThat(backend.listDirectories("conformance", tenantId, "a")).containsExactly("child");
    assertThat(backend.listDirectories("conformance", tenantId, "b")).isEmpty();
    assertThat(backend.listDirectories("conformance", tenantId, "nope")).isEmpty();
    assertThat(backend.listDirectories()).contains("conformance");
    assertThat(backend.listDirectories("conformance")).contains(tenantId);
    assertThat(backend.openDirectory("conformance", tenantId, "nope")).isEmpty();
    assertThatThrownBy(() -> backend.listDirectories("conformance", ""))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void openDirectory_missingPath_isEmptyAndCreatesNothing() {
    assertThat(backend.openDirectory("conformance", tenantId, "nope")).isEmpty();
    assertThat(backend.openDirectory("conformance", tenantId, "nope")).isEmpty();
    assertThat(backend.removeDirectory("conformance", tenantId, "nope")).isFalse();
  }

  @Test
  void directory_emptyPathOrElement_throwsIllegalArgument() {
    assertThatThrownBy(() -> backend.directory()).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> backend.directory("conformance", ""))
        .isInstanceOf(IllegalArgumentException.class);
  }

  // ---------------------------------------------------------------------------------------------
  // Helpers

  /**
   * Runs a transaction T1 that executes {@code reads}, then (first attempt only) lets {@code
   * interferer} commit in its own transaction, then writes an unrelated key so that T1 is not
   * read-only. Returns how many times T1's body ran: 1 if T1 did not conflict, 2 if it did.
   */
  private int race(Consumer<Transaction> reads, Consumer<Transaction> interferer) {
    AtomicInteger attempts = new AtomicInteger();
    backend.run(
        tx -> {
          int attempt = attempts.incrementAndGet();
          tx.getReadVersion();
          reads.accept(tx);
          if (attempt == 1) {
            backend.run(
                other -> {
                  interferer.accept(other);
                  return null;
                });
          }
          tx.set(key("unrelated"), bytes("attempt " + attempt));
          return null;
        });
    return attempts.get();
  }

  /**
   * Runs {@code write} in a transaction that first sets another key, and checks that {@code write}
   * itself threw {@code code}, that run rethrew it unretried, and that nothing was committed.
   */
  private void assertWriteRaisedByCall(Consumer<Transaction> write, int code) {
    AtomicInteger attempts = new AtomicInteger();
    AtomicReference<Throwable> raisedByCall = new AtomicReference<>();
    Throwable thrown =
        catchThrowable(
            () ->
                backend.run(
                    tx -> {
                      attempts.incrementAndGet();
                      tx.set(key("before"), bytes("v"));
                      try {
                        write.accept(tx);
                      } catch (RuntimeException e) {
                        raisedByCall.set(e);
                        throw e;
                      }
                      return null;
                    }));
    assertThat(raisedByCall.get()).as("raised by the write call itself").isNotNull();
    assertThat(raisedByCall.get()).isInstanceOf(BackendException.class);
    assertThat(((BackendException) raisedByCall.get()).code()).isEqualTo(code);
    assertThat(thrown).isSameAs(raisedByCall.get());
    assertThat(attempts).hasValue(1);
    assertThat(read("before")).isNull();
  }

  /**
   * The backend's own fault injection if the subclass offers it; otherwise the test's backend is
   * wrapped, from here on, in a {@link FaultInjectingBackend} whose faults are returned.
   */
  private Faults requireFaults() {
    Optional<Faults> own = faults(backend);
    if (own.isPresent()) {
      return own.get();
    }
    FaultInjectingBackend injecting =
        backend instanceof FaultInjectingBackend f ? f : FaultInjectingBackend.wrap(backend);
    backend = injecting;
    return new Faults() {
      @Override
      public void failNextCommits(int n) {
        injecting.failNextCommits(n);
      }

      @Override
      public void commitUnknownResult(int n, boolean applied) {
        injecting.commitUnknownResult(n, applied);
      }

      @Override
      public void advanceClock(Duration d) {
        injecting.advanceClock(d);
      }
    };
  }

  private static void inThreads(int threads, IntConsumer work) throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      CountDownLatch start = new CountDownLatch(1);
      List<Future<?>> done = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        int id = t;
        done.add(
            pool.submit(
                () -> {
                  start.await();
                  work.accept(id);
                  return null;
                }));
      }
      start.countDown();
      for (Future<?> f : done) {
        f.get(WAIT_THREADS.toMillis(), MILLISECONDS);
      }
    } finally {
      pool.shutdownNow();
    }
  }

  /** Waits for {@code latch} inside a transaction body, which cannot throw checked exceptions. */
  private static void awaitQuietly(CountDownLatch latch) {
    try {
      if (!latch.await(WAIT.toMillis(), MILLISECONDS)) {
        throw new AssertionError("threads did not meet within " + WAIT);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
  }

  private static BackendException backendError(ThrowingCallable call) {
    Throwable thrown = catchThrowable(call);
    assertThat(thrown).as("expected a BackendException").isNotNull();
    Throwable cause = Futures.unwrap(thrown);
    assertThat(cause).isInstanceOf(BackendException.class);
    return (BackendException) cause;
  }

  private static void assertCode(ThrowingCallable call, int code) {
    BackendException e = backendError(call);
    assertThat(e.code()).as("error code of %s", e).isEqualTo(code);
  }

  /** Waits for {@code future} to fail and returns its BackendException. */
  private static BackendException failureOf(CompletableFuture<?> future) {
    return backendError(() -> future.get(WAIT.toMillis(), MILLISECONDS));
  }

  private byte[] key(String name) {
    return ByteKeys.concat(prefix, bytes(name));
  }

  /** {@code "k2+"} is the key right after {@code k2} ({@code k2\0}); anything else is a name. */
  private byte[] keyAt(String spec) {
    return spec.endsWith("+")
        ? ByteKeys.keyAfter(key(spec.substring(0, spec.length() - 1)))
        : key(spec);
  }

  private byte[] keyOfLength(int total) {
    byte[] filler = new byte[total - prefix.length];
    Arrays.fill(filler, (byte) 'x');
    return ByteKeys.concat(prefix, filler);
  }

  private void seed(String... names) {
    backend.run(
        tx -> {
          for (String n : names) {
            tx.set(key(n), bytes(n));
          }
          return null;
        });
  }

  private void put(String name, String value) {
    put(name, bytes(value));
  }

  private void put(String name, byte[] value) {
    setIn(backend, key(name), value);
  }

  private static void setIn(Backend b, byte[] key, String value) {
    setIn(b, key, bytes(value));
  }

  private static void setIn(Backend b, byte[] key, byte[] value) {
    b.run(
        tx -> {
          tx.set(key, value);
          return null;
        });
  }

  private @Nullable String read(String name) {
    return read(key(name));
  }

  private byte @Nullable [] value(byte[] key) {
    return backend.run(tx -> tx.get(key));
  }

  private List<KeyValue> rows(byte[] begin, byte[] end) {
    return backend.run(tx -> tx.getRange(begin, end));
  }

  private @Nullable String read(byte[] key) {
    return str(backend.run(tx -> tx.get(key)));
  }

  private long readLong(String name) {
    return le64(backend.run(tx -> tx.get(key(name))));
  }

  private List<String> keysIn(String begin, String end) {
    return keysIn(begin, end, ReadTransaction.UNLIMITED, false);
  }

  private List<String> keysIn(String begin, String end, int limit, boolean reverse) {
    return names(backend.run(tx -> tx.getRange(key(begin), key(end), limit, reverse)));
  }

  /** The names (keys without the tenant prefix) of {@code rows}. */
  private List<String> names(List<KeyValue> rows) {
    List<String> names = new ArrayList<>();
    for (KeyValue row : rows) {
      assertThat(ByteKeys.startsWith(row.key(), prefix)).isTrue();
      names.add(new String(row.key(), prefix.length, row.key().length - prefix.length, UTF_8));
    }
    return names;
  }

  private KeyValue kv(String name, String value) {
    return new KeyValue(key(name), bytes(value));
  }

  private static KeyValue kv(byte[] key, byte[] value) {
    return new KeyValue(key, value);
  }

  private static <T> List<T> reversed(List<T> list) {
    List<T> r = new ArrayList<>(list);
    Collections.reverse(r);
    return r;
  }

  private static List<Long> range(int n) {
    List<Long> r = new ArrayList<>(n);
    for (long i = 0; i < n; i++) {
      r.add(i);
    }
    return r;
  }

  private static byte[] bytes(String s) {
    return s.getBytes(UTF_8);
  }

  private static @Nullable String str(byte @Nullable [] b) {
    return b == null ? null : new String(b, UTF_8);
  }

  private static byte[] le64(long v) {
    return ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(v).array();
  }

  private static long le64(byte @Nullable [] b) {
    assertThat(b).as("a 64-bit little-endian value").isNotNull().hasSize(8);
    return ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN).getLong();
  }

  private static long commitVersion(byte[] stamp) {
    return ByteBuffer.wrap(stamp, 0, 8).getLong();
  }

  private static int compareStamps(byte[] a, byte[] b) {
    assertThat(a).hasSize(10);
    assertThat(b).hasSize(10);
    return Arrays.compareUnsigned(a, b);
  }
}
