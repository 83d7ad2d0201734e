package io.dgen.benchmarks;

import com.apple.foundationdb.subspace.Subspace;
import com.apple.foundationdb.tuple.ByteArrayUtil;
import com.apple.foundationdb.tuple.Tuple;
import io.dgen.DGen;
import io.dgen.HostOptions;
import io.dgen.ServerRef;
import io.dgen.StartOptions;
import io.dgen.Tenant;
import io.dgen.backend.Backend;
import io.dgen.backend.KeyHeatBackend;
import io.dgen.backend.rocksdb.RocksDbBackend;
import io.dgen.benchmarks.Target.Bench;
import io.dgen.internal.keys.Buckets;
import io.dgen.internal.keys.TenantKeys;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.jspecify.annotations.Nullable;

/**
 * The scale-out rows that run in one JVM (see {@code docs/scale-out.md}): the hottest key of a
 * tenant's wake path, a cast through a ref against one through a started process, and idle hosted
 * servers. The multi-JVM rows are {@link JvmScenarios}'.
 */
final class ScaleOutScenarios {

  private static final Duration APPLIED_TIMEOUT = Duration.ofMinutes(10);
  private static final String KIND = "counter";
  private static final CounterServer.Add ONE = new CounterServer.Add(1);
  private static final int DEFAULT_MAX_WATCHES = 10_000;

  /** Overrides the number of idle hosted servers ({@code -Ddgen.bench.idleHosted=N}). */
  static final String IDLE_HOSTED_PROPERTY = "dgen.bench.idleHosted";

  private final Settings settings;
  private final Target target;
  private @Nullable Row refRow;
  private @Nullable Row startedRow;

  ScaleOutScenarios(Settings settings, Target target) {
    this.settings = settings;
    this.target = target;
  }

  // ---------------------------------------------------------------- the hottest key

  /**
   * {@code servers} uniformly loaded servers of one tenant, hosted (addressed by ref) or started,
   * four casts each from eight publishers: the committed mutations of the hottest key or appended
   * range per message. A hosting runtime's member record (its heartbeat, once a second whatever the
   * load) is not a key messages touch and is left out.
   */
  Row hotKey(String id, boolean hosted, int consumeK) {
    int servers = settings.throughput().drainServersK1();
    int perServer = 4;
    try (Bench bench = target.open(DEFAULT_MAX_WATCHES)) {
      KeyHeatBackend heat = KeyHeatBackend.wrap(bench.backend());
      PushMeter pushes = new PushMeter();
      try (DGen dgen = DGen.builder(heat).meterRegistry(pushes.registry).build()) {
        Tenant tenant = dgen.tenant(bench.root(), "hot");
        Progress progress = new Progress();
        List<ServerRef<CounterServer.Msg>> refs = new ArrayList<>(servers);
        if (hosted) {
          dgen.host(
              KIND,
              () -> new CounterServer(null, progress),
              HostOptions.builder(tenant).consumeK(consumeK).build());
          for (int s = 0; s < servers; s++) {
            refs.add(dgen.ref(tenant, KIND, Tuple.from(s)));
          }
        } else {
          StartOptions options = StartOptions.builder(tenant).consumeK(consumeK).build();
          for (int s = 0; s < servers; s++) {
            refs.add(dgen.start(new CounterServer(Tuple.from(KIND, s), progress), null, options));
          }
        }
        heat.reset(); // what the messages cost, not the starts
        Cost before = bench.cost();
        long pushed0 = pushes.transactions();
        long cpu0 = Scenarios.processCpuNanos();
        long t0 = System.nanoTime();
        long messages = (long) servers * perServer;
        parallel(8, messages, n -> refs.get((int) (n % servers)).cast(ONE));
        long end = progress.awaitAtLeast(messages, APPLIED_TIMEOUT);
        long elapsed = end - t0;
        Cost cost = bench.cost().minus(before);
        long cpu = Scenarios.processCpuNanos() - cpu0;
        byte[] members =
            new TenantKeys(tenant.subspace(), Buckets.of(tenant.bucketCount())).members().getKey();
        KeyHeatBackend.Hot hottest = heat.hottestOutside(members).orElseThrow();
        double perMessage = (double) hottest.mutations() / messages;
        Map<String, Double> metrics = new LinkedHashMap<>();
        metrics.put("hottestPerMessage", perMessage);
        return Scenarios.row(
            id,
            String.format(
                "hottest key, %,d %s servers, K=%d, %d casts each",
                servers, hosted ? "hosted" : "started", consumeK, perServer),
            messages,
            elapsed,
            messages * 1e9 / elapsed,
            null,
            cost,
            pushes.transactions() - pushed0,
            cpu,
            metrics,
            String.format(
                "hottest: %s %s, %,d mutations = %.4f per message (target ≤ 0.01)",
                hottest.appended() ? "appended range" : "key",
                describe(tenant.subspace(), hottest.key()),
                hottest.mutations(),
                perMessage));
      }
    }
  }

