package io.dgen.benchmarks;

import com.apple.foundationdb.subspace.Subspace;
import com.apple.foundationdb.tuple.Tuple;
import io.dgen.DGen;
import io.dgen.DGenListener;
import io.dgen.HostOptions;
import io.dgen.Tenant;
import io.dgen.backend.Backend;
import io.dgen.backend.CountingBackend;
import io.dgen.benchmarks.Target.Bench;
import io.dgen.internal.keys.Buckets;
import io.dgen.internal.keys.TenantKeys;
import io.dgen.testkit.ManualClock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The expiry of idle hosted servers ({@code HostOptions.expireAfter}): a million servers of a kind
 * with {@code expireAfter(1 h)}, none touched after it was made, collected by their buckets' holder
 * once a manual clock passed their expiry. The servers are made as {@code idle-hosted} makes them:
 * {@value ScaleOutScenarios#IDLE_TEMPLATES} through the runtime (one cast each, then unloaded,
 * which records their expiry), the rest copies of their keys ({@link IdleCopies}), each copy
 * indexed for expiry in its own bucket.
 */
final class ExpiryScenarios {

  /** System property: the servers of the {@code expiry-hosted} row (default: idle servers). */
  static final String EXPIRY_HOSTED_PROPERTY = "dgen.bench.expiryHosted";

  private static final String KIND = "session";
  private static final Duration EXPIRY = Duration.ofHours(1);

  /** How often a holder collects, for this expiry: the longest wait before a collection starts. */
  private static final Duration PERIOD = Duration.ofMinutes(1);

  private final Settings settings;
  private final Target target;

  ExpiryScenarios(Settings settings, Target target) {
    this.settings = settings;
    this.target = target;
  }

  /**
   * {@code expiry-hosted}: how long the holder takes to collect every expired server, in how many
   * transactions, and the most keys one of them wrote (bounded by the collection's chunk, not by
   * the servers).
   */
  Row expiryHosted() {
    int n = Integer.getInteger(EXPIRY_HOSTED_PROPERTY, settings.idleServers());
    int made = Math.min(n, ScaleOutScenarios.IDLE_TEMPLATES);
    ManualClock clock = new ManualClock(Instant.parse("2026-03-01T10:00:00Z"));
    try (Bench bench = target.open(10_000)) {
      Backend backend = bench.backend();
      long t0 = System.nanoTime();
      TenantKeys keys = make(backend, bench.root(), clock, made, n);
      long makeNanos = System.nanoTime() - t0;

      CountingBackend counting = CountingBackend.wrap(backend);
      AtomicLong expired = new AtomicLong();
      try (DGen holder =
          DGen.builder(counting)
              .clock(clock)
              .listener(
                  new DGenListener() {
                    @Override
                    public void serverExpired(Tenant tenant, Tuple tuid) {
                      expired.incrementAndGet();
                    }
                  })
              .build()) {
        Tenant tenant = holder.tenant(bench.root(), "expiry");
        holder.host(KIND, () -> new CounterServer(null, new Progress()), options(tenant).build());
        ScaleOutScenarios.awaitAllBuckets(holder, backend, tenant);

        clock.advance(EXPIRY.plusSeconds(1));
        counting.resetMostWritesPerCommit();
        Cost before = bench.cost();
        long cpu0 = Scenarios.processCpuNanos();
        long c0 = System.nanoTime();
        holder.clockAdvanced(); // collects in this thread, as the periodic collection would
        long collectNanos = System.nanoTime() - c0;
        long cpu = Scenarios.processCpuNanos() - cpu0;
        Cost cost = bench.cost().minus(before);
        checkNoneLeft(backend, keys, tenant);
        if (expired.get() != n) {
          throw new IllegalStateException(expired.get() + " of " + n + " servers expired");
        }
        double withinMinutes = (PERIOD.toNanos() + collectNanos) / 60e9;
        Map<String, Double> metrics = new LinkedHashMap<>();
        metrics.put("servers", (double) n);
        metrics.put("collected", (double) expired.get());
        metrics.put("collectSeconds", collectNanos / 1e9);
        metrics.put("withinMinutes", withinMinutes);
        metrics.put("transactions", (double) cost.transactionsCommitted());
        metrics.put("maxKeysWrittenPerTx", (double) counting.mostWritesPerCommit());
        metrics.put("makeSeconds", makeNanos / 1e9);
        return Scenarios.row(
            "expiry-hosted",
            String.format(
                "%,d hosted servers, expireAfter(1 h), none touched: collected past the expiry", n),
            n,
            collectNanos,
            n * 1e9 / collectNanos,
            null,
            cost,
            -1,
            cpu,
            metrics,
            String.format(
                "collected %,d in %.1f s (%,d transactions, at most %d keys written by one); with"
                    + " a collection every %d s, all within %.1f min of their expiry (manual"
                    + " clock); made in %.1f s",
                expired.get(),
                collectNanos / 1e9,
                cost.transactionsCommitted(),
                counting.mostWritesPerCommit(),
                PERIOD.toSeconds(),
                withinMinutes,
                makeNanos / 1e9));
      }
    }
  }

  private static HostOptions.Builder options(Tenant tenant) {
    return HostOptions.builder(tenant).idleTimeout(Duration.ofSeconds(1)).expireAfter(EXPIRY);
  }

  /**
   * Makes {@code n} idle servers with an expiry: {@code made} through a runtime, unloaded after a
   * second idle, the rest copies.
   */
  private static TenantKeys make(
      Backend backend, String root, ManualClock clock, int made, long n) {
    TenantKeys keys;
    Subspace space;
    try (DGen maker = DGen.builder(backend).clock(clock).build()) {
      Tenant tenant = maker.tenant(root, "expiry");
      space = tenant.subspace();
      keys = new TenantKeys(space, Buckets.of(tenant.bucketCount()));
      Progress applied = new Progress();
      maker.host(KIND, () -> new CounterServer(null, applied), options(tenant).build());
      ScaleOutScenarios.awaitAllBuckets(maker, backend, tenant);
      ScaleOutScenarios.parallel(
          8, made, i -> maker.ref(tenant, KIND, Tuple.from(i)).cast(new CounterServer.Add(1)));
      applied.awaitAtLeast(made, Duration.ofMinutes(10));
      ScaleOutScenarios.awaitNoneReady(backend, tenant);
    }
    List<Tuple> templates = new ArrayList<>(made);
    for (int i = 0; i < made; i++) {
      templates.add(Tuple.from(KIND, (long) i));
    }
    IdleCopies copies = IdleCopies.read(backend, space, keys, templates);
    copies.write(backend, made, n, 8, i -> Tuple.from(KIND, i));
    return keys;
  }

  /** Fails unless the tenant has no server and no expiry index entry left. */
  private static void checkNoneLeft(Backend backend, TenantKeys keys, Tenant tenant) {
    Subspace servers = keys.servers();
    int buckets = tenant.bucketCount();
    backend.run(
        tx -> {
          if (!tx.getRange(servers.range().begin, servers.range().end, 1, false).isEmpty()) {
            throw new IllegalStateException("a server is left after the collection");
          }
          for (int b = 0; b < buckets; b++) {
            Subspace index = keys.expiring(KIND, b);
            if (!tx.getRange(index.range().begin, index.range().end, 1, false).isEmpty()) {
              throw new IllegalStateException("an expiry index entry is left in bucket " + b);
            }
          }
          return null;
        });
  }
}
