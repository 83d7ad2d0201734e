package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.Ledger.Credit;
import io.dgen.Ledger.Msg;
import io.dgen.Ledger.State;
import io.dgen.admin.DGenAdmin;
import io.dgen.admin.TenantAdmin;
import io.dgen.backend.fdb.FdbBackend;
import io.dgen.backend.fdb.FdbTestEnvironment;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Scale-out across JVMs on one FoundationDB cluster: three child JVMs ({@link HostingJvm}) host the
 * {@link Ledger} kind in one tenant and share its 1,000 servers while this JVM, which hosts
 * nothing, casts (and calls) through refs. Each test checks exactly-once sums per server (total and
 * count against what was acknowledged), that no credit was committed by a runtime the lease did not
 * name (strays, read in the applying transaction), and one scale-out event under load: a SIGKILL, a
 * join, a SIGSTOP past the lease followed by the rebalance back.
 *
 * <p>Sized for CI: the default 5 s lease (heartbeats and rounds each second; at a load average of
 * 35–48 a 2 s lease expired between the heartbeats of live JVMs and moved their buckets), 64
 * buckets (the join test 1,024, so that the newcomer's rendezvous share is 25 % ± 1.4 % and a bar
 * of 20 % cannot fail by chance). The timings printed are those of the machine's minute; the
 * benchmark's scale-out rows ({@code --only jvms-…}) measure them on servers of their own. The
 * failover bound is asserted here because it is the guarantee: lease + 5 s.
 */
@ExtendWith(FdbTestEnvironment.class)
@Timeout(value = 8, unit = TimeUnit.MINUTES)
class ScaleOutJvmsTest {

  private static final Duration LEASE = Duration.ofSeconds(5);
  private static final int BUCKETS = 64;
  private static final int SERVERS = 1_000;
  private static final int CONSUME_K = 4;
  private static final Duration CALL_TIMEOUT = Duration.ofSeconds(60);
  private static final Duration CONVERGED = Duration.ofSeconds(90);

  private final String tenantId = UUID.randomUUID().toString();
  private final List<Child> children = new ArrayList<>();
  private FdbBackend backend;
  private DGen client;
  private Tenant tenant;
  private Load load;

  /** A child JVM, its log and its member id. */
  private record Child(Process process, Path log, UUID memberId) {}

  private void open(int buckets) {
    backend = FdbTestEnvironment.openBackend();
    client = DGen.builder(backend).buckets(buckets).leaseDuration(LEASE).build();
    tenant = client.tenant("scale-out", tenantId);
  }

  @AfterEach
  void tearDown() throws Exception {
    if (load != null) {
      load.stop();
    }
    for (Child c : children) {
      signal(c, "CONT");
      try {
        c.process().getOutputStream().close();
      } catch (IOException ignored) {
        // already gone
      }
    }
    for (Child c : children) {
      if (!c.process().waitFor(30, TimeUnit.SECONDS)) {
        c.process().destroyForcibly();
      }
    }
    if (client != null) {
      client.close();
    }
    if (backend != null) {
      try {
        backend.removeDirectory("scale-out", tenantId);
      } finally {
        backend.close();
      }
    }
  }

  // ------------------------------------------------------------------------------------ tests