  /** A key of the tenant as its tuple under the tenant, where it is one. */
  private static String describe(Subspace tenant, byte[] key) {
    if (!tenant.contains(key)) {
      return ByteArrayUtil.printable(key);
    }
    try {
      return tenant.unpack(key).toString();
    } catch (RuntimeException prefixOfAnAppendedRange) {
      return ByteArrayUtil.printable(key);
    }
  }

  // ---------------------------------------------------------------- ref against start

  /** Casts through refs to hosted servers (the runtime hosts the kind). */
  Row castRef() {
    if (refRow == null) {
      refAndStarted();
    }
    return refRow;
  }

  /** Casts through the refs of started processes, the same servers and load. */
  Row castStarted() {
    if (startedRow == null) {
      refAndStarted();
    }
    return startedRow;
  }

  private void refAndStarted() {
    startedRow = casts("cast-started", false, null);
    refRow = casts("cast-ref", true, startedRow);
  }

  /**
   * {@code callServers} servers, K=16, casts spread over them from eight publishers; every server
   * has applied one message before the measured interval (a ref's first message activates its
   * server: a one-time cost, not the steady state).
   */
  private Row casts(String id, boolean hosted, @Nullable Row against) {
    int servers = settings.throughput().callServers();
    long messages = Math.max(1_000L, servers * 20L); // enough for the CPU clock to tick
    PushMeter pushes = new PushMeter();
    try (Bench bench = target.open(DEFAULT_MAX_WATCHES);
        DGen dgen = DGen.builder(bench.backend()).meterRegistry(pushes.registry).build()) {
      Tenant tenant = dgen.tenant(bench.root(), "casts");
      Progress progress = new Progress();
      List<ServerRef<CounterServer.Msg>> refs = new ArrayList<>(servers);
      String refCost = "";
      if (hosted) {
        // what making refs costs, before this runtime hosts anything that could run meanwhile
        int many = 10_000;
        Cost before = bench.cost();
        for (int s = 0; s < many; s++) {
          dgen.ref(tenant, KIND, Tuple.from(s));
        }
        Cost c = bench.cost().minus(before);
        refCost =
            String.format(
                "; %,d ref() calls: %d transactions, %d reads",
                many,
                c.transactionsCommitted() + c.readOnlyCommits(),
                c.keysRead() + c.rangesRead());
        Cost hosting = bench.cost();
        dgen.host(
            KIND,
            () -> new CounterServer(null, progress),
            HostOptions.builder(tenant).consumeK(16).build());
        awaitSettled(dgen, bench, tenant, hosting);
        for (int s = 0; s < servers; s++) {
          refs.add(dgen.ref(tenant, KIND, Tuple.from(s)));
        }
      } else {
        StartOptions options = StartOptions.builder(tenant).consumeK(16).build();
        for (int s = 0; s < servers; s++) {
          refs.add(dgen.start(new CounterServer(Tuple.from(KIND, s), progress), null, options));
        }
      }
      for (ServerRef<CounterServer.Msg> r : refs) {
        r.cast(ONE);
      }
      progress.awaitAtLeast(servers, APPLIED_TIMEOUT);
      Cost before = bench.cost();
      long pushed0 = pushes.transactions();
      long cpu0 = Scenarios.processCpuNanos();
      long t0 = System.nanoTime();
      parallel(8, messages, n -> refs.get((int) (n % servers)).cast(ONE));
      long end = progress.awaitAtLeast(servers + messages, APPLIED_TIMEOUT);
      Cost cost = bench.cost().minus(before);
      long cpu = Scenarios.processCpuNanos() - cpu0;
      long pushTransactions = pushes.transactions() - pushed0;
      double batchReads = readsPerConsumerTransaction(cost, messages, pushTransactions);
      Row row =
          Scenarios.row(
              id,
              String.format(
                  "cast through %s, %d servers, K=16",
                  hosted ? "a ref (hosted)" : "a started process", servers),
              messages,
              end - t0,
              messages * 1e9 / (end - t0),
              null,
              cost,
              pushTransactions,
              cpu,
              Map.of("readsPerBatch", batchReads),
              "");
      if (against == null) {
        return row;
      }
      double extraBatchReads = batchReads - against.metric("readsPerBatch");
      String note =
          String.format(
              "÷ started: reads/msg %.3f, bytes/msg %.3f, commits/msg %.3f (target within"
                  + " 10%%); reads per consumer transaction %+.2f (the lease)%s",
              row.readsPerMessage() / against.readsPerMessage(),
              row.bytesWrittenPerMessage() / against.bytesWrittenPerMessage(),
              row.commitsPerMessage() / against.commitsPerMessage(),
              extraBatchReads,
              refCost);
      return Scenarios.row(
          id,
          row.label(),
          messages,
          end - t0,
          row.opsPerSecond(),
          null,
          cost,
          pushTransactions,
          cpu,
          Map.of(
              "readsRatio",
              row.readsPerMessage() / against.readsPerMessage(),
              "bytesRatio",
              row.bytesWrittenPerMessage() / against.bytesWrittenPerMessage(),
              "readsPerBatch",
              batchReads,
              "extraReadsPerBatch",
              extraBatchReads),
          note);
    }
  }

