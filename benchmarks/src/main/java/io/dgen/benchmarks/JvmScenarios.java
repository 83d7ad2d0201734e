package io.dgen.benchmarks;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.DGen;
import io.dgen.ServerRef;
import io.dgen.Tenant;
import io.dgen.admin.DGenAdmin;
import io.dgen.admin.TenantAdmin;
import io.dgen.benchmarks.LedgerServer.Credit;
import io.dgen.benchmarks.LedgerServer.Msg;
import io.dgen.benchmarks.LedgerServer.State;
import io.dgen.benchmarks.Target.Bench;
import io.dgen.fdbtest.LocalFdbServer;
import io.dgen.internal.hosting.Placement;
import io.dgen.internal.keys.Buckets;
import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.net.URISyntaxException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.Collectors;

/**
 * The multi-JVM scale-out rows, on FoundationDB only: child JVMs ({@link HostingMember}) host
 * {@link LedgerServer} in one tenant at the defaults (1,024 buckets, a 5 s lease) with consumeK 1,
 * while this JVM, which hosts nothing, casts through refs. One sequence makes three rows, each on
 * servers of its own and each checked with exactly-once sums (count and total of every server
 * against what was acknowledged):
 *
 * <ol>
 *   <li>{@code jvms-aborts}: three hosting JVMs, 1,000 servers, 20,000 casts from eight publishers:
 *       the children's aborted (retried) attempts ÷ their committed transactions.
 *   <li>{@code jvms-join}: a fourth JVM joins under casts and calls: how long until it holds 20 %
 *       of the buckets, and whether any call failed.
 *   <li>{@code jvms-failover}: one of the four SIGKILLed under casts, each of its servers sent a
 *       credit at once: for each, the time from the kill until a survivor applied one (p50 and p99
 *       over them), and how long until every lease was held by a live member.
 * </ol>
 */
final class JvmScenarios {

  private static final int SERVERS = 1_000;
  private static final int CASTS = 20_000;
  private static final int CONSUME_K = 1;
  private static final int BUCKETS = 1_024;
  private static final Duration LEASE = Duration.ofSeconds(5);
  private static final Duration CALL_TIMEOUT = Duration.ofSeconds(30);
  private static final Duration WAIT = Duration.ofMinutes(5);

  private final Target target;
  private final Map<String, Row> rows = new HashMap<>();

  JvmScenarios(Target target) {
    this.target = target;
  }

  /** The row {@code id}; the first asked for runs the whole sequence. */
  Row row(String id) {
    if (rows.isEmpty()) {
      run();
    }
    Row r = rows.get(id);
    if (r == null) {
      throw new IllegalArgumentException("no multi-JVM row " + id);
    }
    return r;
  }

  /** A child JVM: its process, its output and input, its log and its member id. */
  private record Child(Process process, BufferedReader out, Writer in, Path log, UUID memberId) {

    /** Applied credits, committed transactions and retried attempts so far. */
    long[] counts() throws IOException {
      in.write(HostingMember.COUNTS + "\n");
      in.flush();
      String line;
      while ((line = out.readLine()) != null) {
        if (line.startsWith(HostingMember.COUNTS + " ")) {
          String[] f = line.split(" ");
          return new long[] {Long.parseLong(f[1]), Long.parseLong(f[2]), Long.parseLong(f[3])};
        }
      }
      throw new IOException("hosting JVM ended; see " + log);
    }
  }

  private void run() {
    Path clusterFile = target.clusterFile();
    if (clusterFile == null) {
      throw new IllegalStateException("the multi-JVM rows need FoundationDB (--backend fdb)");
    }
    List<Child> children = new ArrayList<>();
    try (Bench bench = target.open(10_000);
        DGen client = DGen.builder(bench.backend()).buckets(BUCKETS).build()) {
      String tenantName = "scale-out";
      Tenant tenant = client.tenant(bench.root(), tenantName);
      TenantAdmin admin =
          new DGenAdmin(bench.backend()).tenant(bench.root(), tenantName).orElseThrow();
      Setup setup = new Setup(clusterFile, bench.root(), tenantName, client, tenant, admin);
      children.addAll(setup.start(3));
      awaitPlacement(admin, children);
      rows.put("jvms-aborts", aborts(setup, children));
      rows.put("jvms-join", join(setup, children));
      rows.put("jvms-failover", failover(setup, children));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } finally {
      for (Child c : children) {
        try {
          c.in().close();
        } catch (IOException gone) {
          // killed
        }
      }
      for (Child c : children) {
        try {
          if (!c.process().waitFor(30, TimeUnit.SECONDS)) {
            c.process().destroyForcibly();
          }
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          c.process().destroyForcibly();
        }
      }
    }
  }

