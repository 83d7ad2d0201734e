package io.dgen.benchmarks;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.DGen;
import io.dgen.HostOptions;
import io.dgen.ServerRef;
import io.dgen.Tenant;
import io.dgen.benchmarks.Target.Bench;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The service path ({@code docs/performance.md}, "The service path"): a web handler on any replica
 * calling {@code ref(...)}. Sequential calls to one idle server at K=1, from where the server runs,
 * from a replica that has the kind's code but not the server's bucket, and from a runtime that
 * hosts nothing; and casts from eight publisher threads of a runtime that hosts nothing, to 1,000
 * servers at K=1 and to one server at K=16, with the commits each message costs.
 */
final class ServicePathScenarios {

  private static final Duration APPLIED_TIMEOUT = Duration.ofMinutes(10);
  private static final Duration CALL_TIMEOUT = Duration.ofSeconds(30);
  private static final String KIND = "counter";
  private static final CounterServer.Add ONE = new CounterServer.Add(1);
  private static final CounterServer.AddAndGet ADD = new CounterServer.AddAndGet(1);

  /** Where the calling runtime stands. */
  enum Caller {
    /** The runtime that holds every bucket: the server is loaded there. */
    HOLDER("the holding runtime"),
    /** A runtime that hosts the kind with {@code holdBuckets(false)}: it has the code. */
    REPLICA("a replica without the server's bucket"),
    /** A runtime that does not host the kind: its calls are queued for the holder. */
    NOTHING("a runtime that hosts nothing");

    final String label;

    Caller(String label) {
      this.label = label;
    }
  }

  private final Settings settings;
  private final Target target;

  ServicePathScenarios(Settings settings, Target target) {
    this.settings = settings;
    this.target = target;
  }

  /** A holding runtime and, unless the caller is the holder, a second runtime that calls. */
  private record Runtimes(DGen holder, DGen caller, Tenant callerTenant) {}

  private Runtimes runtimes(
      Bench bench, Caller caller, int consumeK, Progress progress, PushMeter pushes) {
    DGen holder = DGen.builder(bench.backend()).build();
    Tenant tenant = holder.tenant(bench.root(), "service");
    holder.host(
        KIND,
        () -> new CounterServer(null, progress),
        HostOptions.builder(tenant).consumeK(consumeK).build());
    ScaleOutScenarios.awaitAllBuckets(holder, bench.backend(), tenant);
    if (caller == Caller.HOLDER) {
      return new Runtimes(holder, holder, tenant);
    }
    DGen other = DGen.builder(bench.backend()).meterRegistry(pushes.registry).build();
    Tenant there = other.tenant(bench.root(), "service");
    if (caller == Caller.REPLICA) {
      other.host(
          KIND,
          () -> new CounterServer(null, progress),
          HostOptions.builder(there).consumeK(consumeK).holdBuckets(false).build());
    }
    return new Runtimes(holder, other, there);
  }

  private static void close(Runtimes r) {
    if (r.caller() != r.holder()) {
      r.caller().close();
    }
    r.holder().close();
  }

  /**
   * Row a: sequential calls ({@code AddAndGet}, K=1) to one server that exists and is idle, each
   * through a new ref, as a web handler makes one per request.
   */
  Row sequentialCalls(String id, Caller caller) {
    int calls = Math.max(200, settings.throughput().concurrentCalls()); // CPU clock ticks
    try (Bench bench = target.open(10_000)) {
      Progress progress = new Progress();
      Runtimes r = runtimes(bench, caller, 1, progress, new PushMeter());
      try {
        Tenant t = r.callerTenant();
        r.caller().<CounterServer.Msg>ref(t, KIND, Tuple.from(1)).cast(ONE);
        progress.awaitAtLeast(1, APPLIED_TIMEOUT);
        for (int i = 0; i < Math.max(50, calls / 10); i++) { // warm-up: JIT, caches, loading
          r.caller().<CounterServer.Msg>ref(t, KIND, Tuple.from(1)).call(ADD, CALL_TIMEOUT);
        }
        Latencies latencies = new Latencies();
        Cost before = bench.cost();
        long cpu0 = Scenarios.processCpuNanos();
        long t0 = System.nanoTime();
        for (int i = 0; i < calls; i++) {
          long s = System.nanoTime();
          r.caller().<CounterServer.Msg>ref(t, KIND, Tuple.from(1)).call(ADD, CALL_TIMEOUT);
          latencies.add(System.nanoTime() - s);
        }
        long elapsed = System.nanoTime() - t0;
        Cost cost = bench.cost().minus(before);
        long cpu = Scenarios.processCpuNanos() - cpu0;
        return Scenarios.row(
            id,
            "sequential call through a ref from " + caller.label + ", 1 server, K=1",
            calls,
            elapsed,
            calls * 1e9 / elapsed,
            latencies.summarize(),
            cost,
            calls,
            cpu,
            Map.of(),
            "");
      } finally {
        close(r);
      }
    }
  }

  /**
   * Rows b and c: {@code messages} casts from eight publisher threads of a runtime that hosts
   * nothing, spread over {@code servers} servers, consumed at {@code consumeK}; every server has
   * applied one message first. Commits per message count the pushes and the consumers' batches.
   */
  Row casts(String id, int servers, int consumeK, long messages) {
    try (Bench bench = target.open(10_000)) {
      Progress progress = new Progress();
      PushMeter pushes = new PushMeter();
      Runtimes r = runtimes(bench, Caller.NOTHING, consumeK, progress, pushes);
      try {
        List<ServerRef<CounterServer.Msg>> refs = new ArrayList<>(servers);
        for (int s = 0; s < servers; s++) {
          refs.add(r.caller().ref(r.callerTenant(), KIND, Tuple.from(s)));
        }
        ScaleOutScenarios.parallel(8, servers, n -> refs.get((int) n).cast(ONE));
        progress.awaitAtLeast(servers, APPLIED_TIMEOUT);
        Cost before = bench.cost();
        long pushed0 = pushes.transactions();
        long cpu0 = Scenarios.processCpuNanos();
        long t0 = System.nanoTime();
        ScaleOutScenarios.parallel(8, messages, n -> refs.get((int) (n % servers)).cast(ONE));
        long end = progress.awaitAtLeast(servers + messages, APPLIED_TIMEOUT);
        Cost cost = bench.cost().minus(before);
        long cpu = Scenarios.processCpuNanos() - cpu0;
        long pushTransactions = pushes.transactions() - pushed0;
        Map<String, Double> metrics = new LinkedHashMap<>();
        metrics.put("servers", (double) servers);
        metrics.put("castsPerPush", (double) messages / pushTransactions);
        return Scenarios.row(
            id,
            String.format(
                "%,d casts from 8 threads of a runtime that hosts nothing, %,d server%s, K=%d",
                messages, servers, servers == 1 ? "" : "s", consumeK),
            messages,
            end - t0,
            messages * 1e9 / (end - t0),
            null,
            cost,
            pushTransactions,
            cpu,
            metrics,
            String.format(
                "%.1f casts per push transaction (group commit)",
                (double) messages / pushTransactions));
      } finally {
        close(r);
      }
    }
  }
}