  /**
   * The reads of a consumer transaction (a batch, or an idle batch that found nothing), net of the
   * one read of every push (its server's index entry): what the reads per message would be with one
   * message per batch. Reads per message depend on how full the batches were, which depends on
   * timing (a consumer that keeps up takes one message a batch, one that falls behind takes K);
   * reads per batch do not. The watcher's reads of a bucket's wake log and a hosting runtime's
   * placement rounds count here too: a few per hundred transactions.
   */
  private static double readsPerConsumerTransaction(Cost cost, long messages, long pushes) {
    // every cast reads its server's entry, whether or not it shared its push transaction
    long consumerTransactions = cost.transactionsCommitted() - pushes + cost.readOnlyCommits();
    return (double) (cost.keysRead() + cost.rangesRead() - messages) / consumerTransactions;
  }

  // ---------------------------------------------------------------- idle hosted servers

  /** How many idle hosted servers the runtime makes itself; the rest are copies of them. */
  static final int IDLE_TEMPLATES = 64;

  /** Overrides {@link #IDLE_TEMPLATES} ({@code -Ddgen.bench.idleHostedMade=N}). */
  static final String IDLE_MADE_PROPERTY = "dgen.bench.idleHostedMade";

  /** How many copied servers answer a message at the end of the row. */
  private static final int IDLE_CHECKED = 20;

