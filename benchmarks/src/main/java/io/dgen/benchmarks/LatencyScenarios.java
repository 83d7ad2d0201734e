package io.dgen.benchmarks;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.Call;
import io.dgen.DGen;
import io.dgen.ServerRef;
import io.dgen.StartOptions;
import io.dgen.Tenant;
import io.dgen.backend.memory.MemoryBackend;
import io.dgen.benchmarks.Target.Bench;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * The scenarios of the throughput issue (#13): what a runtime does when every commit waits for the
 * database, as on FoundationDB (the memory backend with injected commit latency), and what idle
 * servers and calls in flight cost in threads, watches, heap and CPU.
 *
 * <p>The drain rows measure the consumers alone: publish-only processes fill the queues first (no
 * latency), then the latency is set, the consumers start, and the interval runs from their start to
 * the last message applied. A pusher waits for its own commit in its own thread by design (a {@code
 * cast} returns once its push is durable), so publishing at latency measures the number of
 * publisher threads, not the runtime.
 *
 * <p>Latency is injected on the memory backend only ({@code faults().commitLatency}, which holds no
 * thread while a commit waits); on FoundationDB every row runs at the cluster's own latency.
 */
final class LatencyScenarios {

  private static final Duration DRAIN_TIMEOUT = Duration.ofMinutes(5);
  private static final Duration CALL_TIMEOUT = Duration.ofSeconds(60);
  private static final CounterServer.Add ONE = new CounterServer.Add(1);
  private static final int FILL_BATCH = 256;

  /** The watch limit of every scenario here: FoundationDB's default. */
  private static final int DEFAULT_MAX_WATCHES = 10_000;

  private final Settings settings;
  private final Target target;

  LatencyScenarios(Settings settings, Target target) {
    this.settings = settings;
    this.target = target;
  }

  /** Makes every commit of the memory backend wait {@code latency}; FoundationDB has its own. */
  private static void commitLatency(Bench bench, Duration latency) {
    if (bench.backend() instanceof MemoryBackend memory) {
      memory.faults().commitLatency(latency);
    }
  }

  private String latencyLabel(Duration latency) {
    return target.isMemory()
        ? String.format(Locale.ROOT, "commit latency %d ms", latency.toMillis())
        : target.name() + "'s own latency";
  }

  // ---------------------------------------------------------------- drains at latency

  /**
   * Drains {@code perServer} queued casts from each of {@code servers} servers at {@code consumeK},
   * every commit taking {@code latency}.
   */
  Row drain(String id, int servers, int consumeK, Duration latency, int perServer) {
    try (Bench bench = target.open(DEFAULT_MAX_WATCHES);
        DGen dgen = DGen.builder(bench.backend()).build()) {
      if (!settings.warmup().isZero()) {
        // The same path at the same latency on a tenth of the servers, thrown away: without it
        // the JIT compiles the consumers' paths during the measured drain (on two cores the
        // compiler thread took 60-85 % of one core throughout a 5 ms row).
        drainOnce(
            bench, dgen, id + "-warm-up", Math.max(1, servers / 10), consumeK, latency, perServer);
      }
      Drained d = drainOnce(bench, dgen, id, servers, consumeK, latency, perServer);
      long total = d.total();
      long elapsed = d.elapsed();
      Cost cost = d.cost();
      long cpu = d.cpu();
      long ms = latency.toMillis();
      // A server runs one batch at a time (its next batch reads what this one committed), so at
      // most min(servers, batches in flight) batches wait for the database at once.
      long inFlight = Math.min(servers, DGen.Builder.DEFAULT_MAX_BATCHES_IN_FLIGHT);
      String ceiling =
          ms == 0
              ? (target.isMemory() ? "no latency: CPU-bound" : "")
              : String.format(
                  Locale.ROOT,
                  "ceilings: %,d/s with 2 threads each waiting for its batch; %,d/s with %,d"
                      + " batches in flight (one per server, at most %d)",
                  2L * consumeK * 1000 / ms,
                  inFlight * consumeK * 1000 / ms,
                  inFlight,
                  DGen.Builder.DEFAULT_MAX_BATCHES_IN_FLIGHT);
      return Scenarios.row(
          id,
          String.format(
              Locale.ROOT,
              "%,d servers, K=%d, drain %,d queued casts, %s",
              servers,
              consumeK,
              total,
              latencyLabel(latency)),
          total,
          elapsed,
          total * 1e9 / elapsed,
          null,
          cost,
          0,
          cpu,
          ms == 0
              ? Map.of("latencyMs", 0.0)
              : Map.of(
                  "latencyMs", (double) ms, "ceiling", (double) inFlight * consumeK * 1000 / ms),
          ceiling);
    }
  }

  private record Drained(long total, long elapsed, Cost cost, long cpu) {}

  /** Fills the queues of {@code servers} new servers in tenant {@code name}, then drains them. */
  private Drained drainOnce(
      Bench bench,
      DGen dgen,
      String name,
      int servers,
      int consumeK,
      Duration latency,
      int perServer) {
    Tenant tenant = dgen.tenant(bench.root(), name);
    Progress progress = new Progress();
    List<ServerRef<CounterServer.Msg>> queues =
        startServers(dgen, servers, progress, StartOptions.builder(tenant).consume(false).build());
    List<CounterServer.Msg> chunk = Collections.nCopies(FILL_BATCH, ONE);
    for (ServerRef<CounterServer.Msg> q : queues) {
      for (int sent = 0; sent < perServer; sent += FILL_BATCH) {
        q.castAll(chunk.subList(0, Math.min(FILL_BATCH, perServer - sent)));
      }
    }
    long total = (long) servers * perServer;
    commitLatency(bench, latency);
    Cost before = bench.cost();
    long cpu0 = Scenarios.processCpuNanos();
    long t0 = System.nanoTime();
    startServers(dgen, servers, progress, StartOptions.builder(tenant).consumeK(consumeK).build());
    long end = progress.awaitAtLeast(total, DRAIN_TIMEOUT);
    Cost cost = bench.cost().minus(before);
    long cpu = Scenarios.processCpuNanos() - cpu0;
    commitLatency(bench, Duration.ZERO);
    long sum = 0;
    for (ServerRef<CounterServer.Msg> q : queues) {
      sum += q.priorityCall(new CounterServer.Get());
    }
    if (sum != total) {
      throw new IllegalStateException(name + ": applied " + sum + " of " + total);
    }
    return new Drained(total, end - t0, cost, cpu);
  }

  // ---------------------------------------------------------------- idle servers

  /**
   * Starts {@code n} servers and lets them go idle, with FoundationDB's default watch limit; then
   * measures the CPU they cost while idle and the wake-up (cast → applied) with every commit taking
   * {@code latency}.
   */
  Row idle(String id, int n, Duration latency, int wakeSamples) {
    long threadsBefore = Scenarios.liveThreads();
    double heapBefore = Scenarios.heapMbAfterGc();
    try (Bench bench = target.open(DEFAULT_MAX_WATCHES);
        DGen dgen = DGen.builder(bench.backend()).build()) {
      Tenant tenant = dgen.tenant(bench.root(), id);
      Progress progress = new Progress();
      Cost before = bench.cost();
      long startCpu0 = Scenarios.processCpuNanos();
      long t0 = System.nanoTime();
      List<ServerRef<CounterServer.Msg>> refs =
          startServers(dgen, n, progress, StartOptions.builder(tenant).build());
      long startedNanos = System.nanoTime() - t0;
      Scenarios.awaitIdle(bench, before, n);
      long idleNanos = System.nanoTime() - t0;
      long startCpu = Scenarios.processCpuNanos() - startCpu0;
      Cost cost = bench.cost().minus(before);
      double heap = Scenarios.heapMbAfterGc();
      long threads = Scenarios.liveThreads();
      long watches = bench.cost().outstandingWatches();

      // CPU while idle, nothing being sent: the runtime's and the backend's threads (dgen-*),
      // and the whole process (which also counts the JIT compiling what the starts ran, and GC)
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(500));
      long cpu0 = Scenarios.processCpuNanos();
      long dgen0 = dgenThreadsCpuNanos();
      long w0 = System.nanoTime();
      LockSupport.parkNanos(settings.measure().toNanos());
      double window = System.nanoTime() - w0;
      double idleCores = (dgenThreadsCpuNanos() - dgen0) / window;
      double processCores = (Scenarios.processCpuNanos() - cpu0) / window;

      commitLatency(bench, latency);
      Latencies wake = new Latencies();
      SplittableRandom random = new SplittableRandom(7);
      for (int i = 0; i < 2 * wakeSamples; i++) {
        ServerRef<CounterServer.Msg> ref = refs.get(random.nextInt(n));
        long target = progress.applied() + 1;
        long sent = System.nanoTime();
        ref.cast(ONE);
        long woken = progress.awaitAtLeast(target, CALL_TIMEOUT) - sent;
        if (i >= wakeSamples) {
          wake.add(woken);
        }
      }
      commitLatency(bench, Duration.ZERO);
      Map<String, Double> metrics = new LinkedHashMap<>();
      metrics.put("threads", (double) threads);
      metrics.put("heapMb", heap);
      metrics.put("heapAddedMb", heap - heapBefore);
      metrics.put("watches", (double) watches);
      metrics.put("idleCores", idleCores);
      metrics.put("idleProcessCores", processCores);
      metrics.put("startMs", startedNanos / 1e6);
      metrics.put("latencyMs", (double) latency.toMillis());
      metrics.put("servers", (double) n);
      return Scenarios.row(
          id,
          String.format(
              Locale.ROOT,
              "%,d idle servers, default watch limit; wake-up at %s",
              n,
              latencyLabel(latency)),
          n,
          idleNanos,
          n * 1e9 / idleNanos,
          wake.summarize(),
          cost,
          n,
          startCpu,
          metrics,
          String.format(
              Locale.ROOT,
              "started in %,.0f ms, idle in %,.0f ms; %d watches; idle CPU %.3f cores (process:"
                  + " %.3f); %d live threads (+%d); heap after GC %.0f MB (%+.0f)",
              startedNanos / 1e6,
              idleNanos / 1e6,
              watches,
              idleCores,
              processCores,
              threads,
              threads - threadsBefore,
              heap,
              heap - heapBefore));
    }
  }

  // ---------------------------------------------------------------- calls in flight

  /**
   * {@code calls} concurrent {@code callAsync} (one thread sends them all) to {@code servers}
   * servers at {@code consumeK}, every commit taking {@code latency}: their latency, and the
   * threads and watches the JVM holds meanwhile.
   */
  Row concurrentCalls(String id, int servers, int calls, int consumeK, Duration latency) {
    try (Bench bench = target.open(DEFAULT_MAX_WATCHES);
        DGen dgen = DGen.builder(bench.backend()).build()) {
      Tenant tenant = dgen.tenant(bench.root(), id);
      Progress progress = new Progress();
      Cost started = bench.cost();
      List<ServerRef<CounterServer.Msg>> refs =
          startServers(
              dgen, servers, progress, StartOptions.builder(tenant).consumeK(consumeK).build());
      Scenarios.awaitIdle(bench, started, servers);
      commitLatency(bench, latency);
      CounterServer.AddAndGet add = new CounterServer.AddAndGet(1);
      round(refs, calls, add, new Latencies()); // warm-up

      AtomicBoolean sampling = new AtomicBoolean(true);
      AtomicLong maxThreads = new AtomicLong();
      AtomicLong maxWatches = new AtomicLong();
      Thread sampler =
          new Thread(
              () -> {
                while (sampling.get()) {
                  maxThreads.accumulateAndGet(Scenarios.liveThreads(), Math::max);
                  maxWatches.accumulateAndGet(bench.cost().outstandingWatches(), Math::max);
                  LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
                }
              },
              "bench-sampler");
      sampler.setDaemon(true);
      sampler.start();
      Cost before = bench.cost();
      long cpu0 = Scenarios.processCpuNanos();
      Latencies latencies = new Latencies();
      int rounds = Math.max(3, settings.rounds() * 2);
      long t0 = System.nanoTime();
      for (int r = 0; r < rounds; r++) {
        round(refs, calls, add, latencies);
      }
      long elapsed = System.nanoTime() - t0;
      sampling.set(false);
      Cost cost = bench.cost().minus(before);
      long cpu = Scenarios.processCpuNanos() - cpu0;
      commitLatency(bench, Duration.ZERO);
      long n = (long) rounds * calls;
      Map<String, Double> metrics = new LinkedHashMap<>();
      metrics.put("threads", (double) maxThreads.get());
      metrics.put("watches", (double) maxWatches.get());
      metrics.put("latencyMs", (double) latency.toMillis());
      return Scenarios.row(
          id,
          String.format(
              Locale.ROOT,
              "%,d concurrent callAsync to %d servers, K=%d, %s",
              calls,
              servers,
              consumeK,
              latencyLabel(latency)),
          n,
          elapsed,
          n * 1e9 / elapsed,
          latencies.summarize(),
          cost,
          n,
          cpu,
          metrics,
          String.format(
              Locale.ROOT,
              "%d rounds; at most %d live threads and %d watches while calls were in flight;"
                  + " consumer tx include the batched clears of read slots",
              rounds,
              maxThreads.get(),
              maxWatches.get()));
    }
  }

  /** Sends {@code calls} calls at once, round-robin over the servers, and waits for every reply. */
  private static <Q extends CounterServer.Msg & Call<Long>> void round(
      List<ServerRef<CounterServer.Msg>> refs, int calls, Q request, Latencies latencies) {
    List<CompletableFuture<Long>> replies = new ArrayList<>(calls);
    long[] done = new long[calls];
    long[] sent = new long[calls];
    for (int i = 0; i < calls; i++) {
      int slot = i;
      sent[i] = System.nanoTime();
      replies.add(
          refs.get(i % refs.size())
              .callAsync(request, CALL_TIMEOUT)
              .whenComplete((v, e) -> done[slot] = System.nanoTime()));
    }
    CompletableFuture.allOf(replies.toArray(CompletableFuture[]::new)).join();
    for (int i = 0; i < calls; i++) {
      latencies.add(done[i] - sent[i]);
    }
  }

  /** CPU time of the threads DGen and the memory backend run on (named {@code dgen-…}). */
  private static long dgenThreadsCpuNanos() {
    ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    long sum = 0;
    for (ThreadInfo t : threads.getThreadInfo(threads.getAllThreadIds())) {
      if (t != null && t.getThreadName().startsWith("dgen-")) {
        sum += Math.max(0, threads.getThreadCpuTime(t.getThreadId()));
      }
    }
    return sum;
  }

  /** Starts counters {@code 0..n-1} with {@code options}, one after the other. */
  private static List<ServerRef<CounterServer.Msg>> startServers(
      DGen dgen, int n, Progress progress, StartOptions options) {
    List<ServerRef<CounterServer.Msg>> refs = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      refs.add(dgen.start(new CounterServer(Tuple.from("counter", i), progress), null, options));
    }
    return refs;
  }
}