  @Test
  void oneOfThreeHostingJvmsSigkilled_everyCastAppliedOnce_andItsBucketsRetakenWithinLeasePlus5s()
      throws Exception {
    open(BUCKETS);
    List<Child> hosts = startHosts(3, BUCKETS);
    awaitPlacement(hosts, BUCKETS);
    load = new Load(4, 0);
    load.until(SERVERS + 50); // every server active, at its bucket's holder
    Child victim = hosts.get(0);
    List<Integer> itsBuckets = bucketsOf(victim.memberId());
    List<Integer> itsServers = new ArrayList<>();
    for (int s = 0; s < SERVERS; s++) {
      if (itsBuckets.contains(bucket(s))) {
        itsServers.add(s);
      }
    }

    read(itsServers); // its servers' first credits applied by it

    long killedAt = System.currentTimeMillis();
    victim.process().destroyForcibly(); // SIGKILL: no shutdown hook, no release of its leases
    load.burst(itsServers); // work queued for each of its servers from the moment it died
    awaitPlacement(hosts.subList(1, 3), BUCKETS);
    long takenAt = System.currentTimeMillis();
    load.until(load.sent() + SERVERS + 50);
    load.stop();
    assertThat(victim.process().waitFor(30, TimeUnit.SECONDS)).isTrue();

    Map<Integer, State> states = checkExactlyOnce();
    List<Long> gaps = new ArrayList<>();
    for (Map.Entry<Integer, State> e : states.entrySet()) {
      if (itsServers.contains(e.getKey())) {
        assertThat(e.getValue().lastBy())
            .as("server %d of the killed runtime: applied by a survivor", e.getKey())
            .isNotEqualTo(victim.memberId().toString());
        gaps.add(e.getValue().movedAtMillis() - killedAt);
      } else {
        assertThat(e.getValue().moves())
            .as("server %d of a survivor: applied by one runtime throughout", e.getKey())
            .isZero();
      }
    }
    assertThat(gaps).as("servers of the killed runtime").isNotEmpty();
    report(
        "sigkill",
        "%d servers moved; the kill to a survivor's first credit: p50 %,d ms, p99 %,d ms;"
            + " every lease held by a survivor %,d ms after the kill (lease %,d ms)",
        gaps.size(),
        percentile(gaps, 0.50),
        percentile(gaps, 0.99),
        takenAt - killedAt,
        LEASE.toMillis());
    assertThat(takenAt - killedAt)
        .as("the killed runtime's buckets retaken within lease + 5 s")
        .isLessThanOrEqualTo(LEASE.toMillis() + 5_000);
  }

  @Test
  void aFourthJvmJoiningUnderLoad_holdsAFifthOfTheBucketsWithin30s_andNoCallFails()
      throws Exception {
    int buckets = 1_024;
    open(buckets);
    List<Child> hosts = new ArrayList<>(startHosts(3, buckets));
    awaitPlacement(hosts, buckets);
    load = new Load(3, 3);
    load.until(SERVERS + 50);

    long launched = System.nanoTime();
    Child newcomer = startHosts(1, buckets).get(0);
    long joined = System.nanoTime();
    hosts.add(newcomer);
    await("the newcomer holds 20 % of the buckets")
        .atMost(Duration.ofSeconds(120))
        .pollInterval(Duration.ofMillis(200))
        .until(() -> bucketsOf(newcomer.memberId()).size() >= buckets / 5);
    long share = System.nanoTime();
    load.until(load.sent() + SERVERS + 50);
    load.stop();
    int held = bucketsOf(newcomer.memberId()).size();

    assertThat(load.failures()).as("calls and casts that failed").isEmpty();
    assertThat(load.calls()).as("calls answered during the join").isPositive();
    checkExactlyOnce();
    report(
        "join",
        "JVM launched to READY %,d ms; READY to 20 %% %,d ms; %d of %d buckets at the end;"
            + " %,d calls and %,d casts, none failed",
        ms(joined - launched),
        ms(share - joined),
        held,
        buckets,
        load.calls(),
        load.sent() - load.calls());
  }