  /**
   * {@code n} servers with stored state, none active, hosted by one runtime, then measured in a
   * fresh runtime that hosts the kind and holds every bucket: its heap after GC, its watches and
   * its idle CPU once its doorbell has settled, and a message to a random one of them (cast →
   * applied, which loads it) against a bare commit (get + set) on the same backend.
   *
   * <p>The servers: a first runtime makes {@value #IDLE_TEMPLATES} of them through the runtime (one
   * cast each through a ref, then evicted after a one-second idle time), and the rest are copies of
   * their keys under the other tuids, written by raw transactions ({@link IdleCopies}): making a
   * million through the runtime would take hours. The row's rate and CPU are this making's. At the
   * end, {@value #IDLE_CHECKED} random copies each answer a call through a ref with the state a
   * runtime-made server has (1, now 2).
   */
  Row idleHosted() {
    int n = Integer.getInteger(IDLE_HOSTED_PROPERTY, settings.idleServers());
    int made = Math.min(n, Integer.getInteger(IDLE_MADE_PROPERTY, IDLE_TEMPLATES));
    double heapBefore = Scenarios.heapMbAfterGc();
    try (Bench bench = target.open(DEFAULT_MAX_WATCHES)) {
      Backend backend = bench.backend();
      String tenantName = "idle-hosted";
      long makeCpu0 = Scenarios.processCpuNanos();
      long t0 = System.nanoTime();
      Made m = makeIdle(backend, bench.root(), tenantName, made, n, 8);
      TenantKeys keys = m.keys();
      String copiesNote = m.note();
      long madeNanos = System.nanoTime() - t0;
      long makeCpu = Scenarios.processCpuNanos() - makeCpu0;
      Cost before = bench.cost();
      SimpleMeterRegistry meters = new SimpleMeterRegistry();
      try (DGen dgen = DGen.builder(backend).meterRegistry(meters).build()) {
        Tenant tenant = dgen.tenant(bench.root(), tenantName);
        Progress progress = new Progress();
        long s0 = System.nanoTime();
        dgen.host(
            KIND, () -> new CounterServer(null, progress), HostOptions.builder(tenant).build());
        awaitSettled(dgen, bench, tenant, before);
        double settleSeconds = (System.nanoTime() - s0) / 1e9;
        SplittableRandom random = new SplittableRandom(7);
        java.util.Set<Integer> picked = new java.util.HashSet<>();
        List<Integer> checked = new ArrayList<>();
        for (int i = 0; i < IDLE_CHECKED && n > made; i++) {
          checked.add(pick(random, picked, made, n));
        }
        checkNoneActive(backend, keys, meters, checked);

        double heap = Scenarios.heapMbAfterGc();
        long watches = bench.cost().minus(before).outstandingWatches();
        long cpu0 = Scenarios.processCpuNanos();
        long w0 = System.nanoTime();
        LockSupport.parkNanos(TimeUnit.SECONDS.toNanos(5)); // measuring idleness: nothing to await
        double idleCores = (Scenarios.processCpuNanos() - cpu0) / (double) (System.nanoTime() - w0);

        // A message to an idle server, sent from the holding runtime (its push loads the server
        // itself) and from a runtime that hosts nothing (the holder hears of it through the
        // bucket's watch), each against a bare get + set timed right after it.
        Latencies wake = new Latencies();
        Latencies remoteWake = new Latencies();
        Latencies commit = new Latencies();
        byte[] key = backend.directory(bench.root(), "raw").pack(Tuple.from("counter"));
        int samples = Math.min(settings.wakeSamples(), (n - checked.size()) / 4);
        try (DGen sender = DGen.builder(backend).build()) {
          Tenant remote = sender.tenant(bench.root(), tenantName);
          for (int i = 0; i < 4 * samples; i++) {
            boolean fromHolder = i % 2 == 0;
            int id = pick(random, picked, 0, n); // a server no message has loaded yet
            ServerRef<CounterServer.Msg> ref =
                fromHolder
                    ? dgen.ref(tenant, KIND, Tuple.from(id))
                    : sender.ref(remote, KIND, Tuple.from(id));
            long target = progress.applied() + 1;
            long sent = System.nanoTime();
            ref.cast(ONE);
            long woken = progress.awaitAtLeast(target, APPLIED_TIMEOUT) - sent;
            long commit0 = System.nanoTime();
            backend.run(
                tx -> {
                  byte[] v = tx.get(key);
                  long x = v == null ? 0 : ByteBuffer.wrap(v).getLong();
                  tx.set(key, ByteBuffer.allocate(Long.BYTES).putLong(x + 1).array());
                  return null;
                });
            long committed = System.nanoTime() - commit0;
            if (i >= 2 * samples) { // the first half warms the paths up
              (fromHolder ? wake : remoteWake).add(woken);
              commit.add(committed);
            }
          }
        }
        for (int id : checked) {
          long now =
              dgen.ref(tenant, KIND, Tuple.from(id))
                  .call(new CounterServer.AddAndGet(1), Duration.ofMinutes(2));
          if (now != 2) {
            throw new IllegalStateException(
                "copied server " + id + " answered " + now + ", not 2: its copy is not faithful");
          }
        }
        Latencies.Summary w = wake.summarize();
        Latencies.Summary rw = remoteWake.summarize();
        Latencies.Summary c = commit.summarize();
        int buckets = tenant.bucketCount();
        Map<String, Double> metrics = new LinkedHashMap<>();
        metrics.put("servers", (double) n);
        metrics.put("buckets", (double) buckets);
        metrics.put("heapMb", heap);
        metrics.put("heapAddedMb", heap - heapBefore);
        metrics.put("watches", (double) watches);
        metrics.put("idleCores", idleCores);
        metrics.put("commitP50Micros", c.p50Micros());
        metrics.put("remoteP50Micros", rw.p50Micros());
        metrics.put("settleSeconds", settleSeconds);
        metrics.put("copiesChecked", (double) checked.size());
        return Scenarios.row(
            "idle-hosted",
            String.format(
                "%,d idle hosted servers, one runtime: a message = cast→applied (loads it)", n),
            n,
            madeNanos,
            n * 1e9 / madeNanos,
            w,
            null,
            -1,
            makeCpu,
            metrics,
            String.format(
                "heap after GC %.0f MB (%+.0f); %d watches for %d buckets held; idle CPU %.4f"
                    + " cores; message p50 %.1f ms = %.2f × a bare commit's p50 (%.1f ms), from"
                    + " a runtime that hosts nothing %.1f ms = %.2f ×;"
                    + " settled %.1f s after host; %s; %d copies answered 1 + 1 = 2, none was"
                    + " loaded or ready before",
                heap,
                heap - heapBefore,
                watches,
                buckets,
                idleCores,
                w.p50Micros() / 1e3,
                w.p50Micros() / c.p50Micros(),
                c.p50Micros() / 1e3,
                rw.p50Micros() / 1e3,
                rw.p50Micros() / c.p50Micros(),
                settleSeconds,
                copiesNote,
                checked.size()));
      }
    }
  }

