package io.dgen.benchmarks;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.DGen;
import io.dgen.ServerRef;
import io.dgen.StartOptions;
import io.dgen.Tenant;
import io.dgen.benchmarks.Target.Bench;
import io.dgen.testkit.ManualClock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * The durable timers' rows (issue 14): how many timers a runtime fires per second, how late an idle
 * runtime fires one, and what many pending timers cost an idle runtime (threads, heap, watches,
 * transactions).
 */
final class TimerScenarios {

  private static final Duration WAIT = Duration.ofMinutes(2);
  private static final CounterServer.Add ONE = new CounterServer.Add(1);
  private static final int SERVERS = 16;
  private static final int PER_TRANSACTION = 500;
  private static final Duration LATENESS_DELAY = Duration.ofMillis(20);

  private final Settings settings;
  private final Target target;

  TimerScenarios(Settings settings, Target target) {
    this.settings = settings;
    this.target = target;
  }

  /**
   * Timers fired per second: {@code 10 × manyServers} timers on 16 servers, all due when the clock
   * jumps; the interval runs from the jump to the last one applied by its server. The latency
   * columns are lateness on the system clock: applied minus due, one timer at a time.
   */
  Row fire() {
    int n = settings.manyServers() * 10;
    // A clock that moves when told, so that thousands of timers come due at one instant.
    ManualClock clock = new ManualClock(Instant.now());
    try (Bench bench = target.open(10_000);
        DGen dgen = DGen.builder(bench.backend()).clock(clock).build()) {
      Tenant tenant = dgen.tenant(bench.root(), "timers");
      Progress progress = new Progress();
      List<ServerRef<CounterServer.Msg>> refs = servers(dgen, tenant, "fire", progress);
      schedule(dgen, refs, n, Duration.ofMinutes(1));
      Cost before = bench.cost();
      long cpu0 = Scenarios.processCpuNanos();
      long t0 = System.nanoTime();
      clock.advance(Duration.ofMinutes(2));
      dgen.clockAdvanced();
      long elapsed = progress.awaitAtLeast(n, WAIT) - t0;
      Cost cost = bench.cost().minus(before);
      long cpu = Scenarios.processCpuNanos() - cpu0;
      Latencies late = lateness(bench);
      Latencies.Summary summary = late.summarize();
      return Scenarios.row(
          "timers-fire",
          String.format(
              "%,d timers due at once on %d servers: fired + applied; latency = lateness",
              n, SERVERS),
          n,
          elapsed,
          n * 1e9 / elapsed,
          summary,
          cost,
          0,
          cpu,
          Map.of(),
          String.format(
              "lateness = applied − due (idle runtime, system clock, %d samples)",
              summary.count()));
    }
  }

  /**
   * A recurring timer every second ({@code castEvery}) on the system clock, for {@link
   * Settings#recurringRun} (at most 10 s on the memory backend): how many firings were applied
   * (exactly one per second expected: {@code duplicates} and {@code missed} count the others) and
   * how late each one was applied after its due time.
   */
  Row every() {
    Duration period = Duration.ofSeconds(1);
    Duration run = settings.recurringRun();
    if (target.isMemory() && run.compareTo(Duration.ofSeconds(10)) > 0) {
      run = Duration.ofSeconds(10);
    }
    int n = (int) (run.toNanos() / period.toNanos());
    try (Bench bench = target.open(10_000);
        DGen dgen = DGen.builder(bench.backend()).build()) {
      Tenant tenant = dgen.tenant(bench.root(), "timers-every");
      Progress progress = new Progress();
      ServerRef<CounterServer.Msg> ref = counter(dgen, tenant, "every", progress);
      Cost before = bench.cost();
      long cpu0 = Scenarios.processCpuNanos();
      long t0 = System.nanoTime(); // the due times are t0 + k s, and a little later
      String id = ref.castEvery(ONE, period);
      Latencies late = new Latencies();
      for (int k = 1; k <= n; k++) {
        long applied = progress.awaitAtLeast(k, WAIT);
        late.add(Math.max(0, applied - t0 - k * period.toNanos()));
      }
      long elapsed = System.nanoTime() - t0;
      ref.cancelTimer(id);
      long value = ref.call(new CounterServer.Get());
      Cost cost = bench.cost().minus(before);
      long cpu = Scenarios.processCpuNanos() - cpu0;
      Latencies.Summary summary = late.summarize();
      Map<String, Double> metrics = new LinkedHashMap<>();
      metrics.put("firings", (double) value);
      metrics.put("duplicates", (double) Math.max(0, value - n));
      metrics.put("maxLateMs", summary.maxMicros() / 1e3);
      return Scenarios.row(
          "timers-every",
          String.format("castEvery(1 s) for %d s of real time: applied once each", n),
          value,
          elapsed,
          value * 1e9 / elapsed,
          summary,
          cost,
          0,
          cpu,
          metrics,
          String.format(
              "%d firings for %d due; lateness = applied − due, max %.1f ms",
              value, n, summary.maxMicros() / 1e3));
    }
  }

