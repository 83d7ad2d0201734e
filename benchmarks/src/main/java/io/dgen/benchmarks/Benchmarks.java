package io.dgen.benchmarks;

import io.dgen.StateEncoding;
import java.io.PrintStream;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.time.Duration;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import org.jspecify.annotations.Nullable;

/**
 * The benchmark program: runs every scenario on the in-memory backend, the embedded RocksDB backend
 * or FoundationDB, and prints one table.
 *
 * <pre>
 * mvn -B -q -pl benchmarks -am test-compile exec:java                        # about 4.5 minutes
 * mvn -B -q -pl benchmarks -am test-compile exec:java -Dexec.args="--quick"  # about 2 minutes
 * mvn -B -q -pl benchmarks -am test-compile exec:java -Dexec.args="--only cast-k64,call-inline"
 * DGEN_FDB_HOME=../shared/fdb \
 *   mvn -B -q -pl benchmarks -am test-compile exec:java -Dexec.args="--backend fdb"
 * mvn -B -q -pl benchmarks -am test-compile exec:java \
 *   -Dexec.args="--cluster-file /etc/foundationdb/fdb.cluster"
 * mvn -B -q -pl benchmarks -am test-compile exec:java \
 *   -Dexec.args="--backend rocksdb --only cast-k1,cast-k64,call-inline,call-queued"
 * </pre>
 *
 * <p>{@code test-compile}, not {@code compile}: {@code exec:java} resolves the test-scoped
 * dependencies of every module of the reactor, among them the test-jars, which exist only once the
 * test classes are compiled.
 *
 * <p>{@code --backend fdb} uses {@code --cluster-file}, else {@code FDB_CLUSTER_FILE}, else starts
 * a throwaway one-process cluster from a local FoundationDB installation ({@code DGEN_FDB_HOME} or
 * {@code fdbserver} on the {@code PATH}), as the tests do.
 *
 * <p>The scale-out rows ({@code hot-*}, {@code cast-ref}, {@code cast-started}, {@code
 * idle-hosted}) run on every backend; {@code idle-hosted} sets up {@code -Ddgen.bench.idleHosted=N}
 * servers (default: the idle scenario's), 64 made through the runtime and the rest copies of their
 * keys (the cluster the benchmarks start gets room for them in its memory engine, or {@code
 * -Ddgen.bench.fdbStorageMemory=SIZE}); {@code expiry-hosted} makes {@code
 * -Ddgen.bench.expiryHosted=N} servers the same way (same default), with {@code expireAfter(1 h)},
 * and times their collection once a manual clock passed their expiry. With {@code --backend fdb}
 * three more rows start child JVMs ({@link HostingMember}) on the same cluster: {@code
 * jvms-aborts}, {@code jvms-join} and {@code jvms-failover}, one sequence of about five minutes
 * here.
 *
 * <p>The table goes to standard output, progress to standard error. See {@code docs/performance.md}
 * for what each scenario measures and how to read it.
 */
public final class Benchmarks {

  private static final String USAGE =
      "[--quick] [--only ID,...] [--no-jit-warmup] [--backend memory|fdb|rocksdb] [--no-sync] [--cluster-file F]";

  private Benchmarks() {}

  /** A scenario to run: its row id and how to run it. */
  private record Planned(String id, Supplier<Row> run) {}