  /** What {@link #makeIdle} made: the tenant's keys, and a note on how. */
  private record Made(TenantKeys keys, String note) {}

  /**
   * Makes {@code n} idle hosted servers of the tenant {@code tenantName}: {@code made} through a
   * runtime (one cast each, then evicted after a one-second idle time), the rest copies of their
   * keys ({@link IdleCopies}) written on {@code threads} threads.
   */
  private Made makeIdle(
      Backend backend, String root, String tenantName, int made, long n, int threads) {
    long t0 = System.nanoTime();
    TenantKeys keys;
    Subspace tenantSpace;
    long hostNanos;
    long castNanos;
    long appliedNanos;
    try (DGen maker = DGen.builder(backend).build()) {
      Tenant tenant = maker.tenant(root, tenantName);
      tenantSpace = tenant.subspace();
      keys = new TenantKeys(tenantSpace, Buckets.of(tenant.bucketCount()));
      Progress applied = new Progress();
      maker.host(
          KIND,
          () -> new CounterServer(null, applied),
          HostOptions.builder(tenant).idleTimeout(Duration.ofSeconds(1)).build());
      // casts while the runtime still takes its 1,024 buckets ran at half the rate
      awaitAllBuckets(maker, backend, tenant);
      long c0 = System.nanoTime();
      hostNanos = c0 - t0;
      parallel(8, made, i -> maker.ref(tenant, KIND, Tuple.from(i)).cast(ONE));
      castNanos = System.nanoTime() - c0;
      appliedNanos = applied.awaitAtLeast(made, APPLIED_TIMEOUT) - c0;
      awaitNoneReady(backend, tenant);
    }
    long viaRuntimeNanos = System.nanoTime() - t0;
    long copy0 = System.nanoTime();
    List<Tuple> templates = new ArrayList<>(made);
    for (int i = 0; i < made; i++) {
      templates.add(idleTuid(i));
    }
    IdleCopies copies = IdleCopies.read(backend, tenantSpace, keys, templates);
    copies.write(backend, made, n, threads, ScaleOutScenarios::idleTuid);
    String note =
        String.format(
            "made %d through the runtime in %.1f s (all buckets held after %.1f s, then cast"
                + " in %.1f s, applied in %.1f s, then evicted), copied %,d in %.1f s (%d"
                + " bytes each; %s)",
            made,
            viaRuntimeNanos / 1e9,
            hostNanos / 1e9,
            castNanos / 1e9,
            appliedNanos / 1e9,
            n - made,
            (System.nanoTime() - copy0) / 1e9,
            copies.bytesPerServer(),
            copies.description());
    return new Made(keys, note);
  }

