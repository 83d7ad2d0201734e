package io.dgen.internal.commit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.backend.BackendException;
import io.dgen.backend.FaultInjectingBackend;
import io.dgen.backend.Futures;
import io.dgen.backend.KeyValue;
import io.dgen.backend.memory.MemoryBackend;
import io.dgen.internal.base.OperationTimeouts;
import io.dgen.internal.codec.StoredState;
import io.dgen.internal.keys.Buckets;
import io.dgen.internal.keys.ServerKeys;
import io.dgen.internal.state.StateStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;
import tools.jackson.databind.node.JsonNodeFactory;

/**
 * The commit runner alone, on the memory backend: a run whose commit raised {@code
 * commit_unknown_result} after applying replays instead of running its body again; one that did not
 * apply runs again; read-only runs leave no marker; a state write's stamp reaches the observer.
 */
class CommitRunnerTest {

  private final MemoryBackend backend = MemoryBackend.create();
  private final ServerKeys keys =
      new ServerKeys(backend.directory("commit-runner"), Buckets.of(1), Tuple.from("server"));
  private final byte[] counter = keys.root().pack(Tuple.from("counter"));
  private final RecordingObserver observer = new RecordingObserver();
  private final CommitRunner commits =
      new CommitRunner(
          backend,
          keys,
          observer,
          System::nanoTime,
          new OperationTimeouts(OperationTimeouts.DEFAULT),
          "test");

  private static final class RecordingObserver implements CommitRunner.Observer {
    final List<byte[]> stamps = new ArrayList<>();
    int replays;

    @Override
    public void stateCommitted(StoredState written, byte[] stamp) {
      stamps.add(stamp);
    }

    @Override
    public void replayed() {
      replays++;
    }
  }

  private long counterValue() {
    return ServerKeys.decodeCounter(backend.run(tx -> tx.get(counter)));
  }

  private List<KeyValue> markers() {
    return backend.run(tx -> tx.getRange(keys.markers().range().begin, keys.markers().range().end));
  }

  /** Runs {@code body} through {@code commit}, or through {@code commitAsync} and waits. */
  private <T> @Nullable T commit(
      boolean async, CommitRunner.Body<T> body, CommitRunner.Replay<T> replay) {
    if (!async) {
      return commits.commit(body, replay);
    }
    return Futures.join(
        commits.commitAsync(
            tx -> CompletableFuture.completedFuture(body.apply(tx)), replay, Runnable::run));
  }

  private @Nullable String incrementOnce(boolean async, AtomicInteger bodyRuns) {
    return commit(
        async,
        tx -> {
          bodyRuns.incrementAndGet();
          tx.add(counter, 1);
          return "ran";
        },
        (tx, previous) -> "replayed " + previous);
  }

  @ParameterizedTest(name = "async={0}")
  @ValueSource(booleans = {false, true})
  void commit_unknownResultThatApplied_replaysInsteadOfRunningTheBodyAgain(boolean async) {
    backend.faults().commitUnknownResult(1, true);
    AtomicInteger bodyRuns = new AtomicInteger();

    String result = incrementOnce(async, bodyRuns);

    assertThat(result).isEqualTo("replayed ran");
    assertThat(bodyRuns).hasValue(1);
    assertThat(counterValue()).isEqualTo(1);
    assertThat(observer.replays).isEqualTo(1);
  }

  @ParameterizedTest(name = "async={0} applied={1}")
  @CsvSource({"false, true", "true, true", "false, false", "true, false"})
  void commit_unknownResultOnceRetriesRanOut_looksForItsMarker(boolean async, boolean applied) {
    try (MemoryBackend noRetries = MemoryBackend.builder().retryLimit(0).build()) {
      ServerKeys k =
          new ServerKeys(noRetries.directory("commit-runner"), Buckets.of(1), Tuple.from("server"));
      byte[] n = k.root().pack(Tuple.from("counter"));
      CommitRunner runner =
          new CommitRunner(
              noRetries,
              k,
              observer,
              System::nanoTime,
              new OperationTimeouts(OperationTimeouts.DEFAULT),
              "test");
      noRetries.faults().commitUnknownResult(1, applied);
      CommitRunner.Body<String> body =
          tx -> {
            tx.add(n, 1);
            return "ran";
          };
      CommitRunner.Replay<String> replay = (tx, previous) -> "replayed " + previous;

      ThrowingCallable run =
          async
              ? () ->
                  assertThat(
                          Futures.join(
                              runner.commitAsync(
                                  tx -> CompletableFuture.completedFuture(body.apply(tx)),
                                  replay,
                                  Runnable::run)))
                      .isEqualTo("replayed ran")
              : () -> assertThat(runner.commit(body, replay)).isEqualTo("replayed ran");
      if (applied) {
        assertThatCode(run).doesNotThrowAnyException();
      } else {
        assertThatThrownBy(run).isInstanceOf(BackendException.class).hasMessageContaining("1021");
      }
      assertThat(ServerKeys.decodeCounter(noRetries.run(tx -> tx.get(n))))
          .isEqualTo(applied ? 1 : 0);
    }
  }