  /** Lateness on the system clock: one timer at a time, due {@link #LATENESS_DELAY} after sent. */
  private Latencies lateness(Bench bench) {
    int samples = Math.min(settings.wakeSamples(), 50);
    Latencies late = new Latencies();
    try (DGen dgen = DGen.builder(bench.backend()).build()) {
      Tenant tenant = dgen.tenant(bench.root(), "timers-lateness");
      Progress progress = new Progress();
      ServerRef<CounterServer.Msg> ref = counter(dgen, tenant, "late", progress);
      for (int i = 0; i < 2 * samples; i++) { // the first half warms the path up
        long sent = System.nanoTime();
        ref.castAfter(ONE, LATENESS_DELAY);
        long applied = progress.awaitAtLeast(i + 1, WAIT);
        if (i >= samples) {
          late.add(Math.max(0, applied - sent - LATENESS_DELAY.toNanos()));
        }
      }
    }
    return late;
  }

  /**
   * The idle cost of {@code idleManyServers} (100,000) timers pending an hour ahead: threads and
   * heap after GC against before, watches outstanding, and the transactions and CPU of one idle
   * second. The heap includes the memory backend's own copy of the timers' keys.
   */
  Row idle() {
    int n = settings.throughput().idleManyServers();
    long threadsBefore = Scenarios.liveThreads();
    double heapBefore = Scenarios.heapMbAfterGc();
    try (Bench bench = target.open(10_000);
        DGen dgen = DGen.builder(bench.backend()).build()) {
      Tenant tenant = dgen.tenant(bench.root(), "idle-timers");
      Progress progress = new Progress();
      List<ServerRef<CounterServer.Msg>> refs = servers(dgen, tenant, "idle", progress);
      Cost start = bench.cost();
      long cpu0 = Scenarios.processCpuNanos();
      long t0 = System.nanoTime();
      schedule(dgen, refs, n, Duration.ofHours(1));
      long elapsed = System.nanoTime() - t0;
      long cpu = Scenarios.processCpuNanos() - cpu0;
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(200)); // let the alarm's cycles settle
      Cost idleBefore = bench.cost();
      long idleCpu0 = Scenarios.processCpuNanos();
      LockSupport.parkNanos(TimeUnit.SECONDS.toNanos(1));
      Cost idleCost = bench.cost().minus(idleBefore);
      long idleCpu = Scenarios.processCpuNanos() - idleCpu0;
      long threads = Scenarios.liveThreads();
      double heap = Scenarios.heapMbAfterGc();
      long watches = bench.cost().outstandingWatches();
      Map<String, Double> metrics = new LinkedHashMap<>();
      metrics.put("timers", (double) n);
      metrics.put("threadsAdded", (double) (threads - threadsBefore));
      metrics.put("heapAddedMb", heap - heapBefore);
      metrics.put("watches", (double) watches);
      metrics.put("idleTransactions", (double) idleCost.transactionsCommitted());
      metrics.put("idleReads", (double) (idleCost.keysRead() + idleCost.rangesRead()));
      metrics.put("idleCpuMs", idleCpu / 1e6);
      return Scenarios.row(
          "idle-timers",
          String.format("%,d timers pending an hour ahead: scheduled, then 1 s idle", n),
          n,
          elapsed,
          n * 1e9 / elapsed,
          null,
          bench.cost().minus(start),
          n / PER_TRANSACTION,
          cpu,
          metrics,
          String.format(
              "+%d threads, heap after GC +%.0f MB (backend's keys included), %d watches;"
                  + " idle second: %d tx, %d reads, %.0f ms CPU",
              threads - threadsBefore,
              heap - heapBefore,
              watches,
              idleCost.transactionsCommitted(),
              idleCost.keysRead() + idleCost.rangesRead(),
              idleCpu / 1e6));
    }
  }

  /** One counter server {@code (name)} with the default options. */
  private static ServerRef<CounterServer.Msg> counter(
      DGen dgen, Tenant tenant, String name, Progress progress) {
    return dgen.start(
        new CounterServer(Tuple.from(name), progress), null, StartOptions.builder(tenant).build());
  }

  private static List<ServerRef<CounterServer.Msg>> servers(
      DGen dgen, Tenant tenant, String name, Progress progress) {
    List<ServerRef<CounterServer.Msg>> refs = new ArrayList<>();
    for (int i = 0; i < SERVERS; i++) {
      refs.add(
          dgen.start(
              new CounterServer(Tuple.from(name, i), progress),
              null,
              StartOptions.builder(tenant).consumeK(64).build()));
    }
    return refs;
  }

  /**
   * Schedules {@code n} timers {@code delay} ahead, round robin, {@value #PER_TRANSACTION} a tx.
   */
  private static void schedule(
      DGen dgen, List<ServerRef<CounterServer.Msg>> refs, int n, Duration delay) {
    for (int from = 0; from < n; from += PER_TRANSACTION) {
      int first = from;
      int count = Math.min(PER_TRANSACTION, n - from);
      dgen.backend()
          .run(
              tx -> {
                for (int i = first; i < first + count; i++) {
                  refs.get(i % refs.size()).outbox().castAfter(tx, ONE, delay);
                }
                return null;
              });
    }
  }
}
