package io.dgen.benchmarks;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.DGen;
import io.dgen.ServerRef;
import io.dgen.StartOptions;
import io.dgen.Tenant;
import io.dgen.benchmarks.Target.Bench;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * The limits' rows: the rate a shared rate limit lets through with its limiter's conflict rate (two
 * runtimes, each reserving from its own share of the rate), and what throttled servers cost while
 * they wait.
 */
final class LimitScenarios {

  private static final Duration WAIT = Duration.ofMinutes(3);
  private static final CounterServer.Add ONE = new CounterServer.Add(1);

  private final Settings settings;
  private final Target target;

  LimitScenarios(Settings settings, Target target) {
    this.settings = settings;
    this.target = target;
  }

  /**
   * A rate limit of 1,000 permits/s (burst 100) shared by 20 servers (K=16) in two runtimes, each
   * server with a backlog: the permits per second let through, and how many of the limiter's
   * transactions conflicted (FoundationDB's guidance for one key is 10–100 read-modify-writes per
   * second).
   */
  Row rate() {
    double rate = 1_000;
    int burst = 100;
    int servers = 20;
    // long enough for a few dozen reservations: the conflict rate is a ratio of small counts
    double seconds = Math.max(0.5, 3 * settings.measure().toMillis() / 1000.0);
    int perServer = (int) Math.ceil((burst + rate * seconds) / servers);
    int n = perServer * servers;
    String limit = "bench-" + UUID.randomUUID();
    SimpleMeterRegistry ma = new SimpleMeterRegistry();
    SimpleMeterRegistry mb = new SimpleMeterRegistry();
    try (Bench bench = target.open(10_000);
        DGen a =
            DGen.builder(bench.backend()).meterRegistry(ma).rateLimit(limit, rate, burst).build();
        DGen b = DGen.builder(bench.backend()).meterRegistry(mb).build()) {
      Progress progress = new Progress();
      List<ServerRef<CounterServer.Msg>> refs = new ArrayList<>();
      for (int i = 0; i < servers; i++) {
        DGen d = i % 2 == 0 ? a : b;
        Tenant t = d.tenant(bench.root(), "limits");
        refs.add(
            d.start(
                new CounterServer(Tuple.from("rate", i), progress),
                null,
                StartOptions.builder(t).consumeK(16).rateLimit(limit).build()));
      }
      List<CounterServer.Msg> backlog = Collections.nCopies(perServer, ONE);
      Cost before = bench.cost();
      long cpu0 = Scenarios.processCpuNanos();
      long t0 = System.nanoTime();
      for (ServerRef<CounterServer.Msg> ref : refs) {
        ref.castAll(backlog);
      }
      long elapsed = progress.awaitAtLeast(n, WAIT) - t0;
      Cost cost = bench.cost().minus(before);
      long cpu = Scenarios.processCpuNanos() - cpu0;
      double tx = count(ma, "dgen.limit.transactions") + count(mb, "dgen.limit.transactions");
      double conflicts = count(ma, "dgen.limit.conflicts") + count(mb, "dgen.limit.conflicts");
      double conflictRate = conflicts / Math.max(1, tx + conflicts);
      double allowed = burst + rate * elapsed / 1e9;
      return Scenarios.row(
          "limit-rate",
          String.format(
              "rate limit %,.0f/s burst %d, 20 servers K=16 in 2 runtimes, %,d queued",
              rate, burst, n),
          n,
          elapsed,
          n * 1e9 / elapsed,
          null,
          cost,
          servers,
          cpu,
          Map.of(
              "limiterTx/s", tx * 1e9 / elapsed,
              "conflict%", 100 * conflictRate,
              "ofAllowed%", 100 * n / allowed),
          String.format(
              "%.0f limiter tx, %.0f conflicts (%.2f%%); %.0f%% of burst + rate × time",
              tx, conflicts, 100 * conflictRate, 100 * n / allowed));
    }
  }

  /**
   * 200 servers throttled by a rate limit of 2 permits/s, each with 5 messages queued: the process
   * CPU per second while they wait, next to the same servers idle (measured first, in this run).
   */
  Row throttledCpu() {
    int servers = Math.min(200, settings.manyServers());
    long measure = Math.max(500, settings.measure().toMillis());
    String limit = "bench-" + UUID.randomUUID();
    try (Bench bench = target.open(10_000);
        DGen dgen = DGen.builder(bench.backend()).rateLimit(limit, 2, 1).build()) {
      Tenant t = dgen.tenant(bench.root(), "throttled");
      Progress progress = new Progress();
      List<ServerRef<CounterServer.Msg>> refs = new ArrayList<>();
      for (int i = 0; i < servers; i++) {
        refs.add(
            dgen.start(
                new CounterServer(Tuple.from("throttled", i), progress),
                null,
                StartOptions.builder(t).rateLimit(limit).build()));
      }
      pause(2_000); // let the starts' first batches, JIT and GC settle
      long idleCpu = cpuOver(measure);
      for (ServerRef<CounterServer.Msg> ref : refs) {
        ref.castAll(Collections.nCopies(5, ONE));
      }
      pause(500);
      Cost before = bench.cost();
      long applied0 = progress.applied();
      long t0 = System.nanoTime();
      long cpu = cpuOver(measure);
      long elapsed = System.nanoTime() - t0;
      Cost cost = bench.cost().minus(before);
      long applied = progress.applied() - applied0;
      double cpuPerSecond = cpu / 1e6 / (elapsed / 1e9);
      double idlePerSecond = idleCpu / 1e6 / (measure / 1e3);
      return Scenarios.row(
          "limit-throttled",
          String.format("%d servers throttled at 2 permits/s, 5 queued each", servers),
          Math.max(1, applied),
          elapsed,
          applied * 1e9 / elapsed,
          null,
          cost,
          0,
          cpu,
          Map.of("cpuMs/s", cpuPerSecond, "idleCpuMs/s", idlePerSecond),
          String.format(
              "process CPU %.1f ms/s throttled vs. %.1f ms/s idle (same servers, this run)",
              cpuPerSecond, idlePerSecond));
    }
  }

  private static long cpuOver(long millis) {
    long cpu0 = Scenarios.processCpuNanos();
    pause(millis);
    return Scenarios.processCpuNanos() - cpu0;
  }

  /** Lets time pass for a measurement: the interval is what is measured, nothing is waited for. */
  private static void pause(long millis) {
    long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
    while (System.nanoTime() - end < 0) {
      LockSupport.parkNanos(end - System.nanoTime());
    }
  }

  private static double count(SimpleMeterRegistry r, String name) {
    return r.find(name).counters().stream().mapToDouble(Counter::count).sum();
  }
}