  @Test
  void aJvmStoppedPastItsLease_commitsNothingOffLease_andTheBucketsRebalanceBackToItUnderLoad()
      throws Exception {
    open(BUCKETS);
    List<Child> hosts = startHosts(3, BUCKETS);
    awaitPlacement(hosts, BUCKETS);
    load = new Load(4, 0);
    load.until(SERVERS + 50);
    Child stalled = hosts.get(0);
    List<Integer> itsBuckets = bucketsOf(stalled.memberId());
    List<Integer> itsServers = new ArrayList<>();
    for (int s = 0; s < SERVERS; s++) {
      if (itsBuckets.contains(bucket(s))) {
        itsServers.add(s);
      }
    }
    read(itsServers); // applied by it

    signal(stalled, "STOP"); // alive, holding its servers and its view of the leases, but frozen
    await("the others take its buckets")
        .atMost(CONVERGED)
        .until(() -> bucketsOf(stalled.memberId()).isEmpty());
    load.until(load.sent() + SERVERS + 50); // its servers run elsewhere while it is frozen
    read(itsServers); // applied by the others
    signal(stalled, "CONT"); // its batches in flight and its view of the leases are stale now
    long resumed = System.nanoTime();
    Map<UUID, Integer> back = awaitPlacement(hosts, BUCKETS); // handed back by the other two
    long rebalanced = System.nanoTime();
    load.until(load.sent() + SERVERS + 50); // and at home again
    load.stop();

    Map<Integer, State> states = checkExactlyOnce();
    stalled.process().getOutputStream().close();
    assertThat(stalled.process().waitFor(60, TimeUnit.SECONDS)).isTrue();
    String log = Files.readString(stalled.log());
    String[] totals =
        log.lines()
            .filter(l -> l.startsWith(HostingJvm.TOTALS))
            .findFirst()
            .orElseThrow()
            .substring(HostingJvm.TOTALS.length())
            .split(" ");
    long fenced = log.lines().filter(l -> l.contains("no longer holds bucket")).count();
    long tooLong = log.lines().filter(l -> l.contains("TransactionTooLongException")).count();
    long moved = itsServers.size();
    report(
        "stop-and-rebalance",
        "%d of its buckets (%d servers) taken while it was stopped; in all it committed %s"
            + " credits, %s of them strays; after SIGCONT %d of its batches were refused by the"
            + " lease and %d by their age (logged); %d buckets handed back to it %,d ms after it"
            + " resumed",
        itsBuckets.size(),
        moved,
        totals[0],
        totals[1],
        fenced,
        tooLong,
        back.get(stalled.memberId()),
        ms(rebalanced - resumed));
    assertThat(Long.parseLong(totals[1]))
        .as("credits the stopped runtime committed under a lease naming another member")
        .isZero();
    // Its servers left it while it was stopped. Which buckets come back to it is the placement's
    // choice, not necessarily the same ones: a rebalance may also move a bucket between the other
    // two (seen in CI: 8 buckets of one moved to the other as it resumed). Exactly once and no
    // stray credit, checked above, are what must hold whatever moved.
    for (int s : itsServers) {
      assertThat(states.get(s).moves())
          .as("server %d of the stopped runtime: applied elsewhere while it was stopped", s)
          .isPositive();
    }
  }

  // ------------------------------------------------------------------------------ the cluster