  /** Overrides the number of servers of the {@code cold-servers} row. */
  static final String COLD_SERVERS_PROPERTY = "dgen.bench.coldServers";

  /**
   * Keeps the {@code cold-servers} row's data directory here, and reuses it when it already holds
   * that many servers (building ten million takes a while).
   */
  static final String COLD_DIR_PROPERTY = "dgen.bench.coldDir";

  /** Overrides the number of cold servers the {@code cold-servers} row sends a message to. */
  static final String COLD_SAMPLES_PROPERTY = "dgen.bench.coldSamples";

  /**
   * RocksDB only: {@code n} servers with stored state in one data directory, most of them more than
   * the heap holds. Builds them as {@link #idleHosted} does ({@link #makeIdle}), closes the
   * backend, then measures: the time to open the directory again, the heap after GC once a runtime
   * hosts the kind and is idle, and a cast to a random cold server (not loaded since the open, its
   * keys read from disk or the OS's page cache) until it is applied.
   */
  Row coldServers() {
    Boolean sync = target.rocksdbSync();
    if (sync == null) {
      throw new IllegalStateException("cold-servers runs on --backend rocksdb only");
    }
    int n = Integer.getInteger(COLD_SERVERS_PROPERTY, settings.idleServers());
    int made = Math.min(n, Integer.getInteger(IDLE_MADE_PROPERTY, IDLE_TEMPLATES));
    int samples = Integer.getInteger(COLD_SAMPLES_PROPERTY, Math.min(1_000, n / 4));
    String keep = System.getProperty(COLD_DIR_PROPERTY);
    String root = "bench";
    String tenantName = "cold";
    try {
      Path temp = keep == null ? Files.createTempDirectory("dgen-bench-cold") : null;
      Path dir = temp == null ? Path.of(keep) : temp.resolve("data");
      Path marker = dir.resolveSibling(dir.getFileName() + ".servers");
      try {
        String buildNote;
        long buildNanos = 0;
        long buildCpu = 0;
        if (Files.isRegularFile(marker)
            && Files.readString(marker).strip().equals(Integer.toString(n))) {
          buildNote = "reused the " + n + " servers in " + dir;
        } else {
          Target.deleteTree(dir);
          Files.deleteIfExists(marker);
          long cpu0 = Scenarios.processCpuNanos();
          long b0 = System.nanoTime();
          try (RocksDbBackend rocks = RocksDbBackend.builder(dir).sync(sync).open()) {
            buildNote = makeIdle(rocks, root, tenantName, made, n, 2).note();
          }
          buildNanos = System.nanoTime() - b0;
          buildCpu = Scenarios.processCpuNanos() - cpu0;
          Files.writeString(marker, n + "\n");
        }
        long o0 = System.nanoTime();
        RocksDbBackend backend =
            RocksDbBackend.builder(dir)
                .sync(sync)
                .engine(b -> b.maxWatches(DEFAULT_MAX_WATCHES))
                .open();
        long openNanos = System.nanoTime() - o0;
        Bench bench = new Bench(backend, root, () -> Cost.of(backend.counters()), () -> {});
        try (backend;
            DGen dgen = DGen.builder(backend).build()) {
          Tenant tenant = dgen.tenant(root, tenantName);
          Progress progress = new Progress();
          Cost before = bench.cost();
          dgen.host(
              KIND, () -> new CounterServer(null, progress), HostOptions.builder(tenant).build());
          awaitSettled(dgen, bench, tenant, before);
          double heap = Scenarios.heapMbAfterGc();
          int inMemory = backend.keysInMemory();
          SplittableRandom random = new SplittableRandom(11);
          java.util.Set<Integer> picked = new java.util.HashSet<>();
          Latencies cold = new Latencies();
          int warm = Math.max(1, samples / 10);
          Cost castsBefore = bench.cost();
          long c0 = System.nanoTime();
          for (int i = 0; i < warm + samples; i++) {
            ServerRef<CounterServer.Msg> ref =
                dgen.ref(tenant, KIND, Tuple.from(pick(random, picked, 0, n)));
            long target = progress.applied() + 1;
            long sent = System.nanoTime();
            ref.cast(ONE);
            long applied = progress.awaitAtLeast(target, APPLIED_TIMEOUT) - sent;
            if (i >= warm) { // the first ones warm the paths up
              cold.add(applied);
            }
          }
          long castNanos = System.nanoTime() - c0;
          Cost castCost = bench.cost().minus(castsBefore);
          // What one commit costs here (its log sync, mostly): a cast→applied is several.
          Latencies bare = new Latencies();
          byte[] counter = backend.directory(root, "raw").pack(Tuple.from("counter"));
          for (int i = 0; i < Math.min(samples, 200); i++) {
            long b0 = System.nanoTime();
            backend.run(
                tx -> {
                  byte[] v = tx.get(counter);
                  long x = v == null ? 0 : ByteBuffer.wrap(v).getLong();
                  tx.set(counter, ByteBuffer.allocate(Long.BYTES).putLong(x + 1).array());
                  return null;
                });
            bare.add(System.nanoTime() - b0);
          }
          Latencies.Summary bc = bare.summarize();
          Latencies.Summary c = cold.summarize();
          Map<String, Double> metrics = new LinkedHashMap<>();
          metrics.put("servers", (double) n);
          metrics.put("heapMb", heap);
          metrics.put("openMillis", openNanos / 1e6);
          metrics.put("keysInMemory", (double) inMemory);
          metrics.put("coldP50Micros", c.p50Micros());
          metrics.put("coldP99Micros", c.p99Micros());
          metrics.put("buildSeconds", buildNanos / 1e9);
          metrics.put("commitP50Micros", bc.p50Micros());
          return Scenarios.row(
              "cold-servers",
              String.format(
                  "%,d servers on disk, one runtime: open, idle heap, a cast to a cold one", n),
              warm + samples,
              castNanos,
              (warm + samples) * 1e9 / castNanos,
              c,
              castCost,
              warm + samples,
              buildCpu,
              metrics,
              String.format(
                  "open %.0f ms; heap after GC while idle %.0f MB (max %d MB), %,d keys in the"
                      + " engine's heap; cold cast→applied p50 %.2f ms p99 %.2f ms over %d"
                      + " servers (a bare get+set commit: p50 %.2f ms p99 %.2f ms); built in %.0f"
                      + " s: %s",
                  openNanos / 1e6,
                  heap,
                  Runtime.getRuntime().maxMemory() >> 20,
                  inMemory,
                  c.p50Micros() / 1e3,
                  c.p99Micros() / 1e3,
                  samples,
                  bc.p50Micros() / 1e3,
                  bc.p99Micros() / 1e3,
                  buildNanos / 1e9,
                  buildNote));
        }
      } finally {
        if (temp != null) {
          Target.deleteTree(temp);
        }
      }
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  /**
   * The tuid of idle hosted server {@code i}: what {@code ref(tenant, KIND, Tuple.from(i))} uses.
   */
  private static Tuple idleTuid(long i) {
    return Tuple.from(KIND, i);
  }

  /** A number in [{@code from}, {@code to}) not picked before. */
  private static int pick(
      SplittableRandom random, java.util.Set<Integer> picked, int from, int to) {
    while (true) {
      int i = random.nextInt(from, to);
      if (picked.add(i)) {
        return i;
      }
    }
  }

  /**
   * Checks that the runtime sees no server as active: none loaded, the ready index empty, and the
   * {@code sample}'s server index entries idle, as the runtime's eviction leaves them.
   */
  private static void checkNoneActive(
      Backend backend, TenantKeys keys, MeterRegistry meters, List<Integer> sample) {
    double loaded = meters.get("dgen.hosted.loaded").gauge().value();
    if (loaded != 0) {
      throw new IllegalStateException(loaded + " idle hosted servers loaded before any message");
    }
    Subspace ready = keys.ready();
    backend.run(
        tx -> {
          if (!tx.getRange(ready.range().begin, ready.range().end, 1, false).isEmpty()) {
            throw new IllegalStateException("an idle hosted server is ready before any message");
          }
          for (int id : sample) {
            byte[] entry = tx.get(keys.serverKey(idleTuid(id)));
            if (entry == null || entry.length != 2 || entry[0] != 0 || entry[1] != 0) {
              throw new IllegalStateException("copied server " + id + " is not idle in the index");
            }
          }
          return null;
        });
  }

  /** Waits until no hosted server of {@code tenant} is ready (every one evicted). */
  static void awaitNoneReady(Backend backend, Tenant tenant) {
    Subspace ready = new TenantKeys(tenant.subspace(), Buckets.of(tenant.bucketCount())).ready();
    long deadline = System.nanoTime() + APPLIED_TIMEOUT.toNanos();
    while (!backend
        .run(tx -> tx.getRange(ready.range().begin, ready.range().end, 1, false))
        .isEmpty()) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("hosted servers still ready after " + APPLIED_TIMEOUT);
      }
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(200));
    }
  }

  /**
   * Waits until {@code dgen}, alone in the tenant, holds the lease of every bucket and its doorbell
   * has settled: the watches outstanding since {@code since} have not changed for {@value
   * #SETTLED_MILLIS} ms (polled; at most {@link #SETTLE_TIMEOUT}). What is measured after is the
   * steady state, not the start-up of the placement, whose doorbell arms a watch per bucket taken
   * over several cycles.
   */
  private static void awaitSettled(DGen dgen, Bench bench, Tenant tenant, Cost since) {
    awaitAllBuckets(dgen, bench.backend(), tenant);
    long deadline = System.nanoTime() + SETTLE_TIMEOUT.toNanos();
    long last = -1;
    long unchangedSince = System.nanoTime();
    while (true) {
      long watches = bench.cost().minus(since).outstandingWatches();
      long now = System.nanoTime();
      if (watches != last) {
        last = watches;
        unchangedSince = now;
      } else if (now - unchangedSince >= TimeUnit.MILLISECONDS.toNanos(SETTLED_MILLIS)) {
        return;
      }
      if (now > deadline) {
        throw new IllegalStateException(
            "the doorbell's watches did not settle within " + SETTLE_TIMEOUT + ": " + watches);
      }
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(100));
    }
  }

  /** How long the watch count must stay unchanged to count as settled. */
  private static final long SETTLED_MILLIS = 3_000;

  private static final Duration SETTLE_TIMEOUT = Duration.ofMinutes(3);

  /** Waits until {@code dgen} holds the lease of every bucket of the kind. */
  static void awaitAllBuckets(DGen dgen, Backend backend, Tenant tenant) {
    long deadline = System.nanoTime() + APPLIED_TIMEOUT.toNanos();
    io.dgen.admin.TenantAdmin admin =
        new io.dgen.admin.DGenAdmin(backend)
            .tenant(tenant.path().toArray(String[]::new))
            .orElseThrow();
    while (admin.leases().stream().filter(l -> dgen.memberId().equals(l.holder())).count()
        < tenant.bucketCount()) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("the runtime did not take every bucket");
      }
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(100));
    }
  }

  // ---------------------------------------------------------------- helpers

  /** Runs {@code send(0 … count-1)} on {@code threads} threads, each index once. */
  static void parallel(int threads, long count, LongSender send) {
    ExecutorService pool = Executors.newFixedThreadPool(threads, ScaleOutScenarios::daemon);
    AtomicLong next = new AtomicLong();
    try {
      List<Future<?>> running = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        running.add(
            pool.submit(
                () -> {
                  long i;
                  while ((i = next.getAndIncrement()) < count) {
                    send.send(i);
                  }
                  return null;
                }));
      }
      for (Future<?> f : running) {
        f.get();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    } catch (java.util.concurrent.ExecutionException e) {
      throw new IllegalStateException("a publisher failed", e.getCause());
    } finally {
      pool.shutdownNow();
    }
  }

  /** A daemon thread: a scenario that fails leaves none behind to keep the program alive. */
  static Thread daemon(Runnable r) {
    Thread t = new Thread(r, "bench-scale-out");
    t.setDaemon(true);
    return t;
  }

  /** Sends message number {@code i}. */
  @FunctionalInterface
  interface LongSender {
    void send(long i);
  }
}
