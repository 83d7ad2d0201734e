package io.dgen.backend.memory;

import static io.dgen.backend.memory.TestKeys.b;
import static io.dgen.backend.memory.TestKeys.put;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dgen.backend.BackendException;
import io.dgen.backend.CountingBackend;
import io.dgen.backend.FaultInjectingBackend;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@link CountingBackend} over {@link FaultInjectingBackend} over the memory backend: what the
 * counters count, and the fault cases the conformance suite does not reach.
 */
class BackendDecoratorsTest {

  private final FaultInjectingBackend faults = FaultInjectingBackend.wrap(MemoryBackend.create());
  private final CountingBackend backend = CountingBackend.wrap(faults);

  @AfterEach
  void close() {
    backend.close();
  }

  @Test
  void counters_countOneReadModifyWrite() {
    put(backend, b("k"), b("1234"));
    CountingBackend.Counters before = backend.counters();
    backend.run(
        tx -> {
          tx.get(b("k"));
          tx.snapshot().get(b("absent"));
          tx.getRange(b("a"), b("z"));
          tx.set(b("k"), b("56"));
          tx.add(b("n"), 1);
          tx.clearRange(b("x"), b("y"));
          return null;
        });
    CountingBackend.Counters d = backend.counters().minus(before);
    assertThat(d.runs()).isEqualTo(1);
    assertThat(d.transactionsStarted()).isEqualTo(1);
    assertThat(d.transactionsCommitted()).isEqualTo(1);
    assertThat(d.readOnlyCommits()).isZero();
    assertThat(d.transactionsRetried()).isZero();
    assertThat(d.keysRead()).isEqualTo(2);
    assertThat(d.rangesRead()).isEqualTo(1);
    assertThat(d.rowsRead()).isEqualTo(1);
    assertThat(d.bytesRead()).isEqualTo((1 + 4) + "absent".length() + (1 + 4));
    assertThat(d.bytesWritten()).isEqualTo((1 + 2) + (1 + 8) + (1 + 1));
  }

  @Test
  void counters_readOnlyRunsAndWatches() throws Exception {
    CountingBackend.Counters before = backend.counters();
    CompletableFuture<Void> watch = backend.run(tx -> tx.watch(b("w")));
    CountingBackend.Counters d = backend.counters().minus(before);
    assertThat(d.readOnlyCommits()).isEqualTo(1);
    assertThat(d.transactionsCommitted()).isZero();
    assertThat(d.watchesArmed()).isEqualTo(1);
    assertThat(d.watchesFired()).isZero();

    put(backend, b("w"), b("changed"));
    watch.get(10, TimeUnit.SECONDS);
    assertThat(backend.counters().minus(before).watchesFired()).isEqualTo(1);
  }

  @Test
  void counters_countTheRetriesOfInjectedConflicts_inRunAndRunAsync() throws Exception {
    CountingBackend.Counters before = backend.counters();
    faults.failNextCommits(2);
    put(backend, b("k"), b("v"));
    faults.failNextCommits(1);
    putAsync(b("k"), b("w"));
    CountingBackend.Counters d = backend.counters().minus(before);
    assertThat(d.runs()).isEqualTo(2);
    assertThat(d.transactionsStarted()).isEqualTo(5);
    assertThat(d.transactionsRetried()).isEqualTo(3);
    assertThat(d.transactionsCommitted()).isEqualTo(2);
    assertThat(d.bytesWritten()).isEqualTo(2 * (1 + 1));
  }

