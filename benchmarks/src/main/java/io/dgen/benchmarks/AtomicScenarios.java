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
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Atomic work across servers ({@code docs/atomic-work.md}): two-server transfers ({@code
 * DGen.transact}, a call on each of two accounts) over 1,000 hosted accounts, against single inline
 * calls on the same accounts measured in the same run, from eight threads of the holding runtime.
 * The row reports the transfers' throughput and latency, their ratio to the single calls', and the
 * aborted attempts per committed transfer (conflicts between transfers that share an account, and
 * retries while a server waits its turn).
 */
final class AtomicScenarios {

  private static final Duration APPLIED_TIMEOUT = Duration.ofMinutes(10);
  private static final Duration CALL_TIMEOUT = Duration.ofSeconds(30);
  private static final String KIND = "account";
  private static final int THREADS = 8;

  private final Settings settings;
  private final Target target;

  AtomicScenarios(Settings settings, Target target) {
    this.settings = settings;
    this.target = target;
  }

  /** One measured phase: its latencies, elapsed time and the backend's counters over it. */
  private record Phase(Latencies.Summary latency, long elapsedNanos, Cost cost, long ops) {
    double opsPerSecond() {
      return ops * 1e9 / elapsedNanos;
    }
  }

  /** What one operation does, given its number and its thread's random source. */
  private interface Op {
    void run(long i, ThreadLocalRandom random);
  }

  /** The row {@code atomic-transfer}. */
  Row transfers(String id) {
    int accounts = 1_000;
    long ops = Math.max(400, settings.throughput().concurrentCalls() * 4L);
    try (Bench bench = target.open(10_000)) {
      Progress progress = new Progress();
      DGen dgen = DGen.builder(bench.backend()).build();
      try {
        Tenant tenant = dgen.tenant(bench.root(), "atomic");
        dgen.host(
            KIND, () -> new CounterServer(null, progress), HostOptions.builder(tenant).build());
        ScaleOutScenarios.awaitAllBuckets(dgen, bench.backend(), tenant);
        List<ServerRef<CounterServer.Msg>> refs = new ArrayList<>(accounts);
        for (int a = 0; a < accounts; a++) {
          refs.add(dgen.ref(tenant, KIND, Tuple.from(a)));
        }
        ScaleOutScenarios.parallel(
            THREADS, accounts, n -> refs.get((int) n).cast(new CounterServer.Add(1_000)));
        progress.awaitAtLeast(accounts, APPLIED_TIMEOUT);
        Op single =
            (i, r) ->
                refs.get(r.nextInt(accounts)).call(new CounterServer.AddAndGet(0), CALL_TIMEOUT);
        Op transfer =
            (i, r) -> {
              int from = r.nextInt(accounts);
              int to = (from + 1 + r.nextInt(accounts - 1)) % accounts;
              dgen.transact(
                  tenant,
                  tx -> {
                    tx.prefetch(refs.get(from), refs.get(to)); // one round of reads for both
                    tx.call(refs.get(from), new CounterServer.AddAndGet(-1));
                    return tx.call(refs.get(to), new CounterServer.AddAndGet(1));
                  });
            };
        measure(bench, ops / 4, single); // warm-up: JIT, caches
        measure(bench, ops / 4, transfer);
        Phase singles = measure(bench, ops, single);
        long cpu0 = Scenarios.processCpuNanos();
        Phase transfers = measure(bench, ops, transfer);
        long cpu = Scenarios.processCpuNanos() - cpu0;
        double ratio = transfers.opsPerSecond() / singles.opsPerSecond();
        double abortsPerCommit = (double) transfers.cost().transactionsRetried() / ops;
        Map<String, Double> metrics = new LinkedHashMap<>();
        metrics.put("singleOpsPerSecond", singles.opsPerSecond());
        metrics.put("singleP50Micros", singles.latency().p50Micros());
        metrics.put("singleP99Micros", singles.latency().p99Micros());
        metrics.put("ratioToSingle", ratio);
        metrics.put("abortsPerCommit", abortsPerCommit);
        return Scenarios.row(
            id,
            String.format(
                "two-server transfer (DGen.transact), %,d accounts, %d threads", accounts, THREADS),
            ops,
            transfers.elapsedNanos(),
            transfers.opsPerSecond(),
            transfers.latency(),
            transfers.cost(),
            ops,
            cpu,
            metrics,
            String.format(
                "%.2f x single inline calls (%,.0f/s, p50 %.2f ms, p99 %.2f ms); %.3f aborted"
                    + " attempts per commit",
                ratio,
                singles.opsPerSecond(),
                singles.latency().p50Micros() / 1e3,
                singles.latency().p99Micros() / 1e3,
                abortsPerCommit));
      } finally {
        dgen.close();
      }
    }
  }

  /** Runs {@code count} operations from {@link #THREADS} threads, timing each. */
  private static Phase measure(Bench bench, long count, Op op) {
    List<Latencies> each = new CopyOnWriteArrayList<>();
    ThreadLocal<Latencies> mine =
        ThreadLocal.withInitial(
            () -> {
              Latencies l = new Latencies();
              each.add(l);
              return l;
            });
    Cost before = bench.cost();
    long t0 = System.nanoTime();
    ScaleOutScenarios.parallel(
        THREADS,
        count,
        i -> {
          long s = System.nanoTime();
          op.run(i, ThreadLocalRandom.current());
          mine.get().add(System.nanoTime() - s);
        });
    long elapsed = System.nanoTime() - t0;
    Latencies all = new Latencies();
    each.forEach(all::addAll);
    return new Phase(all.summarize(), elapsed, bench.cost().minus(before), count);
  }
}