  /** What starting children and addressing servers needs. */
  private record Setup(
      Path clusterFile,
      String root,
      String tenantName,
      DGen client,
      Tenant tenant,
      TenantAdmin admin) {

    ServerRef<Msg> ref(int server) {
      return client.ref(tenant, LedgerServer.KIND, Tuple.from(server));
    }

    int bucket(int server) {
      return Buckets.of(tenant.bucketCount()).of(Tuple.from(LedgerServer.KIND, server));
    }

    /** Starts {@code n} hosting JVMs at once and waits until each hosts. */
    List<Child> start(int n) throws IOException {
      List<Process> started = new ArrayList<>();
      List<Path> logs = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        Path log = Files.createTempFile("dgen-bench-hosting-", ".log");
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.add("-Xmx256m");
        String lib = System.getProperty(LocalFdbServer.CLIENT_LIBRARY_PROPERTY);
        if (lib != null) {
          command.add("-D" + LocalFdbServer.CLIENT_LIBRARY_PROPERTY + "=" + lib);
        }
        command.add("-cp");
        command.add(classPath());
        command.add(HostingMember.class.getName());
        command.add(clusterFile.toString());
        command.add(root);
        command.add(tenantName);
        command.add(Integer.toString(BUCKETS));
        command.add(Long.toString(LEASE.toMillis()));
        command.add(Integer.toString(CONSUME_K));
        started.add(new ProcessBuilder(command).redirectError(log.toFile()).start());
        logs.add(log);
      }
      List<Child> out = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        Process p = started.get(i);
        BufferedReader reader =
            new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        String line;
        UUID id = null;
        while (id == null && (line = reader.readLine()) != null) {
          if (line.startsWith(HostingMember.READY)) {
            id = UUID.fromString(line.substring(HostingMember.READY.length()));
          }
        }
        if (id == null) {
          throw new IllegalStateException(
              "a hosting JVM exited before it hosted: " + Files.readString(logs.get(i)));
        }
        out.add(
            new Child(
                p,
                reader,
                new java.io.OutputStreamWriter(p.getOutputStream(), StandardCharsets.UTF_8),
                logs.get(i),
                id));
      }
      return out;
    }
  }

  // ---------------------------------------------------------------- the rows

  private Row aborts(Setup setup, List<Child> children) throws IOException {
    long[] before = sum(children);
    Load load = new Load(setup, 0, 8, 0);
    long t0 = System.nanoTime();
    load.untilSent(CASTS);
    load.stop();
    awaitApplied(children, before[0] + CASTS);
    long elapsed = System.nanoTime() - t0;
    long[] after = sum(children);
    long committed = after[1] - before[1];
    long retried = after[2] - before[2];
    load.checkExactlyOnce();
    double ratio = (double) retried / committed;
    Map<String, Double> metrics = new LinkedHashMap<>();
    metrics.put("abortedPerCommit", ratio);
    return Scenarios.row(
        "jvms-aborts",
        String.format(
            "3 hosting JVMs, %,d servers, K=%d, %,d casts from 8 publishers",
            SERVERS, CONSUME_K, load.sent()),
        load.sent(),
        elapsed,
        load.sent() * 1e9 / elapsed,
        null,
        null,
        -1,
        -1,
        metrics,
        String.format(
            "aborted attempts %,d ÷ committed transactions %,d = %.4f (target ≤ 0.01; the"
                + " children's every transaction, heartbeats included); exactly once: checked",
            retried, committed, ratio));
  }

  private Row join(Setup setup, List<Child> children) throws IOException {
    Load load = new Load(setup, SERVERS, 4, 2);
    load.untilSent(500);
    long launched = System.nanoTime();
    Child newcomer = setup.start(1).get(0);
    long ready = System.nanoTime();
    children.add(newcomer);
    long share = -1;
    long deadline = ready + WAIT.toNanos();
    while (System.nanoTime() < deadline) {
      if (held(setup.admin(), newcomer.memberId()) >= BUCKETS / 5) {
        share = System.nanoTime();
        break;
      }
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(100));
    }
    Map<UUID, Integer> whole = awaitPlacement(setup.admin(), children);
    long converged = System.nanoTime();
    load.untilSent(load.sent() + 500);
    load.stop();
    load.checkExactlyOnce();
    double toShare = share < 0 ? Double.NaN : (share - ready) / 1e9;
    Map<String, Double> metrics = new LinkedHashMap<>();
    metrics.put("secondsToFifth", toShare);
    metrics.put("failedCalls", (double) load.failures().size());
    return Scenarios.row(
        "jvms-join",
        "a 4th hosting JVM joins under casts and calls",
        load.sent(),
        converged - ready,
        load.sent() * 1e9 / (converged - launched),
        null,
        null,
        -1,
        -1,
        metrics,
        String.format(
            "launch → hosting %.1f s; hosting → 20 %% of the buckets %.1f s (target ≤ 30 s); → its"
                + " whole share (%d of %d) %.1f s; %,d calls, %d failed; exactly once: checked",
            (ready - launched) / 1e9,
            toShare,
            whole.get(newcomer.memberId()),
            BUCKETS,
            (converged - ready) / 1e9,
            load.calls(),
            load.failures().size()));
  }

  private Row failover(Setup setup, List<Child> children) throws IOException {
    Load load = new Load(setup, 2 * SERVERS, 4, 0);
    load.untilSent(SERVERS + 50); // every server active, at its bucket's holder
    Child victim = children.get(0);
    List<Integer> itsBuckets =
        setup.admin().leases().stream()
            .filter(l -> victim.memberId().equals(l.holder()))
            .map(TenantAdmin.Lease::bucket)
            .collect(Collectors.toList());
    List<Integer> itsServers = new ArrayList<>();
    for (int s = 0; s < SERVERS; s++) {
      if (itsBuckets.contains(setup.bucket(2 * SERVERS + s))) {
        itsServers.add(s);
      }
    }
    load.read(itsServers); // their credits so far applied by the victim
    long killedAtMillis = System.currentTimeMillis();
    long killed = System.nanoTime();
    victim.process().destroyForcibly();
    children.remove(victim);
    load.burst(itsServers); // work queued for each of them from the moment it died
    awaitPlacement(setup.admin(), children);
    long retaken = System.nanoTime();
    load.untilSent(load.sent() + SERVERS + 50);
    load.stop();
    Map<Integer, State> states = load.checkExactlyOnce();
    Latencies gaps = new Latencies();
    for (int s : itsServers) {
      State st = states.get(s);
      if (st.lastBy().equals(victim.memberId().toString())) {
        throw new IllegalStateException("server " + (2 * SERVERS + s) + " never moved");
      }
      gaps.add(TimeUnit.MILLISECONDS.toNanos(st.movedAtMillis() - killedAtMillis));
    }
    Latencies.Summary g = gaps.summarize();
    Map<String, Double> metrics = new LinkedHashMap<>();
    metrics.put("retakenSeconds", (retaken - killed) / 1e9);
    return Scenarios.row(
        "jvms-failover",
        "1 of 4 hosting JVMs SIGKILLed under casts: gap = the kill → a survivor applies",
        load.sent(),
        retaken - killed,
        Double.NaN,
        g,
        null,
        -1,
        -1,
        metrics,
        String.format(
            "%d of its servers; gap p50 %.1f s, p99 %.1f s, max %.1f s (target: ≤ lease 5 s + 5"
                + " s); every lease held by a live member %.1f s after the kill; exactly once:"
                + " checked",
            g.count(),
            g.p50Micros() / 1e6,
            g.p99Micros() / 1e6,
            g.maxMicros() / 1e6,
            (retaken - killed) / 1e9));
  }

  // ---------------------------------------------------------------- placement

  private static long[] sum(List<Child> children) throws IOException {
    long[] s = new long[3];
    for (Child c : children) {
      long[] x = c.counts();
      for (int i = 0; i < 3; i++) {
        s[i] += x[i];
      }
    }
    return s;
  }

  private static void awaitApplied(List<Child> children, long applied) throws IOException {
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (sum(children)[0] < applied) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("not every cast applied within " + WAIT);
      }
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(100));
    }
  }

  private static long held(TenantAdmin admin, UUID member) {
    return admin.leases().stream().filter(l -> member.equals(l.holder())).count();
  }

  /** Waits until every lease is held by its rendezvous owner among {@code children}. */
  private static Map<UUID, Integer> awaitPlacement(TenantAdmin admin, List<Child> children) {
    List<UUID> ids = children.stream().map(Child::memberId).sorted().collect(Collectors.toList());
    Map<Integer, UUID> desired = new HashMap<>();
    for (int b = 0; b < BUCKETS; b++) {
      desired.put(b, Placement.desiredOwner(LedgerServer.KIND, b, ids));
    }
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (true) {
      Map<Integer, UUID> held = new HashMap<>();
      for (TenantAdmin.Lease l : admin.leases()) {
        held.put(l.bucket(), l.holder());
      }
      if (held.equals(desired)) {
        break;
      }
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("the leases did not settle on " + ids);
      }
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(100));
    }
    Map<UUID, Integer> count = new HashMap<>();
    desired.values().forEach(id -> count.merge(id, 1, Integer::sum));
    return count;
  }

  // ---------------------------------------------------------------- the load

  /**
   * Publishers casting credits round-robin over the servers {@code first … first + 999}, and
   * callers reading a server's state, each recording what was acknowledged. Amounts are distinct,
   * so a credit applied twice or lost changes the sum as well as the count.
   */
  private static final class Load {
    private final Setup setup;
    private final int first;
    private final AtomicLongArray count = new AtomicLongArray(SERVERS);
    private final AtomicLongArray total = new AtomicLongArray(SERVERS);
    private final AtomicLong next = new AtomicLong();
    private final AtomicLong sent = new AtomicLong();
    private final AtomicLong calls = new AtomicLong();
    private final List<Throwable> failures = new CopyOnWriteArrayList<>();
    private final ExecutorService pool;
    private final List<Future<?>> running = new ArrayList<>();
    private final AtomicBoolean stopped = new AtomicBoolean();

    Load(Setup setup, int first, int casters, int callers) {
      this.setup = setup;
      this.first = first;
      pool = Executors.newFixedThreadPool(casters + callers, ScaleOutScenarios::daemon);
      for (int i = 0; i < casters + callers; i++) {
        boolean call = i >= casters;
        running.add(pool.submit(() -> run(call)));
      }
    }

    private void run(boolean call) {
      while (!stopped.get()) {
        long n = next.incrementAndGet();
        int s = (int) (n % SERVERS);
        try {
          if (call) {
            setup.ref(first + s).call(new LedgerServer.Read(), CALL_TIMEOUT);
            calls.incrementAndGet();
          } else {
            credit(s, n);
          }
        } catch (RuntimeException e) {
          failures.add(e);
        }
      }
    }

    private void credit(int s, long n) {
      setup.ref(first + s).cast(new Credit(n));
      count.incrementAndGet(s);
      total.addAndGet(s, n);
      sent.incrementAndGet();
    }

    /** Casts one credit to each of {@code servers} (offsets from {@code first}) at once. */
    void burst(List<Integer> servers) {
      ScaleOutScenarios.parallel(
          8, servers.size(), i -> credit(servers.get((int) i), next.incrementAndGet()));
    }

    /** Reads the states of {@code servers}: once it returns, what was sent to them is applied. */
    Map<Integer, State> read(List<Integer> servers) {
      Map<Integer, State> states = new ConcurrentHashMap<>();
      ScaleOutScenarios.parallel(
          16,
          servers.size(),
          i -> {
            int s = servers.get((int) i);
            states.put(s, setup.ref(first + s).call(new LedgerServer.Read(), CALL_TIMEOUT));
          });
      return states;
    }

    void untilSent(long n) {
      long deadline = System.nanoTime() + WAIT.toNanos();
      while (sent.get() < n) {
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException("only " + sent.get() + " of " + n + " casts sent");
        }
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
      }
    }

    void stop() {
      stopped.set(true);
      try {
        for (Future<?> f : running) {
          f.get(2, TimeUnit.MINUTES);
        }
      } catch (Exception e) {
        throw new IllegalStateException("a publisher did not stop", e);
      } finally {
        pool.shutdown();
      }
    }

    long sent() {
      return sent.get();
    }

    long calls() {
      return calls.get();
    }

    List<Throwable> failures() {
      return failures;
    }

    /**
     * Reads every server's state (a call queued behind everything sent) and checks it against what
     * was acknowledged.
     *
     * @throws IllegalStateException naming the first server whose count or sum differs
     */
    Map<Integer, State> checkExactlyOnce() {
      List<Integer> all = new ArrayList<>();
      for (int s = 0; s < SERVERS; s++) {
        all.add(s);
      }
      Map<Integer, State> states = read(all);
      for (int s = 0; s < SERVERS; s++) {
        State st = states.get(s);
        if (st.count() != count.get(s) || st.total() != total.get(s)) {
          throw new IllegalStateException(
              String.format(
                  "server %d: applied %d credits summing to %d, sent %d summing to %d",
                  first + s, st.count(), st.total(), count.get(s), total.get(s)));
        }
      }
      if (!failures.isEmpty()) {
        failures.get(0).printStackTrace(System.err);
      }
      return states;
    }
  }

  // ---------------------------------------------------------------- helpers

  /**
   * The class path of this program for a child JVM: the class loader's (under {@code exec:java} the
   * program runs in Maven's JVM, whose own class path is Maven's), else {@code java.class.path}.
   */
  static String classPath() {
    ClassLoader loader = JvmScenarios.class.getClassLoader();
    if (loader instanceof URLClassLoader urls && urls.getURLs().length > 0) {
      List<String> entries = new ArrayList<>();
      for (URL u : urls.getURLs()) {
        try {
          entries.add(Path.of(u.toURI()).toString());
        } catch (URISyntaxException | IllegalArgumentException e) {
          entries.add(u.getPath());
        }
      }
      return String.join(File.pathSeparator, entries);
    }
    return System.getProperty("java.class.path");
  }
}