  /**
   * A run that did not apply runs its body again; also in a slot an earlier run committed in, whose
   * marker the retry finds: it is not its own (another use of the slot).
   */
  @ParameterizedTest(name = "async={0} afterAnotherRun={1}")
  @CsvSource({"false, false", "true, false", "false, true", "true, true"})
  void commit_unknownResultThatDidNotApply_runsTheBodyAgain(boolean async, boolean afterAnother) {
    if (afterAnother) {
      incrementOnce(async, new AtomicInteger());
    }
    backend.faults().commitUnknownResult(1, false);
    AtomicInteger bodyRuns = new AtomicInteger();

    String result = incrementOnce(async, bodyRuns);

    assertThat(result).isEqualTo("ran");
    assertThat(bodyRuns).hasValue(2);
    assertThat(counterValue()).isEqualTo(afterAnother ? 2 : 1);
    assertThat(observer.replays).isZero();
    assertThat(markers()).hasSize(1);
  }

  @ParameterizedTest(name = "async={0}")
  @ValueSource(booleans = {false, true})
  void commit_readOnlyBody_leavesNoMarker_andWritingBodyLeavesOne(boolean async) {
    commit(async, tx -> tx.get(counter), (tx, previous) -> previous);
    assertThat(markers()).isEmpty();

    incrementOnce(async, new AtomicInteger());
    assertThat(markers()).hasSize(1);
  }

  @ParameterizedTest(name = "async={0}")
  @ValueSource(booleans = {false, true})
  void commit_runsOneAfterAnother_writeTheirMarkersToOneSlot(boolean async) {
    for (int i = 0; i < 100; i++) {
      incrementOnce(async, new AtomicInteger());
    }

    assertThat(markers()).hasSize(1);
    assertThat(counterValue()).isEqualTo(100);
  }

  /**
   * The slot of a run that never learned its outcome (its commit applied, but timed out, and the
   * look for its marker failed) is never taken again: its marker must stay what it is, for a lock
   * holder's next try to read ({@link CommitRunner#committedEarlier}).
   */
  @Test
  void commit_aRunThatNeverLearnedItsOutcome_keepsItsSlotToItself() {
    FaultInjectingBackend faulty = FaultInjectingBackend.wrap(backend);
    CommitRunner runner =
        new CommitRunner(
            faulty,
            keys,
            observer,
            System::nanoTime,
            new OperationTimeouts(OperationTimeouts.DEFAULT),
            "test");
    UUID[] lastRun = new UUID[1];
    CommitRunner.Body<String> increment =
        tx -> {
          lastRun[0] = tx.runId();
          tx.add(counter, 1);
          return "ran";
        };
    runner.commit(increment);
    List<KeyValue> before = markers();
    faulty.failCommits(1, BackendException.TRANSACTION_TIMED_OUT, true);
    faulty.failReads(
        keys.markers().range().begin,
        keys.markers().range().end,
        1,
        BackendException.TRANSACTION_TIMED_OUT);
    assertThatThrownBy(() -> runner.commit(increment)).isInstanceOf(BackendException.class);
    UUID unknownRun = lastRun[0];
    List<KeyValue> unknown = markers();

    for (int i = 0; i < 10; i++) {
      runner.commit(increment);
    }

    assertThat(counterValue()).isEqualTo(12);
    // the unknown run took the free slot; the runs after it took a new one
    assertThat(before).hasSize(1);
    assertThat(unknown).hasSize(1);
    assertThat(markers()).hasSize(2).contains(unknown.get(0));
    UUID committed = backend.run(tx -> runner.committedEarlier(tx, List.of(unknownRun)));
    assertThat(committed).isEqualTo(unknownRun);
  }