  /** Starts {@code n} hosting JVMs and waits until each hosts; returns them. */
  private List<Child> startHosts(int n, int buckets) throws Exception {
    List<Process> started = new ArrayList<>();
    List<Path> logs = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      Path log =
          Path.of("target", "scale-out-jvms", tenantId + "-" + (children.size() + i) + ".log");
      started.add(
          FdbChildJvm.start(
              HostingJvm.class,
              log,
              List.of(
                  "-XX:TieredStopAtLevel=1", // less JIT work on a shared 2-core machine
                  "-Dorg.slf4j.simpleLogger.log.io.dgen.internal.hosting.Placement=info"),
              tenantId,
              Integer.toString(buckets),
              Long.toString(LEASE.toMillis()),
              Integer.toString(CONSUME_K)));
      logs.add(log);
    }
    List<Child> out = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      Path log = logs.get(i);
      Process p = started.get(i);
      String ready =
          await("hosting JVM " + log + " ready")
              .atMost(Duration.ofSeconds(120))
              .until(() -> readyLine(log, p), Optional::isPresent)
              .orElseThrow();
      Child c = new Child(p, log, UUID.fromString(ready.substring(HostingJvm.READY.length())));
      out.add(c);
      children.add(c);
    }
    return out;
  }

  private static Optional<String> readyLine(Path log, Process p) throws IOException {
    String text = Files.readString(log);
    if (!p.isAlive()) {
      throw new IllegalStateException("hosting JVM exited: " + text);
    }
    return text.lines().filter(l -> l.startsWith(HostingJvm.READY)).findFirst();
  }

  private static void signal(Child c, String signal) throws Exception {
    if (c.process().isAlive()) {
      Process kill =
          new ProcessBuilder("kill", "-" + signal, Long.toString(c.process().pid())).start();
      assertThat(kill.waitFor(30, TimeUnit.SECONDS)).isTrue();
    }
  }

  private static List<UUID> ids(List<Child> hosts) {
    return hosts.stream().map(Child::memberId).collect(Collectors.toList());
  }

  private TenantAdmin admin() {
    return new DGenAdmin(backend).tenant("scale-out", tenantId).orElseThrow();
  }

  private List<Integer> bucketsOf(UUID member) {
    return admin().leases().stream()
        .filter(l -> member.equals(l.holder()))
        .map(TenantAdmin.Lease::bucket)
        .collect(Collectors.toList());
  }

  /**
   * Waits until every bucket's lease is held by its rendezvous owner among {@code hosts}, and
   * returns how many each holds.
   */
  private Map<UUID, Integer> awaitPlacement(List<Child> hosts, int buckets) {
    try {
      return SettledPlacement.await(this::admin, Ledger.KIND, buckets, ids(hosts), CONVERGED);
    } catch (AssertionError unsettled) {
      StringBuilder out = new StringBuilder(unsettled.getMessage());
      for (Child c : hosts) {
        out.append("\n").append(c.memberId()).append(c.process().isAlive() ? " alive" : " EXITED");
        try {
          List<String> lines = Files.readAllLines(c.log());
          lines
              .subList(Math.max(0, lines.size() - 8), lines.size())
              .forEach(l -> out.append("\n  | ").append(l));
        } catch (IOException e) {
          out.append(" (log unreadable: ").append(e).append(')');
        }
      }
      throw new AssertionError(out.toString(), unsettled);
    }
  }

  private ServerRef<Msg> ref(int server) {
    return client.ref(tenant, Ledger.KIND, Tuple.from(server));
  }

  private int bucket(int server) {
    return io.dgen.internal.keys.Buckets.of(tenant.bucketCount())
        .of(Tuple.from(Ledger.KIND, server));
  }

  /**
   * Reads every server's state (a call queued behind everything sent) and checks it against what
   * was sent: each credit applied exactly once, none by a runtime the lease did not name.
   */
  private Map<Integer, State> checkExactlyOnce() {
    List<Integer> all = new ArrayList<>();
    for (int s = 0; s < SERVERS; s++) {
      all.add(s);
    }
    Map<Integer, State> states = read(all);
    for (int s = 0; s < SERVERS; s++) {
      State st = states.get(s);
      assertThat(new long[] {st.count(), st.total()})
          .as("server %d: credits applied and their sum, against those sent", s)
          .containsExactly(load.count(s), load.total(s));
      assertThat(st.strays()).as("server %d: credits committed off-lease", s).isZero();
    }
    return states;
  }

  /**
   * Reads the states of {@code servers} (calls from sixteen threads, each queued behind what was
   * sent to its server): once it returns, everything acknowledged before has been applied.
   */
  private Map<Integer, State> read(List<Integer> servers) {
    Map<Integer, State> states = new java.util.concurrent.ConcurrentHashMap<>();
    ExecutorService readers = Executors.newFixedThreadPool(16);
    try {
      List<Future<?>> reads = new ArrayList<>();
      for (int s : servers) {
        reads.add(
            readers.submit(
                () -> states.put(s, ref(s).call(new Ledger.Read(), State.class, CALL_TIMEOUT))));
      }
      for (Future<?> r : reads) {
        r.get(2, TimeUnit.MINUTES);
      }
    } catch (InterruptedException
        | java.util.concurrent.ExecutionException
        | java.util.concurrent.TimeoutException e) {
      throw new AssertionError("reading the servers' states failed", e);
    } finally {
      readers.shutdownNow();
    }
    return states;
  }

  // --------------------------------------------------------------------------------- the load

  /**
   * Publisher threads casting credits round-robin over the servers, and caller threads calling with
   * a credit (a generous timeout), each recording what was acknowledged. Amounts are distinct, so a
   * credit applied twice or lost changes the sum as well as the count.
   */
  private final class Load {
    private final AtomicLongArray count = new AtomicLongArray(SERVERS);
    private final AtomicLongArray total = new AtomicLongArray(SERVERS);
    private final AtomicLong next = new AtomicLong();
    private final AtomicLong sent = new AtomicLong();
    private final AtomicLong calls = new AtomicLong();
    private final List<Throwable> failures = new CopyOnWriteArrayList<>();
    private final ExecutorService pool;
    private final List<Future<?>> running = new ArrayList<>();
    private volatile boolean stopped;

    Load(int casters, int callers) {
      pool = Executors.newFixedThreadPool(casters + callers);
      for (int i = 0; i < casters + callers; i++) {
        boolean call = i >= casters;
        running.add(pool.submit(() -> run(call)));
      }
    }

    private void run(boolean call) {
      while (!stopped) {
        long n = next.incrementAndGet();
        int s = (int) (n % SERVERS);
        Credit credit = new Credit(n, System.currentTimeMillis());
        try {
          if (call) {
            long after = ref(s).call(credit, Long.class, CALL_TIMEOUT);
            assertThat(after).isPositive();
            calls.incrementAndGet();
          } else {
            ref(s).cast(credit);
          }
          count.incrementAndGet(s);
          total.addAndGet(s, n);
          sent.incrementAndGet();
        } catch (RuntimeException | AssertionError e) {
          failures.add(e);
          stopped = true;
        }
      }
    }

    /** Casts one credit to each of {@code servers} at once, from eight threads. */
    void burst(List<Integer> servers) throws Exception {
      ExecutorService senders = Executors.newFixedThreadPool(8);
      try {
        List<Future<?>> sends = new ArrayList<>();
        for (int s : servers) {
          sends.add(
              senders.submit(
                  () -> {
                    long n = next.incrementAndGet();
                    ref(s).cast(new Credit(n, System.currentTimeMillis()));
                    count.incrementAndGet(s);
                    total.addAndGet(s, n);
                    sent.incrementAndGet();
                  }));
        }
        for (Future<?> f : sends) {
          f.get(2, TimeUnit.MINUTES);
        }
      } finally {
        senders.shutdownNow();
      }
    }

    /** Waits until {@code n} messages were acknowledged in all. */
    void until(long n) {
      await(n + " messages sent")
          .atMost(Duration.ofMinutes(3))
          .pollInterval(Duration.ofMillis(50))
          .until(() -> sent.get() >= n || stopped);
      assertThat(failures).isEmpty();
    }

    void stop() throws Exception {
      stopped = true;
      for (Future<?> f : running) {
        f.get(2, TimeUnit.MINUTES);
      }
      pool.shutdown();
      assertThat(failures).as("failed sends").isEmpty();
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

    long count(int s) {
      return count.get(s);
    }

    long total(int s) {
      return total.get(s);
    }
  }

  // ---------------------------------------------------------------------------------- helpers

  private static long percentile(List<Long> values, double p) {
    if (values.isEmpty()) {
      return -1;
    }
    long[] sorted = values.stream().mapToLong(Long::longValue).sorted().toArray();
    int i = (int) Math.ceil(p * sorted.length) - 1;
    return sorted[Math.max(0, Math.min(sorted.length - 1, i))];
  }

  private static long ms(long nanos) {
    return TimeUnit.NANOSECONDS.toMillis(nanos);
  }

  private static void report(String test, String format, Object... args) {
    System.out.printf(
        Locale.ROOT,
        "[scale-out %s] %s (load average %.1f)%n",
        test,
        String.format(Locale.ROOT, format, args),
        java.lang.management.ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage());
  }
}