  @Test
  void appliedUnknownResult_whoseRealCommitConflicts_staysArmedForTheRetry() {
    put(backend, b("k"), b("0"));
    AtomicInteger attempts = new AtomicInteger();
    List<UUID> runIds = new CopyOnWriteArrayList<>();
    faults.commitUnknownResult(1, true);
    backend.run(
        tx -> {
          int attempt = attempts.incrementAndGet();
          runIds.add(tx.runId());
          assertThat(tx.attempt()).isEqualTo(attempt);
          tx.get(b("k"));
          if (attempt == 1) {
            put(faults.delegate(), b("k"), b("interfering")); // a real conflict for attempt 1
          }
          tx.add(b("n"), 1);
          return null;
        });
    // 1: marked for 1021 but conflicted for real; 2: committed, then 1021; 3: the re-run
    assertThat(attempts).hasValue(3);
    assertThat(runIds).containsOnly(runIds.get(0));
    assertThat(TestKeys.le(TestKeys.get(backend, b("n")))).isEqualTo(2);
  }

  @Test
  void commitLatency_delaysWritingCommits_inRunAndRunAsync() throws Exception {
    faults.commitLatency(Duration.ofMillis(200));
    long t0 = System.nanoTime();
    put(backend, b("k"), b("v"));
    assertThat(System.nanoTime() - t0).isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(200));
    long t1 = System.nanoTime();
    putAsync(b("k"), b("w"));
    assertThat(System.nanoTime() - t1).isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(200));
    faults.reset();
    assertThat(faults.toString()).contains("latencyNanos=0");
  }

  @Test
  void failCommits_applied_commitsThenFailsWithoutRetrying_inRunAndRunAsync() {
    faults.failCommits(2, BackendException.TRANSACTION_TIMED_OUT, true);
    AtomicInteger bodies = new AtomicInteger();
    assertThatThrownBy(
            () ->
                backend.run(
                    tx -> {
                      bodies.incrementAndGet();
                      tx.set(b("k"), b("v"));
                      return null;
                    }))
        .isInstanceOfSatisfying(BackendException.class, e -> assertThat(e.code()).isEqualTo(1031));
    assertThatThrownBy(() -> putAsync(b("j"), b("w")))
        .isInstanceOf(ExecutionException.class)
        .hasCauseInstanceOf(BackendException.class);
    assertThat(bodies).hasValue(1);
    assertThat(TestKeys.get(backend, b("k"))).isEqualTo(b("v"));
    assertThat(TestKeys.get(backend, b("j"))).isEqualTo(b("w"));
  }

  @Test
  void failCommits_notApplied_failsWithoutApplying() {
    faults.failCommits(1, BackendException.TRANSACTION_TIMED_OUT, false);
    assertThatThrownBy(() -> put(backend, b("k"), b("v"))).isInstanceOf(BackendException.class);
    assertThat(TestKeys.get(backend, b("k"))).isNull();
  }

  @Test
  void interruptAfterCommit_commitsThenInterruptsTheWaitingThread() {
    faults.interruptAfterCommit(1);
    boolean interrupted;
    try {
      assertThatThrownBy(() -> put(backend, b("k"), b("v")))
          .isInstanceOf(CancellationException.class);
    } finally {
      interrupted = Thread.interrupted();
    }
    assertThat(interrupted).isTrue();
    assertThat(TestKeys.get(backend, b("k"))).isEqualTo(b("v"));
  }

  @Test
  void readVersionLatency_delaysEveryAttempt_readsAndDirectoriesToo() throws Exception {
    put(backend, b("k"), b("v"));
    faults.readVersionLatency(Duration.ofMillis(200));
    long t0 = System.nanoTime();
    assertThat(TestKeys.get(backend, b("k"))).isEqualTo(b("v"));
    backend.listDirectories();
    putAsync(b("k"), b("w"));
    assertThat(System.nanoTime() - t0).isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(600));
    faults.reset();
  }

  @Test
  void readVersionLatency_isWaitedForByTheFirstRead_notBeforeTheBody() throws Exception {
    put(backend, b("k"), b("v"));
    faults.readVersionLatency(Duration.ofMillis(300));
    long t0 = System.nanoTime();
    long[] bodyAt = new long[1];
    long[] versionAt = new long[1];
    byte[] value =
        backend
            .runAsync(
                tx -> {
                  bodyAt[0] = System.nanoTime();
                  CompletableFuture<Long> version =
                      tx.getReadVersionAsync()
                          .whenComplete((v, e) -> versionAt[0] = System.nanoTime());
                  return version.thenCompose(v -> tx.snapshot().getAsync(b("k")));
                })
            .get(10, TimeUnit.SECONDS);
    faults.reset();
    assertThat(value).isEqualTo(b("v"));
    assertThat(bodyAt[0] - t0).isLessThan(TimeUnit.MILLISECONDS.toNanos(250));
    assertThat(versionAt[0] - t0).isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(300));
  }

  @Test
  void commitUnknownResultLate_landsAfterTheRetryHasRead_whichThenConflicts() throws Exception {
    for (boolean async : new boolean[] {false, true}) {
      put(backend, b("k"), b("0"));
      List<String> seen = new CopyOnWriteArrayList<>();
      faults.commitUnknownResultLate(1);
      java.util.function.Function<io.dgen.backend.Transaction, String> body =
          tx -> {
            seen.add(tx.attempt() + ":" + new String(tx.get(b("k")), StandardCharsets.UTF_8));
            tx.set(b("k"), b(String.valueOf(tx.attempt())));
            return null;
          };
      if (async) {
        backend
            .runAsync(tx -> CompletableFuture.completedFuture(body.apply(tx)))
            .get(10, TimeUnit.SECONDS);
      } else {
        backend.run(body);
      }
      // 1: raised 1021 unapplied; 2: read before attempt 1 landed, then conflicted with it;
      // 3: sees what attempt 1 wrote
      assertThat(seen).as("async=" + async).containsExactly("1:0", "2:0", "3:1");
      assertThat(TestKeys.get(backend, b("k"))).isEqualTo(b("3"));
    }
  }

  @Test
  void failReads_failsReadsOfItsRangeOnly_asManyAsAsked() {
    put(backend, b("a1"), b("x"));
    put(backend, b("c"), b("y"));
    faults.failReads(b("a"), b("b"), 1, BackendException.TRANSACTION_TIMED_OUT);
    assertThat(TestKeys.get(backend, b("c"))).isEqualTo(b("y")); // outside the range
    assertThatThrownBy(() -> backend.run(tx -> tx.snapshot().getRange(b("a"), b("z"))))
        .isInstanceOfSatisfying(
            BackendException.class,
            e -> assertThat(e.code()).isEqualTo(BackendException.TRANSACTION_TIMED_OUT));
    assertThat(TestKeys.get(backend, b("a1"))).isEqualTo(b("x")); // used up
  }

  @Test
  void afterAppliedUnknownResult_runsBetweenTheCommitAndTheRerun() {
    put(backend, b("k"), b("0"));
    List<String> seen = new CopyOnWriteArrayList<>();
    faults.commitUnknownResult(1, true);
    faults.afterAppliedUnknownResult(() -> put(backend, b("k"), b("between")));
    backend.run(
        tx -> {
          seen.add(new String(tx.get(b("k")), StandardCharsets.UTF_8));
          tx.add(b("n"), 1);
          return null;
        });
    assertThat(seen).containsExactly("0", "between");
  }

  /** Sets {@code key} through {@code runAsync} and waits. */
  private void putAsync(byte[] key, byte[] value) throws Exception {
    backend
        .runAsync(
            tx -> {
              tx.set(key, value);
              return CompletableFuture.completedFuture(null);
            })
        .get(10, TimeUnit.SECONDS);
  }

  @Test
  void settersRejectNegativeArguments() {
    assertThatThrownBy(() -> faults.failNextCommits(-1))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> faults.commitUnknownResult(-1, true))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> faults.commitLatency(Duration.ofMillis(-1)))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> faults.advanceClock(Duration.ofMillis(-1)))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> faults.failCommits(-1, 1031, true))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> faults.failCommits(1, 0, true))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> faults.interruptAfterCommit(-1))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> faults.readVersionLatency(Duration.ofMillis(-1)))
        .isInstanceOf(IllegalArgumentException.class);
  }
}