  @ParameterizedTest(name = "async={0}")
  @ValueSource(booleans = {false, true})
  void commit_stateWrite_handsTheObserverTheStampTheVersionKeyHolds(boolean async) {
    StoredState stored = () -> JsonNodeFactory.instance.objectNode();

    commit(
        async,
        tx -> {
          tx.setVersionstampedValue(keys.versionKey(), new byte[0]);
          return new StateStore.Written(stored);
        },
        (tx, previous) -> previous);

    assertThat(observer.stamps).hasSize(1);
    assertThat(observer.stamps.get(0)).isEqualTo(backend.run(tx -> tx.get(keys.versionKey())));
  }

  @ParameterizedTest(name = "async={0}")
  @ValueSource(booleans = {false, true})
  void commit_anAttemptThatLandedLate_isReplayed_notTheLaterOneThatDidNotCommit(boolean async) {
    FaultInjectingBackend faults = FaultInjectingBackend.wrap(MemoryBackend.create());
    ServerKeys k = new ServerKeys(faults.directory("late"), Buckets.of(1), Tuple.from("server"));
    CommitRunner runner =
        new CommitRunner(
            faults,
            k,
            observer,
            System::nanoTime,
            new OperationTimeouts(OperationTimeouts.DEFAULT),
            "test");
    byte[] count = k.root().pack(Tuple.from("count"));
    CommitRunner.Body<Integer> body =
        tx -> {
          tx.add(count, 1);
          return tx.attempt(); // an outcome that differs from attempt to attempt
        };
    faults.commitUnknownResultLate(1);
    Integer outcome =
        async
            ? runner
                .commitAsync(
                    tx -> CompletableFuture.completedFuture(body.apply(tx)),
                    (tx, previous) -> previous,
                    Runnable::run)
                .join()
            : runner.commit(body);
    // 1 raised 1021 and landed while 2 ran; 2 conflicted with it; 3 found 1's marker
    assertThat(outcome).isEqualTo(1);
    assertThat(ServerKeys.decodeCounter(faults.run(tx -> tx.get(count)))).isEqualTo(1);
    faults.close();
  }

  @Test
  void commitAsync_holdsNoThreadWhileItsCommitWaits() throws Exception {
    backend.faults().commitLatency(Duration.ofMillis(300));
    int runs = 200;
    int threadsBefore = Thread.activeCount();
    long t0 = System.nanoTime();
    List<CompletableFuture<String>> pending = new ArrayList<>();
    for (int i = 0; i < runs; i++) {
      pending.add(
          commits.commitAsync(
              tx -> {
                tx.add(counter, 1);
                return CompletableFuture.completedFuture("done");
              },
              (tx, previous) -> previous,
              Runnable::run));
    }
    long issuedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
    // each commit waits 300 ms: had any held this thread, issuing them would have taken a minute
    assertThat(issuedMillis).isLessThan(30_000);
    assertThat(Thread.activeCount() - threadsBefore).isLessThan(runs / 4);
    CompletableFuture.allOf(pending.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);
    assertThat(counterValue()).isEqualTo(runs);
  }

  @Test
  void commitAsync_runsARetrysBodyOnTheExecutor_notOnTheBackendsThreads() throws Exception {
    ExecutorService runtime =
        Executors.newSingleThreadExecutor(r -> new Thread(r, "commit-runner-test-executor"));
    try {
      backend.faults().failNextCommits(1);
      List<String> threads = new ArrayList<>();
      Executor executor = runtime;
      String result =
          commits
              .commitAsync(
                  tx -> {
                    synchronized (threads) {
                      threads.add(Thread.currentThread().getName());
                    }
                    tx.add(counter, 1);
                    return CompletableFuture.completedFuture("ran");
                  },
                  (tx, previous) -> previous,
                  executor)
              .get(30, TimeUnit.SECONDS);

      assertThat(result).isEqualTo("ran");
      assertThat(threads).hasSize(2);
      assertThat(threads.get(0)).isEqualTo(Thread.currentThread().getName());
      assertThat(threads.get(1)).isEqualTo("commit-runner-test-executor");
      assertThat(counterValue()).isEqualTo(1);
    } finally {
      runtime.shutdownNow();
    }
  }

  @AfterEach
  void closeBackend() {
    backend.close();
  }
}
