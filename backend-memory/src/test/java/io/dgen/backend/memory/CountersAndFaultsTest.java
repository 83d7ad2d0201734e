package io.dgen.backend.memory;

import static io.dgen.backend.memory.TestKeys.b;
import static io.dgen.backend.memory.TestKeys.get;
import static io.dgen.backend.memory.TestKeys.le;
import static io.dgen.backend.memory.TestKeys.put;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dgen.backend.BackendException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class CountersAndFaultsTest {

  private final MemoryBackend backend = MemoryBackend.create();

  @AfterEach
  void close() {
    backend.close();
  }

  @Test
  void counters_countOneReadModifyWrite() {
    byte[] k = b("k");
    put(backend, k, b("1234"));
    MemoryBackend.Counters before = backend.counters();

    backend.run(
        tx -> {
          tx.get(k);
          tx.getRange(b("a"), b("z"));
          tx.set(k, b("56"));
          return null;
        });

    MemoryBackend.Counters d = backend.counters().minus(before);
    assertThat(d.runs()).isEqualTo(1);
    assertThat(d.transactionsStarted()).isEqualTo(1);
    assertThat(d.transactionsCommitted()).isEqualTo(1);
    assertThat(d.readOnlyCommits()).isZero();
    assertThat(d.transactionsRetried()).isZero();
    assertThat(d.keysRead()).isEqualTo(1);
    assertThat(d.rangesRead()).isEqualTo(1);
    assertThat(d.rowsRead()).isEqualTo(1);
    assertThat(d.bytesRead()).isEqualTo(2 * (1 + 4));
    assertThat(d.bytesWritten()).isEqualTo(1 + 2);
  }

  @Test
  void counters_readsAnsweredFromOwnWritesDoNotReachTheStore() {
    MemoryBackend.Counters before = backend.counters();
    backend.run(
        tx -> {
          tx.set(b("k"), b("v"));
          return tx.get(b("k"));
        });
    MemoryBackend.Counters d = backend.counters().minus(before);
    assertThat(d.keysRead()).isZero();
    assertThat(d.bytesRead()).isZero();
  }

  @Test
  void counters_readOnlyCommitAndReset() {
    get(backend, b("k"));
    assertThat(backend.counters().readOnlyCommits()).isEqualTo(1);
    assertThat(backend.counters().transactionsCommitted()).isZero();

    backend.resetCounters();
    assertThat(backend.counters())
        .isEqualTo(new MemoryBackend.Counters(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0));
  }

  @Test
  void failNextCommits_failsThatManyWritingCommitsAndRunRetries() {
    backend.faults().failNextCommits(2);
    AtomicInteger executions = new AtomicInteger();
    MemoryBackend.Counters before = backend.counters();

    backend.run(
        tx -> {
          executions.incrementAndGet();
          tx.add(b("n"), 1);
          return null;
        });

    assertThat(executions).hasValue(3);
    assertThat(le(get(backend, b("n")))).isEqualTo(1);
    MemoryBackend.Counters d = backend.counters().minus(before);
    assertThat(d.conflicts()).isEqualTo(2);
    assertThat(d.transactionsRetried()).isEqualTo(2);
    assertThat(d.transactionsStarted()).isEqualTo(4);
  }

  @Test
  void failNextCommits_doesNotApplyToReadOnlyCommits() {
    backend.faults().failNextCommits(1);
    AtomicInteger executions = new AtomicInteger();
    backend.run(tx -> tx.get(b("k")) == null && executions.incrementAndGet() > 0);
    assertThat(executions).hasValue(1);
    // still armed for the next writing commit
    backend.run(
        tx -> {
          executions.incrementAndGet();
          tx.set(b("k"), b("v"));
          return null;
        });
    assertThat(executions).hasValue(3);
  }

  @Test
  void retryLimit_rethrowsTheOriginalError() {
    try (MemoryBackend limited = MemoryBackend.builder().retryLimit(2).build()) {
      limited.faults().failNextCommits(3);
      AtomicInteger executions = new AtomicInteger();
      assertThatThrownBy(
              () ->
                  limited.run(
                      tx -> {
                        executions.incrementAndGet();
                        tx.set(b("k"), b("v"));
                        return null;
                      }))
          .isInstanceOfSatisfying(
              BackendException.class, e -> assertThat(e.code()).isEqualTo(1020));
      assertThat(executions).hasValue(3);
      assertThat(get(limited, b("k"))).isNull();
    }
  }

  @Test
  void commitUnknownResult_applied_runsTheBodyAgainOverCommittedWrites() {
    backend.faults().commitUnknownResult(1, true);
    AtomicInteger executions = new AtomicInteger();
    backend.run(
        tx -> {
          executions.incrementAndGet();
          tx.add(b("n"), 1);
          return null;
        });
    assertThat(executions).hasValue(2);
    assertThat(le(get(backend, b("n")))).isEqualTo(2);
  }

  @Test
  void commitUnknownResult_notApplied_leavesNoTrace() {
    backend.faults().commitUnknownResult(1, false);
    AtomicInteger executions = new AtomicInteger();
    backend.run(
        tx -> {
          executions.incrementAndGet();
          tx.add(b("n"), 1);
          return null;
        });
    assertThat(executions).hasValue(2);
    assertThat(le(get(backend, b("n")))).isEqualTo(1);
  }

  @Test
  void commitUnknownResult_appliedCommitFailsItsWatchesAndVersionstamp() {
    byte[] k = b("k");
    try (MemoryBackend once = MemoryBackend.builder().retryLimit(0).build()) {
      once.faults().commitUnknownResult(1, true);
      CompletableFuture<?>[] futures = new CompletableFuture<?>[2];
      assertThatThrownBy(
              () ->
                  once.run(
                      tx -> {
                        futures[0] = tx.watch(b("w"));
                        futures[1] = tx.getVersionstamp();
                        tx.set(k, b("v"));
                        return null;
                      }))
          .isInstanceOfSatisfying(
              BackendException.class, e -> assertThat(e.code()).isEqualTo(1021));
      assertThat(get(once, k)).isEqualTo(b("v"));
      assertThat(futures[0]).isCompletedExceptionally();
      assertThatThrownBy(futures[0]::join).hasCauseInstanceOf(BackendException.class);
      assertThatThrownBy(futures[1]::join)
          .cause()
          .isInstanceOfSatisfying(
              BackendException.class, e -> assertThat(e.code()).isEqualTo(2020));
    }
  }

  @Test
  void commitLatency_delaysCommitsWithoutBlockingRunAsync() throws Exception {
    // A latency far above any scheduling hiccup: runAsync returns a future the commit has not
    // completed yet (it did not wait for it), however loaded the machine is.
    backend.faults().commitLatency(Duration.ofSeconds(2));
    long t0 = System.nanoTime();
    CompletableFuture<Object> f =
        backend.runAsync(
            tx -> {
              tx.set(b("k"), b("v"));
              return CompletableFuture.completedFuture(null);
            });
    assertThat(f).as("runAsync did not wait for the commit").isNotDone();
    f.get(10, TimeUnit.SECONDS);
    assertThat(System.nanoTime() - t0).isGreaterThanOrEqualTo(TimeUnit.SECONDS.toNanos(2));
    backend.faults().commitLatency(Duration.ofMillis(50));

    long t1 = System.nanoTime();
    put(backend, b("k"), b("w"));
    assertThat(System.nanoTime() - t1).isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(50));

    backend.faults().reset();
    long t2 = System.nanoTime();
    get(backend, b("k"));
    assertThat(get(backend, b("k"))).isEqualTo(b("w"));
    assertThat(System.nanoTime() - t2).isLessThan(TimeUnit.SECONDS.toNanos(5));
  }

  @Test
  void faults_rejectNegativeArguments() {
    assertThatThrownBy(() -> backend.faults().failNextCommits(-1))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> backend.faults().commitUnknownResult(-1, true))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> backend.faults().commitLatency(Duration.ofMillis(-1)))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void runAsync_retriesInjectedConflicts() throws Exception {
    backend.faults().failNextCommits(3);
    AtomicInteger executions = new AtomicInteger();
    Integer r =
        backend
            .runAsync(
                tx -> {
                  tx.add(b("n"), 1);
                  return CompletableFuture.completedFuture(executions.incrementAndGet());
                })
            .get(10, TimeUnit.SECONDS);
    assertThat(r).isEqualTo(4);
    assertThat(le(get(backend, b("n")))).isEqualTo(1);
    assertThat(backend.counters().transactionsRetried()).isEqualTo(3);
  }
}