  /**
   * Runs the benchmarks.
   *
   * @param args {@code --quick} for a short run; {@code --only ID[,ID…]} for some scenarios; {@code
   *     --no-jit-warmup} to skip the JIT warm-up (for a profile of one scenario alone); {@code
   *     --backend memory|fdb|rocksdb} (default memory); {@code --no-sync} for RocksDB without
   *     waiting for the log syncs; {@code --cluster-file F} for FoundationDB on the cluster {@code
   *     F}
   */
  public static void main(String[] args) {
    boolean quick = false;
    boolean jitWarmup = true;
    Set<String> only = null;
    String backend = "memory";
    boolean sync = true;
    Path clusterFile = null;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--backend":
          if (i + 1 >= args.length || !Set.of("memory", "fdb", "rocksdb").contains(args[i + 1])) {
            throw new IllegalArgumentException("--backend needs memory, fdb or rocksdb");
          }
          backend = args[++i];
          break;
        case "--cluster-file":
          if (i + 1 >= args.length) {
            throw new IllegalArgumentException("--cluster-file needs a path");
          }
          clusterFile = Path.of(args[++i]);
          backend = "fdb";
          break;
        case "--no-sync":
          sync = false;
          break;
        case "--quick":
          quick = true;
          break;
        case "--only":
          if (i + 1 >= args.length) {
            throw new IllegalArgumentException("--only needs a comma-separated list of ids");
          }
          only = new LinkedHashSet<>(Arrays.asList(args[++i].split(",")));
          break;
        case "--no-jit-warmup":
          jitWarmup = false;
          break;
        case "--help":
          System.out.println("usage: Benchmarks " + USAGE + "\nids: " + String.join(", ", ids()));
          return;
        default:
          throw new IllegalArgumentException("unknown argument " + args[i] + "; usage: " + USAGE);
      }
    }
    Settings settings = quick ? Settings.quick() : Settings.standard();
    try (Target target =
        switch (backend) {
          case "fdb" -> Target.fdb(clusterFile);
          case "rocksdb" -> Target.rocksdb(sync);
          default -> Target.memory();
        }) {
      Report report =
          run(jitWarmup ? settings : settings.withoutJitWarmup(), target, only, System.err);
      System.out.print(report.render());
    }
  }

  /** The scenario ids, in the order the table lists them. */
  static List<String> ids() {
    return plan(Settings.tiny(), Target.memory()).stream()
        .map(Planned::id)
        .collect(Collectors.toList());
  }

  private static List<Planned> plan(Settings settings, Target target) {
    List<Planned> plan = new ArrayList<>(classic(settings, target));
    plan.addAll(atLatency(settings, target));
    plan.addAll(scaleOut(settings, target));
    return plan;
  }

  private static List<Planned> classic(Settings settings, Target target) {
    Scenarios s = new Scenarios(settings, target);
    TimerScenarios timers = new TimerScenarios(settings, target);
    LimitScenarios limits = new LimitScenarios(settings, target);
    return List.of(
        new Planned("raw-tx", s::rawTransactions),
        new Planned("plain-actor", s::plainActor),
        new Planned("cast-k1", () -> s.casts(1, false)),
        new Planned("cast-k16", () -> s.casts(16, false)),
        new Planned("cast-k64", () -> s.casts(64, false)),
        new Planned("cast-k64-otel-api", () -> s.casts(64, false, false, true)),
        new Planned("cast-k256", () -> s.casts(256, false)),
        new Planned("cast-plain-k64", () -> s.casts(64, true)),
        new Planned("cast-keyed-k64", () -> s.casts(64, true, true)),
        new Planned(
            "call-inline",
            () ->
                s.calls(
                    "call-inline",
                    "inline call K=1, AddAndGet (writes), sequential",
                    1,
                    new CounterServer.AddAndGet(1),
                    "1 tx in the caller's thread")),
        new Planned(
            "call-inline-read",
            () ->
                s.calls(
                    "call-inline-read",
                    "inline call K=1, Get (read-only), sequential",
                    1,
                    new CounterServer.Get(),
                    "read-only: nothing committed")),
        new Planned(
            "call-queued",
            () ->
                s.calls(
                    "call-queued",
                    "queued call K=2, AddAndGet, sequential",
                    2,
                    new CounterServer.AddAndGet(1),
                    "push + batch + read; slots cleared in batches")),
        new Planned("servers", s::manyServers),
        new Planned(
            "wide-1", () -> s.wideState("wide-1", StateEncoding.STRUCTURED, 1, false, false)),
        new Planned("wide-structured", () -> s.wideState(StateEncoding.STRUCTURED, false)),
        new Planned("wide-term", () -> s.wideState(StateEncoding.TERM, false)),
        new Planned("wide-mutable-structured", () -> s.wideState(StateEncoding.STRUCTURED, true)),
        new Planned("wide-mutable-term", () -> s.wideState(StateEncoding.TERM, true)),
        new Planned("wide-all-structured", () -> s.wideStateAllChanged(StateEncoding.STRUCTURED)),
        new Planned("wide-all-term", () -> s.wideStateAllChanged(StateEncoding.TERM)),
        new Planned("markers", s::markers),
        new Planned("idle", s::idleServers),
        new Planned("timers-fire", timers::fire),
        new Planned("idle-timers", timers::idle),
        new Planned("timers-every", timers::every),
        new Planned("limit-rate", limits::rate),
        new Planned("limit-throttled", limits::throttledCpu));
  }

  /**
   * The throughput issue's rows (#13). On the memory backend each drain runs without and with
   * injected commit latency; on FoundationDB once, at the cluster's own latency.
   */
  private static List<Planned> atLatency(Settings settings, Target target) {
    LatencyScenarios l = new LatencyScenarios(settings, target);
    Settings.Throughput t = settings.throughput();
    List<Planned> rows = new ArrayList<>();
    for (int ms : target.isMemory() ? new int[] {0, 10} : new int[] {-1}) {
      String id = ms < 0 ? "drain-k16" : "drain-k16-" + ms + "ms";
      rows.add(
          new Planned(
              id, () -> l.drain(id, t.drainServersK16(), 16, latency(ms), t.drainPerServerK16())));
    }
    for (int ms : target.isMemory() ? new int[] {0, 5} : new int[] {-1}) {
      String id = ms < 0 ? "drain-k1" : "drain-k1-" + ms + "ms";
      rows.add(
          new Planned(
              id, () -> l.drain(id, t.drainServersK1(), 1, latency(ms), t.drainPerServerK1())));
    }
    rows.add(
        new Planned(
            "idle-cpu",
            () -> l.idle("idle-cpu", t.idleCpuServers(), Duration.ZERO, settings.wakeSamples())));
    rows.add(
        new Planned(
            "idle-many",
            () ->
                l.idle(
                    "idle-many",
                    t.idleManyServers(),
                    Duration.ofMillis(5),
                    Math.max(10, settings.wakeSamples() / 3))));
    rows.add(
        new Planned(
            "calls-async",
            () ->
                l.concurrentCalls(
                    "calls-async",
                    t.callServers(),
                    t.concurrentCalls(),
                    16,
                    Duration.ofMillis(5))));
    return rows;
  }

  /**
   * The scale-out rows: the hottest key of a tenant's wake path, ref against started casts, idle
   * hosted servers, and on FoundationDB the multi-JVM rows (three hosting JVMs, a join, a SIGKILL).
   */
  private static List<Planned> scaleOut(Settings settings, Target target) {
    ScaleOutScenarios s = new ScaleOutScenarios(settings, target);
    List<Planned> rows = new ArrayList<>();
    for (boolean hosted : new boolean[] {true, false}) {
      for (int k : new int[] {1, 16}) {
        String id = "hot-" + (hosted ? "hosted" : "started") + "-k" + k;
        rows.add(new Planned(id, () -> s.hotKey(id, hosted, k)));
      }
    }
    rows.add(new Planned("cast-started", s::castStarted));
    rows.add(new Planned("cast-ref", s::castRef));
    rows.add(new Planned("idle-hosted", s::idleHosted));
    rows.add(new Planned("expiry-hosted", new ExpiryScenarios(settings, target)::expiryHosted));
    if (target.rocksdbSync() != null) {
      rows.add(new Planned("cold-servers", s::coldServers));
    }
    ServicePathScenarios path = new ServicePathScenarios(settings, target);
    for (ServicePathScenarios.Caller c : ServicePathScenarios.Caller.values()) {
      String id = "svc-call-" + c.name().toLowerCase(java.util.Locale.ROOT);
      rows.add(new Planned(id, () -> path.sequentialCalls(id, c)));
    }
    AtomicScenarios atomic = new AtomicScenarios(settings, target);
    rows.add(new Planned("atomic-transfer", () -> atomic.transfers("atomic-transfer")));
    int servers = settings.throughput().drainServersK1();
    rows.add(
        new Planned("svc-casts-k1", () -> path.casts("svc-casts-k1", servers, 1, servers * 20L)));
    rows.add(
        new Planned("svc-casts-1-k16", () -> path.casts("svc-casts-1-k16", 1, 16, servers * 20L)));
    if (target.clusterFile() != null) {
      JvmScenarios jvms = new JvmScenarios(target);
      for (String id : List.of("jvms-aborts", "jvms-join", "jvms-failover")) {
        rows.add(new Planned(id, () -> jvms.row(id)));
      }
    }
    return rows;
  }

  /** An injected commit latency; negative: none injected (FoundationDB's own). */
  private static Duration latency(int ms) {
    return Duration.ofMillis(Math.max(0, ms));
  }

  /**
   * Runs the planned scenarios (all, or those in {@code only}) and returns the report. A JIT
   * warm-up runs first; then the idle scenarios, before the other scenarios leave garbage behind.
   *
   * @param settings sizes and durations
   * @param target the backend the scenarios run on
   * @param only the ids to run, or null for all
   * @param log where progress goes
   * @return the report
   */
  static Report run(Settings settings, Target target, @Nullable Set<String> only, PrintStream log) {
    List<Planned> plan = plan(settings, target);
    if (only != null) {
      Set<String> known = plan.stream().map(Planned::id).collect(Collectors.toSet());
      for (String id : only) {
        if (!known.contains(id)) {
          throw new IllegalArgumentException("unknown scenario " + id + "; ids: " + known);
        }
      }
    }
    List<Planned> chosen =
        plan.stream()
            .filter(p -> only == null || only.contains(p.id()))
            .collect(Collectors.toList());
    List<Planned> order = new ArrayList<>();
    chosen.stream().filter(p -> p.id().startsWith("idle")).forEach(order::add);
    chosen.stream().filter(p -> !p.id().startsWith("idle")).forEach(order::add);

    ZonedDateTime started = ZonedDateTime.now().truncatedTo(ChronoUnit.SECONDS);
    double loadBefore = loadAverage();
    long t0 = System.nanoTime();
    Row[] rows = new Row[chosen.size()];
    int done = 0;
    if (!settings.jitWarmup().isZero()) {
      warmUpJit(settings, target, log);
    }
    for (Planned p : order) {
      long s0 = System.nanoTime();
      log.printf(Locale.ROOT, "[%d/%d] %s …%n", ++done, order.size(), p.id());
      Row row = p.run().get();
      rows[chosen.indexOf(p)] = row;
      log.printf(
          Locale.ROOT,
          "      %s: %s ops/s in %.1f s%n",
          p.id(),
          Report.num(row.opsPerSecond(), 0),
          (System.nanoTime() - s0) / 1e9);
      System.gc();
    }
    double seconds = (System.nanoTime() - t0) / 1e9;
    List<String> header = header(settings, target, started, loadBefore, loadAverage(), seconds);
    return new Report(header, Arrays.asList(rows), settings, target.name());
  }

  /**
   * Runs the cast and call paths briefly and throws the rows away, so that the first measured
   * scenarios do not pay for the JIT compiling them.
   */
  private static void warmUpJit(Settings settings, Target target, PrintStream log) {
    long t0 = System.nanoTime();
    Scenarios s = new Scenarios(settings.forJitWarmup(), target);
    s.casts(1, false);
    s.casts(64, false);
    s.casts(64, false, false, true);
    s.casts(64, true);
    s.calls("jit-inline", "", 1, new CounterServer.AddAndGet(1), "");
    s.calls("jit-queued", "", 2, new CounterServer.AddAndGet(1), "");
    log.printf(Locale.ROOT, "      JIT warm-up in %.1f s%n", (System.nanoTime() - t0) / 1e9);
    System.gc();
  }

  private static List<String> header(
      Settings s,
      Target target,
      ZonedDateTime started,
      double loadBefore,
      double loadAfter,
      double seconds) {
    Runtime rt = Runtime.getRuntime();
    String gcs =
        ManagementFactory.getGarbageCollectorMXBeans().stream()
            .map(GarbageCollectorMXBean::getName)
            .collect(Collectors.joining(", "));
    return List.of(
        String.format(
            Locale.ROOT,
            "DGen benchmarks — %s — mode %s (warm-up %d ms, measured %d ms per timed scenario),"
                + " %.0f s in all",
            started.format(DateTimeFormatter.ISO_OFFSET_DATE_TIME),
            s.mode(),
            s.warmup().toMillis(),
            s.measure().toMillis(),
            seconds),
        String.format(
            Locale.ROOT,
            "JVM: %s %s (%s), GC %s, max heap %,d MB",
            System.getProperty("java.vm.name"),
            System.getProperty("java.runtime.version"),
            System.getProperty("java.vm.vendor"),
            gcs,
            rt.maxMemory() / (1024 * 1024)),
        String.format(
            Locale.ROOT,
            "machine: %d cores, %s %s %s, load average %.2f at start, %.2f at end",
            rt.availableProcessors(),
            System.getProperty("os.name"),
            System.getProperty("os.version"),
            System.getProperty("os.arch"),
            loadBefore,
            loadAfter),
        "backend: "
            + target.description()
            + "; DGen defaults (2+ worker threads, STRUCTURED state, cache on) unless the row"
            + " says otherwise");
  }

  private static double loadAverage() {
    return ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage();
  }
}
