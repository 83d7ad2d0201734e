package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.admin.ServerControl;
import io.dgen.backend.Backend;
import io.dgen.backend.BackendException;
import io.dgen.backend.FaultInjectingBackend;
import io.dgen.internal.keys.Buckets;
import io.dgen.internal.keys.ServerKeys;
import io.dgen.internal.limits.LimitKeys;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Queue;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.IntStream;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Rate and concurrency limits across two runtimes on one backend: the window bound and throughput
 * of a rate limit with every message applied in order, at most {@code limit} servers inside {@code
 * handleLocked}, a permit that comes back at its expiry with the late holder's result refused, and
 * the stored configuration.
 */
class LimitsTest extends RuntimeTestBase {

  /** A server's messages, in the order applied. */
  record Applied(List<Integer> seqs) {}

  /** Replies the numbers applied so far; sent as a priority call, past the limit. */
  record ReadApplied() implements Call<List<Integer>> {}

  /** When each message's batch committed (nanos), and whatever ran inside handleLocked. */
  static final class Probe {
    final Queue<Long> appliedAt = new ConcurrentLinkedQueue<>();
    final AtomicInteger inside = new AtomicInteger();
    final AtomicInteger mostInside = new AtomicInteger();
    final Queue<long[]> lockedRuns = new ConcurrentLinkedQueue<>();
    volatile long lockedMillis = 300;
    volatile CountDownLatch block = new CountDownLatch(0);
    final CountDownLatch entered = new CountDownLatch(1);
    volatile @Nullable Runnable arm;
  }

  /**
   * Casts of a non-negative number are applied, recording their commit time; a negative one takes
   * the lock, and {@code handleLocked} runs for {@link Probe#lockedMillis}.
   */
  static final class Paced implements DGenServer<Applied, Object> {
    private final Probe probe;

    Paced(Probe probe) {
      this.probe = probe;
    }

    @Override
    public InitResult<Applied> init(Object arg) {
      return arg instanceof String id
          ? InitResult.ok(Tuple.from("paced", id), new Applied(List.of()))
          : InitResult.ok(new Applied(List.of())); // hosted: addressed by its id
    }

    @Override
    public Result<Applied> handleCall(Object request, From from, Applied state) {
      return Result.reply((ReadApplied) request, state.seqs(), state);
    }

    @Override
    public Result<Applied> handleCast(Object message, Applied state) {
      int n = (Integer) message;
      List<Integer> seqs = new ArrayList<>(state.seqs());
      seqs.add(n);
      if (n < 0) {
        Runnable arm = probe.arm;
        if (arm != null && n == -3) {
          probe.arm = null;
          arm.run(); // faults for the batch that takes this lock
        }
        return Result.lock(new Applied(seqs));
      }
      return Result.noReply(
          new Applied(seqs), List.of(committed -> probe.appliedAt.add(System.nanoTime())));
    }

    @Override
    public Result<Applied> handleLocked(DbContext db, Event<Object> event, Applied state)
        throws Exception {
      int now = probe.inside.incrementAndGet();
      probe.mostInside.accumulateAndGet(now, Math::max);
      long start = System.nanoTime();
      long startMillis = System.currentTimeMillis();
      probe.entered.countDown();
      try {
        if (Integer.valueOf(-1).equals(event.message())) {
          probe.block.await(); // only the first holder is held up, when a test says so
        }
        Thread.sleep(probe.lockedMillis); // the work handleLocked stands for, not a wait
      } finally {
        probe.inside.decrementAndGet();
        probe.lockedRuns.add(new long[] {start, System.nanoTime(), startMillis});
      }
      return Result.noReply(state);
    }
  }

  private final String limit = "limit-" + UUID.randomUUID();
  private final Probe probe = new Probe();
  private final List<DGen> others = new ArrayList<>();
  private final List<LockFencedException> fenced = new CopyOnWriteArrayList<>();

  @AfterEach
  void closeOthers() {
    probe.block.countDown();
    others.forEach(DGen::close);
  }

  /** Another runtime on the test's backend, configured by {@code builder}. */
  private DGen runtime(java.util.function.UnaryOperator<DGen.Builder> builder) {
    return runtime(backend, builder);
  }

  /** Another runtime on {@code on} (the test's backend, maybe wrapped), configured by builder. */
  private DGen runtime(Backend on, java.util.function.UnaryOperator<DGen.Builder> builder) {
    DGen d =
        builder
            .apply(
                DGen.builder(on)
                    .retryBackoff(Duration.ofMillis(1), Duration.ofMillis(50))
                    .listener(
                        new DGenListener() {
                          @Override
                          public void lockFenced(ServerRef<?> server, LockFencedException error) {
                            fenced.add(error);
                          }
                        }))
            .build();
    others.add(d);
    return d;
  }

  private ProcessRef<Object> startPaced(DGen d, String id, StartOptions.Builder options) {
    return startPaced(d, id, options, probe);
  }

  private static ProcessRef<Object> startPaced(
      DGen d, String id, StartOptions.Builder options, Probe probe) {
    return d.start(new Paced(probe), id, options.build());
  }

  private static StartOptions.Builder options(DGen d, Tenant t) {
    return StartOptions.builder(d.existingTenant(t.path().toArray(String[]::new)))
        .allowTypes(ReadApplied.class); // the message type is Object: numbers, and this query
  }

  @Test
  void rateLimit_acrossTwoRuntimes_boundsEveryWindow_andAppliesAllInOrder() {
    DGen a = runtime(b -> b.rateLimit(limit, 50, 10));
    DGen b = runtime(x -> x); // names the limit without configuring it: the stored one applies
    List<ServerRef<Object>> refs = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      DGen d = i % 2 == 0 ? a : b;
      refs.add(startPaced(d, "s" + i, options(d, tenant).rateLimit(limit)));
    }
    for (ServerRef<Object> ref : refs) {
      ref.castAll(IntStream.range(0, 20).boxed().toList());
    }
    await()
        .atMost(BULK_WAIT)
        .pollInterval(Duration.ofMillis(200))
        .until(() -> probe.appliedAt.size() >= 400);
    for (ServerRef<Object> ref : refs) {
      assertThat(ref.priorityCall(new ReadApplied()))
          .as("applied in order, each once: %s", ref.tuid())
          .isEqualTo(IntStream.range(0, 20).boxed().toList());
    }
    int bound = 10 + 50 * 4;
    assertThat(busiest(Duration.ofSeconds(4)))
        .as("messages consumed in the busiest 4 s window")
        .isLessThanOrEqualTo((int) (bound * 1.1));
    assertThat(quietestFull(Duration.ofSeconds(4)))
        .as("messages consumed in the quietest 4 s window while a backlog remained")
        .isGreaterThanOrEqualTo((int) (bound * 0.8));
  }

  @Test
  void rateLimit_ofHostedServers_acrossTwoRuntimes_boundsEveryWindow() {
    DGen a = runtime(b -> b.rateLimit(limit, 20, 5));
    DGen b = runtime(x -> x);
    for (DGen d : List.of(a, b)) {
      d.host(
          "paced",
          () -> new Paced(probe),
          HostOptions.builder(d.existingTenant(tenant.path().toArray(String[]::new)))
              .allowTypes(ReadApplied.class)
              .rateLimit(limit)
              .build());
    }
    List<ServerRef<Object>> refs = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      DGen d = i % 2 == 0 ? a : b;
      Tenant t = d.existingTenant(tenant.path().toArray(String[]::new));
      refs.add(d.ref(t, "paced", Tuple.from(i)));
    }
    for (ServerRef<Object> ref : refs) {
      ref.castAll(IntStream.range(0, 10).boxed().toList());
    }
    await()
        .atMost(BULK_WAIT)
        .pollInterval(Duration.ofMillis(200))
        .until(() -> probe.appliedAt.size() >= 100);
    for (ServerRef<Object> ref : refs) {
      assertThat(ref.call(new ReadApplied()))
          .as("applied in order, each once: %s", ref.tuid())
          .isEqualTo(IntStream.range(0, 10).boxed().toList());
    }
    assertThat(busiest(Duration.ofSeconds(2))).isLessThanOrEqualTo((int) ((5 + 20 * 2) * 1.1));
  }

  /**
   * The runtimes sharing a rate limit each reserve from a bucket of their own and rewrite only
   * their own keys, so once they have joined (a join moves shares, and a grow may conflict with
   * another runtime's move), their limiter transactions (rounds and reservations) do not conflict:
   * at most 1 % of the attempts, at 1,000 permits/s.
   */
  @ParameterizedTest
  @ValueSource(ints = {2, 3})
  void rateLimit_sharedByRuntimes_commitsTheLimitersTransactionsWithoutConflicts(int runtimes) {
    List<io.micrometer.core.instrument.simple.SimpleMeterRegistry> registries = new ArrayList<>();
    List<DGen> members = new ArrayList<>();
    List<ServerRef<Object>> refs = new ArrayList<>();
    for (int r = 0; r < runtimes; r++) {
      var registry = new io.micrometer.core.instrument.simple.SimpleMeterRegistry();
      registries.add(registry);
      DGen d = runtime(b -> b.rateLimit(limit, 1_000, 100).meterRegistry(registry));
      members.add(d);
      for (int i = 0; i < 4; i++) {
        refs.add(startPaced(d, r + "-" + i, options(d, tenant).consumeK(16).rateLimit(limit)));
      }
    }
    int each = 6_000 / refs.size();
    for (ServerRef<Object> ref : refs) {
      ref.castAll(IntStream.range(0, each).boxed().toList());
    }
    await("every runtime holds a share")
        .atMost(Duration.ofSeconds(30))
        .pollDelay(Duration.ZERO)
        .until(() -> members.stream().allMatch(d -> shareOf(d) > 0));
    double[] joined = limiterAttempts(registries);
    await()
        .atMost(BULK_WAIT)
        .pollInterval(Duration.ofMillis(200))
        .until(() -> probe.appliedAt.size() >= each * refs.size());
    double[] done = limiterAttempts(registries);
    double tx = done[0] - joined[0];
    double conflicts = done[1] - joined[1];
    assertThat(tx).as("limiter transactions once joined").isGreaterThan(50);
    // A share move (the end of a backlog shifts demand) may still meet another runtime's: one
    // conflict in a run this short is 1.1 % of about 90 attempts. On the stored backends (nested
    // in RuntimeBehaviourSuite), whose commits take milliseconds, moves overlap more often: up to
    // 1.2 % was measured there, so the bound is looser (the one-key bucket conflicted in 26.5 %).
    boolean memory = getClass().getEnclosingClass() == null;
    assertThat(conflicts)
        .as("conflicted attempts of %s limiter transactions once joined", tx)
        .isLessThanOrEqualTo(Math.max(1, (tx + conflicts) * (memory ? 0.01 : 0.03)));
    assertThat(busiest(Duration.ofSeconds(1)))
        .as("messages consumed in the busiest second: burst + rate, plus the slack of limits.md")
        .isLessThanOrEqualTo(100 + 1_000 + 220);
  }

  /** The limiter's committed transactions and conflicted attempts, over {@code registries}. */
  private double[] limiterAttempts(
      List<io.micrometer.core.instrument.simple.SimpleMeterRegistry> registries) {
    double[] sums = new double[2];
    for (var registry : registries) {
      sums[0] += registry.get("dgen.limit.transactions").tag("limit", limit).counter().count();
      sums[1] += registry.get("dgen.limit.conflicts").tag("limit", limit).counter().count();
    }
    return sums;
  }

  /**
   * A busy runtime and an idle one that names the same limit: within a few seconds the busy one
   * enforces most of the rate (the idle one keeps a small floor), and its servers get it.
   */
  @Test
  void rateShares_followDemand_theBusyRuntimeGetsMostOfTheRate() {
    DGen busy = runtime(b -> b.rateLimit(limit, 100, 10));
    DGen idle = runtime(x -> x);
    startPaced(idle, "idle", options(idle, tenant).rateLimit(limit), new Probe());
    List<ServerRef<Object>> refs = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      refs.add(startPaced(busy, "busy" + i, options(busy, tenant).rateLimit(limit)));
    }
    for (ServerRef<Object> ref : refs) {
      ref.castAll(IntStream.range(0, 250).boxed().toList()); // 10 s of permits
    }
    await("the busy runtime enforces most of the rate, the idle one its floor")
        .atMost(Duration.ofSeconds(10))
        .pollDelay(Duration.ZERO)
        .until(() -> shareOf(busy) >= 80 && shareOf(idle) > 0);
    assertThat(shareOf(idle)).as("the idle runtime's floor").isLessThan(20);
    assertThat(appliedPerSecond(200)).as("the busy runtime's servers, permits/s").isGreaterThan(70);
  }

  /**
   * Three runtimes share a limit; one is cut off from the backend (it stops beating, as if stalled
   * or partitioned). Once its heartbeat is older than the dead time the other two take its share
   * between them, clear its record, and their servers get the whole rate.
   */
  @Test
  void aDeadRuntimesShare_returnsToTheOthers_afterItsHeartbeatExpires() {
    Partition cutOff = new Partition(backend);
    DGen a = runtime(b -> b.rateLimit(limit, 60, 6));
    DGen b = runtime(x -> x);
    DGen c = runtime(cutOff, x -> x);
    for (DGen d : List.of(a, b, c)) {
      for (int i = 0; i < 3; i++) {
        startPaced(d, d.memberId() + "-" + i, options(d, tenant).rateLimit(limit))
            .castAll(IntStream.range(0, 200).boxed().toList());
      }
    }
    await("three runtimes hold shares")
        .atMost(Duration.ofSeconds(20))
        .pollDelay(Duration.ZERO)
        .until(() -> shareOf(c) >= 10);
    cutOff.cut = true;
    await("the cut-off runtime's record is cleared and its share taken over")
        .atMost(Duration.ofSeconds(20))
        .pollDelay(Duration.ZERO)
        .until(() -> rateShares().size() == 2 && shareOf(a) + shareOf(b) >= 59);
    assertThat(appliedPerSecond(120))
        .as("the two live runtimes' servers, permits/s")
        .isGreaterThan(45);
  }

  /**
   * A runtime that closes clears its keys of the limit (before its close returns), and the other
   * takes the whole rate at its next round, without waiting for the heartbeat to expire.
   */
  @Test
  void aClosedRuntimesShare_returnsToTheOthers_atOnce() {
    DGen a = runtime(b -> b.rateLimit(limit, 40, 4));
    DGen b = runtime(x -> x);
    for (DGen d : List.of(a, b)) {
      startPaced(d, d.memberId().toString(), options(d, tenant).rateLimit(limit))
          .castAll(IntStream.range(0, 400).boxed().toList());
    }
    await("both runtimes hold shares")
        .atMost(Duration.ofSeconds(20))
        .pollDelay(Duration.ZERO)
        .until(() -> shareOf(a) > 0 && shareOf(b) > 0);
    b.close();
    assertThat(rateShares()).extracting(s -> s.runtime()).containsExactly(a.memberId());
    await("the remaining runtime takes the whole rate")
        .atMost(Duration.ofSeconds(20))
        .pollDelay(Duration.ZERO)
        .until(() -> shareOf(a) == 40);
  }

  /**
   * A runtime whose rounds fail (its heartbeat cannot be written) keeps reserving from its own
   * bucket only until its last heartbeat is 2 s old: it takes no permit later than the 3 s after
   * which the others may count it dead and take its share over. When its rounds succeed again, it
   * goes on.
   */
  @Test
  void aRuntimeWhoseHeartbeatFails_stopsTakingPermits_beforeOthersMayCountItDead() {
    DGen a = runtime(b -> b.rateLimit(limit, 50, 5));
    startPaced(a, "f", options(a, tenant).rateLimit(limit))
        .castAll(IntStream.range(0, 1_000).boxed().toList());
    await().atMost(Duration.ofSeconds(30)).until(() -> probe.appliedAt.size() >= 20);
    LimitKeys keys = new LimitKeys(backend.openDirectory(LimitKeys.directory()).orElseThrow());
    byte[][] heartbeats = keys.rateMembers(limit);
    long cut = System.nanoTime();
    faults().failReads(heartbeats[0], heartbeats[1], Integer.MAX_VALUE, BackendException.IO_ERROR);
    await("the runtime stops taking permits")
        .atMost(Duration.ofSeconds(30))
        .pollDelay(Duration.ZERO)
        .until(() -> System.nanoTime() - lastApplied() > Duration.ofMillis(1_500).toNanos());
    assertThat(Duration.ofNanos(lastApplied() - cut))
        .as("the last permit taken after the heartbeat stopped")
        .isLessThan(Duration.ofSeconds(3));
    int before = probe.appliedAt.size();
    faults().failReads(heartbeats[0], heartbeats[1], 0, BackendException.IO_ERROR);
    await("it goes on once its heartbeat is written again")
        .atMost(Duration.ofSeconds(30))
        .until(() -> probe.appliedAt.size() >= before + 10);
  }

  /**
   * A runtime alone on a limit: its cluster turns slow (4 s per commit) and its heartbeat stops
   * (its rounds cannot read) while a reservation of its own is under way, which completes more than
   * 2.6 s after its last committed heartbeat. It hands out none of those permits: nothing later
   * than 2.6 s after that heartbeat, as {@code docs/limits.md} promises, before anyone may count it
   * dead (3 s).
   */
  @Test
  void aReservationCompletingPastTheFence_handsOutNoneOfItsPermits() {
    FaultInjectingBackend slow = FaultInjectingBackend.wrap(backend);
    LimiterMeters xMeters = new LimiterMeters();
    DGen x = runtime(slow, b -> b.rateLimit(limit, 100, 10).meterRegistry(xMeters));
    startBusyServers(x, 40, 100);
    await("x takes permits")
        .atMost(Duration.ofSeconds(20))
        .pollDelay(Duration.ZERO)
        .until(() -> shareOf(x) > 0 && xMeters.grantedAfter(0) > 0);

    long bound = stallWithAReservationUnderWay(x, slow, xMeters);

    await("no permit handed out later than 2.6 s after x's last committed heartbeat")
        .during(Duration.ofMillis(500))
        .atMost(Duration.ofSeconds(5))
        .untilAsserted(() -> assertThat(xMeters.grantedAfter(bound)).isZero());
    slow.reset();
  }

  /**
   * The same with a second runtime: y counts x dead 3 s after x's last heartbeat, takes its share
   * and clears its keys while x's reservation is still under way. x hands out none of its permits
   * (they would exceed the rate, y having grown into x's share), and the reservation does not write
   * back the bucket key y cleared: a key nobody would ever clear.
   */
  @Test
  void aReservationCompletingAfterOthersTookTheShare_handsOutNothing_andLeavesNoOrphanBucket() {
    DGen y = runtime(b -> b.rateLimit(limit, 100, 10));
    FaultInjectingBackend slow = FaultInjectingBackend.wrap(backend);
    LimiterMeters xMeters = new LimiterMeters();
    DGen x = runtime(slow, b -> b.meterRegistry(xMeters));
    startBusyServers(y, 4, 1_000);
    startBusyServers(x, 40, 100);
    await("both runtimes hold shares, and x's servers take permits")
        .atMost(Duration.ofSeconds(20))
        .pollDelay(Duration.ZERO)
        .until(() -> shareOf(x) > 0 && shareOf(y) > 0 && xMeters.grantedAfter(0) > 0);

    long bound = stallWithAReservationUnderWay(x, slow, xMeters);

    LimitKeys keys = new LimitKeys(backend.openDirectory(LimitKeys.directory()).orElseThrow());
    byte[] xRecord = backend.run(tx -> tx.get(keys.rateMember(limit, x.memberId())));
    assertThat(xRecord).as("x's heartbeat record, cleared by y").isNull();
    await("no permit handed out later than 2.6 s after x's last committed heartbeat")
        .during(Duration.ofMillis(500))
        .atMost(Duration.ofSeconds(5))
        .untilAsserted(() -> assertThat(xMeters.grantedAfter(bound)).isZero());
    byte[] xBucket = backend.run(tx -> tx.get(keys.rateBucket(limit, x.memberId())));
    assertThat(xBucket).as("x's bucket key, cleared by y").isNull();
    slow.reset();
  }

  /**
   * Starts {@code servers} servers on {@code d} naming the test's rate limit, each with a backlog.
   */
  private void startBusyServers(DGen d, int servers, int backlog) {
    for (int i = 0; i < servers; i++) {
      startPaced(d, d.memberId() + "-" + i, options(d, tenant).rateLimit(limit))
          .castAll(IntStream.range(0, backlog).boxed().toList());
    }
  }

  /**
   * Makes every commit of x take 4 s and stops its heartbeat (its rounds fail to read the
   * heartbeats), then waits until a transaction of x's limiter completes later than 2.6 s after x's
   * last committed heartbeat: the reservation under way when the cluster turned slow (x has enough
   * servers that some still wait while the others' batches commit). Returns that bound, in epoch
   * millis, from the heartbeat's own time stamp.
   */
  private long stallWithAReservationUnderWay(
      DGen x, FaultInjectingBackend slow, LimiterMeters xMeters) {
    LimitKeys keys = new LimitKeys(backend.openDirectory(LimitKeys.directory()).orElseThrow());
    byte[][] heartbeats = keys.rateMembers(limit);
    byte[] xRecord = keys.rateMember(limit, x.memberId());
    slow.failReads(heartbeats[0], heartbeats[1], Integer.MAX_VALUE, BackendException.IO_ERROR);
    slow.commitLatency(Duration.ofSeconds(4));
    AtomicLong lastBeatMillis = new AtomicLong();
    await("a reservation of x completes more than 2.6 s after x's last heartbeat")
        .atMost(Duration.ofSeconds(20))
        .pollDelay(Duration.ZERO)
        .pollInterval(Duration.ofMillis(10))
        .until(
            () -> {
              byte[] v = backend.run(tx -> tx.get(xRecord)); // until y clears it, if y runs
              if (v != null) {
                lastBeatMillis.accumulateAndGet(LimitKeys.Member.decode(v).wallMillis(), Math::max);
              }
              return lastBeatMillis.get() > 0
                  && xMeters.transactionsAfter(lastBeatMillis.get() + 2_600) > 0;
            });
    return lastBeatMillis.get() + 2_600;
  }

  /**
   * A meter registry that records when (wall clock) a limiter granted permits to its runtime's
   * servers, and when its transactions committed.
   */
  private static final class LimiterMeters
      extends io.micrometer.core.instrument.simple.SimpleMeterRegistry {
    private final Queue<long[]> grants = new ConcurrentLinkedQueue<>();
    private final Queue<Long> transactions = new ConcurrentLinkedQueue<>();

    @Override
    protected io.micrometer.core.instrument.Counter newCounter(
        io.micrometer.core.instrument.Meter.Id id) {
      String name = id.getName();
      if (!name.equals("dgen.limit.permits") && !name.equals("dgen.limit.transactions")) {
        return super.newCounter(id);
      }
      return new io.micrometer.core.instrument.cumulative.CumulativeCounter(id) {
        @Override
        public void increment(double amount) {
          super.increment(amount);
          long now = System.currentTimeMillis();
          if (name.equals("dgen.limit.permits")) {
            grants.add(new long[] {now, (long) amount});
          } else {
            transactions.add(now);
          }
        }
      };
    }

    /** The permits granted later than {@code millis} (epoch). */
    long grantedAfter(long millis) {
      return grants.stream().filter(g -> g[0] > millis).mapToLong(g -> g[1]).sum();
    }

    /** The limiter's transactions that committed later than {@code millis} (epoch). */
    long transactionsAfter(long millis) {
      return transactions.stream().filter(t -> t > millis).count();
    }
  }

  /** The rate at which the next {@code n} messages are applied (per second). */
  private double appliedPerSecond(int n) {
    int before = probe.appliedAt.size();
    long start = System.nanoTime();
    await().atMost(Duration.ofSeconds(30)).until(() -> probe.appliedAt.size() >= before + n);
    return n / ((System.nanoTime() - start) / 1e9);
  }

  private long lastApplied() {
    return probe.appliedAt.stream().mapToLong(Long::longValue).max().orElseThrow();
  }

  /** The shares of the test's rate limit, as the runtimes published them. */
  private List<io.dgen.admin.LimitView.Share> rateShares() {
    return new io.dgen.admin.DGenAdmin(backend)
        .limits().stream().filter(l -> l.name().equals(limit)).findFirst().orElseThrow().shares();
  }

  /** The share (permits/s) runtime {@code d} published of the test's rate limit; 0 if none. */
  private double shareOf(DGen d) {
    return rateShares().stream()
        .filter(s -> s.runtime().equals(d.memberId()))
        .mapToDouble(io.dgen.admin.LimitView.Share::permitsPerSecond)
        .sum();
  }

  /** The most messages applied in any window of {@code length}. */
  private int busiest(Duration length) {
    return windows(length, false);
  }

  /**
   * The fewest messages applied in a window of {@code length} that starts at an applied message and
   * ends before the last one: a window in which a backlog remained throughout.
   */
  private int quietestFull(Duration length) {
    return windows(length, true);
  }

  private int windows(Duration length, boolean fewest) {
    List<Long> times = new ArrayList<>(probe.appliedAt);
    Collections.sort(times);
    long last = times.get(times.size() - 1);
    int result = fewest ? Integer.MAX_VALUE : 0;
    for (int i = 0, j = 0; i < times.size(); i++) {
      while (j < times.size() && times.get(j) - times.get(i) < length.toNanos()) {
        j++;
      }
      if (!fewest) {
        result = Math.max(result, j - i);
      } else if (last - times.get(i) >= length.toNanos()) {
        result = Math.min(result, j - i);
      }
    }
    return result;
  }

  @Test
  void meters_countPermitsWaitsAndTheLimitersTransactions() {
    io.micrometer.core.instrument.simple.SimpleMeterRegistry registry =
        new io.micrometer.core.instrument.simple.SimpleMeterRegistry();
    DGen a = runtime(b -> b.rateLimit(limit, 20, 1).meterRegistry(registry));
    ServerRef<Object> ref = startPaced(a, "m", options(a, tenant).rateLimit(limit));
    ref.castAll(IntStream.range(0, 10).boxed().toList());
    await().atMost(Duration.ofSeconds(30)).until(() -> probe.appliedAt.size() == 10);
    assertThat(registry.get("dgen.limit.permits").tag("limit", limit).counter().count())
        .isGreaterThanOrEqualTo(10);
    assertThat(registry.get("dgen.limit.wait").tag("limit", limit).timer().count()).isPositive();
    assertThat(registry.get("dgen.limit.transactions").tag("limit", limit).counter().count())
        .isPositive();
    // the loop may ask for the permit of a next batch before it finds its queue empty
    await()
        .atMost(Duration.ofSeconds(30))
        .pollDelay(Duration.ZERO)
        .until(() -> registry.get("dgen.limit.throttled").tag("limit", limit).gauge().value() == 0);
  }

  @Test
  void priorityMessages_areNotLimited() {
    DGen a = runtime(b -> b.rateLimit(limit, 1, 1));
    ServerRef<Object> ref = startPaced(a, "p", options(a, tenant).rateLimit(limit));
    ref.castAll(IntStream.range(0, 30).boxed().toList()); // 30 s of permits
    for (int i = 0; i < 20; i++) {
      assertThat(ref.priorityCall(new ReadApplied())).isNotNull();
    }
    assertThat(ServerControl.of(ref).queueLength()).isGreaterThan(20);
  }

  @Test
  void start_namingAnUnconfiguredLimit_failsClearly() {
    String missing = "missing-" + UUID.randomUUID();
    assertThatThrownBy(() -> startPaced(dgen, "x", StartOptions.builder(tenant).rateLimit(missing)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(missing)
        .hasMessageContaining("DGen.Builder.rateLimit");
    assertThatThrownBy(
            () ->
                dgen.host(
                    "paced",
                    () -> new Paced(probe),
                    HostOptions.builder(tenant)
                        .concurrencyLimit(missing)
                        .lockTimeout(Duration.ofSeconds(1))
                        .build()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(missing)
        .hasMessageContaining("DGen.Builder.concurrencyLimit");
  }

  @Test
  void concurrencyLimit_withoutLockTimeout_isRefused() {
    assertThatThrownBy(() -> StartOptions.builder(tenant).concurrencyLimit(limit).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("lockTimeout");
  }

  @Test
  void aChangedConfiguration_isStored_andEnforcedByEveryRuntime() {
    runtime(b -> b.rateLimit(limit, 50, 10).concurrencyLimit(limit, 2));
    runtime(b -> b.rateLimit(limit, 100, 5).concurrencyLimit(limit, 3));
    io.dgen.admin.DGenAdmin admin = new io.dgen.admin.DGenAdmin(backend);
    assertThat(admin.limits())
        .filteredOn(l -> l.name().equals(limit))
        .extracting(l -> l.type() + " " + l.describe())
        .containsExactlyInAnyOrder("rate 100.0/s burst 5", "concurrency 3");
  }

  @Test
  void concurrencyLimit_acrossTwoRuntimes_letsAtMostTwoIn_andKeepsTwoBusy() {
    DGen a = runtime(b -> b.concurrencyLimit(limit, 2));
    DGen b = runtime(x -> x);
    List<ServerRef<Object>> refs = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      DGen d = i % 2 == 0 ? a : b;
      refs.add(
          startPaced(
              d,
              "c" + i,
              options(d, tenant).concurrencyLimit(limit).lockTimeout(Duration.ofSeconds(30))));
    }
    refs.forEach(r -> r.cast(-1));
    await().atMost(BULK_WAIT).until(() -> probe.lockedRuns.size() == 10);
    for (ServerRef<Object> ref : refs) {
      await()
          .atMost(Duration.ofSeconds(30))
          .until(() -> ref.priorityCall(new ReadApplied()).size() == 1);
    }
    assertThat(probe.mostInside.get()).isEqualTo(2);
    long first = probe.lockedRuns.stream().mapToLong(r -> r[0]).min().orElseThrow();
    long last = probe.lockedRuns.stream().mapToLong(r -> r[1]).max().orElseThrow();
    long busy = probe.lockedRuns.stream().mapToLong(r -> r[1] - r[0]).sum();
    // Two inside most of the time: each hand-off of a permit waits for a commit, which on
    // FoundationDB at load 9 on two cores left 1.46 on average (1.8 quiet).
    assertThat((double) busy / (last - first))
        .as("servers inside handleLocked on average, from the first entry to the last exit")
        .isGreaterThanOrEqualTo(1.4);
    assertThat(fenced).isEmpty();
  }

  /**
   * An executor that, while {@link #holding}, keeps the tasks of consume loops (a wake-up for a
   * permit, a drain) instead of running them, until {@link #release}.
   */
  private static final class HoldingExecutor implements java.util.concurrent.Executor {
    private final java.util.concurrent.ExecutorService pool =
        java.util.concurrent.Executors.newFixedThreadPool(2);
    private final List<Runnable> held = new CopyOnWriteArrayList<>();
    volatile boolean holding;

    @Override
    public void execute(Runnable r) {
      if (holding && r.getClass().getName().contains("ConsumeLoop")) {
        held.add(r);
      } else {
        pool.execute(r);
      }
    }

    int held() {
      return held.size();
    }

    void release() {
      holding = false;
      held.forEach(pool::execute);
    }

    void shutdown() {
      pool.shutdownNow();
    }
  }

  /**
   * Two servers of one runtime wait for the only permit. It frees: the first is woken, but its
   * process stops before its batch runs. The permit must go to the second. Before, the woken waiter
   * never reported back, and a check that finds a permit free arms nothing: the second waited until
   * some unrelated event of its runtime checked again.
   */
  @Test
  void aWokenWaiterWhoseProcessStopsBeforeItsBatch_leavesThePermitToTheNext() throws Exception {
    HoldingExecutor executor = new HoldingExecutor();
    SimpleMeterRegistry meters = new SimpleMeterRegistry();
    try {
      DGen a = runtime(b -> b.concurrencyLimit(limit, 1).executor(executor).meterRegistry(meters));
      probe.block = new CountDownLatch(1);
      probe.lockedMillis = 0;
      StartOptions.Builder o =
          options(a, tenant).concurrencyLimit(limit).lockTimeout(Duration.ofMinutes(5));
      ServerRef<Object> holder = startPaced(a, "holder", o);
      holder.cast(-1);
      assertThat(probe.entered.await(30, TimeUnit.SECONDS)).isTrue();
      ProcessRef<Object> first = startPaced(a, "first", o);
      first.cast(-2);
      await().atMost(Duration.ofSeconds(30)).until(() -> throttled(meters) == 1);
      ServerRef<Object> second = startPaced(a, "second", o);
      second.cast(-2);
      await().atMost(Duration.ofSeconds(30)).until(() -> throttled(meters) == 2);

      executor.holding = true;
      probe.block.countDown(); // the holder's run ends: its permit frees, the first is woken
      await("the first woken, its wake-up held with the holder's next drain")
          .atMost(Duration.ofSeconds(30))
          .until(() -> throttled(meters) == 1 && executor.held() >= 2);
      first.stop();
      executor.release();

      await("the second takes the permit")
          .atMost(Duration.ofSeconds(30))
          .until(() -> probe.lockedRuns.size() == 2);
      assertThat(second.priorityCall(new ReadApplied())).containsExactly(-2);
      assertThat(first.isAlive()).isFalse();
    } finally {
      executor.shutdown();
    }
  }

  private double throttled(SimpleMeterRegistry meters) {
    var g = meters.find("dgen.limit.throttled").tag("limit", limit).gauge();
    return g == null ? -1 : g.value();
  }

  @Test
  void aStuckHoldersPermit_returnsAtExpiry_andItsLateResultIsRefused() throws Exception {
    DGen a = runtime(b -> b.concurrencyLimit(limit, 1));
    probe.block = new CountDownLatch(1);
    probe.lockedMillis = 0;
    StartOptions.Builder o =
        options(a, tenant).concurrencyLimit(limit).lockTimeout(Duration.ofSeconds(1));
    ServerRef<Object> stuck = startPaced(a, "stuck", o);
    stuck.cast(-1);
    assertThat(probe.entered.await(30, TimeUnit.SECONDS)).isTrue();
    ServerRef<Object> next = startPaced(a, "next", o);
    next.cast(-2);
    // The stuck holder's permit expires after a second: the next server takes it and completes.
    await().atMost(Duration.ofSeconds(30)).until(() -> probe.lockedRuns.size() >= 1);
    probe.block.countDown(); // the stuck holder returns late: its result is refused
    await().atMost(Duration.ofSeconds(30)).until(() -> !fenced.isEmpty());
    assertThat(fenced.get(0)).hasMessageContaining(limit);
    // Its lock is released and its message re-queued at the head, as after a bust: the message
    // runs again (its cast, then handleLocked under a permit).
    await().atMost(Duration.ofSeconds(30)).until(() -> probe.lockedRuns.size() == 3);
    await()
        .atMost(Duration.ofSeconds(30))
        .until(() -> stuck.priorityCall(new ReadApplied()).equals(List.of(-1, -1)));
    assertThat(next.priorityCall(new ReadApplied())).isEqualTo(List.of(-2));
  }

  /**
   * A batch takes the lock and its permit, but does not learn that it committed; by the time its
   * process meets its own lock again, the permit has expired and another server holds it. The lock
   * is not run as this process's (that would run handleLocked beside the permit's holder, and have
   * its result refused for the lost permit): its message is re-queued at the head and runs again
   * under a permit of its own.
   */
  @Test
  void aRecoveredLockWhosePermitExpired_isRequeued_notRunBesideThePermitsHolder() throws Exception {
    ManualTestClock clock = new ManualTestClock(Instant.now());
    // The holder's next batch comes three seconds after the one that did not learn its outcome.
    DGen a =
        runtime(
            b ->
                b.concurrencyLimit(limit, 1)
                    .clock(clock)
                    .retryBackoff(Duration.ofSeconds(3), Duration.ofSeconds(3)));
    DGen b = runtime(x -> x.clock(clock));
    probe.block = new CountDownLatch(1);
    probe.lockedMillis = 0;
    ServerRef<Object> holder =
        startPaced(
            a,
            "holder",
            options(a, tenant).concurrencyLimit(limit).lockTimeout(Duration.ofSeconds(1)));
    ServerKeys keys =
        new ServerKeys(tenant.subspace(), Buckets.of(tenant.bucketCount()), holder.tuid());
    probe.arm = () -> hideTheNextCommitsOutcome(keys);
    holder.cast(-3);
    await().atMost(Duration.ofSeconds(30)).until(() -> lockOf(keys) != null);
    clock.advance(Duration.ofSeconds(2)); // the lock's permit expires
    ServerRef<Object> other =
        startPaced(
            b,
            "other",
            options(b, tenant).concurrencyLimit(limit).lockTimeout(Duration.ofSeconds(1)));
    other.cast(-1); // takes the expired permit, and stays inside handleLocked
    assertThat(probe.entered.await(30, TimeUnit.SECONDS)).isTrue();

    // The holder meets its lock, finds its permit gone, and re-queues the message.
    await().atMost(Duration.ofSeconds(30)).until(() -> lockOf(keys) == null);
    assertThat(probe.mostInside.get()).isEqualTo(1);
    assertThat(probe.lockedRuns).isEmpty();

    probe.block.countDown(); // the other server's permit comes back: the message runs under it
    await()
        .atMost(Duration.ofSeconds(30))
        .until(() -> holder.priorityCall(new ReadApplied()).equals(List.of(-3, -3)));
    assertThat(probe.lockedRuns).hasSize(2);
    assertThat(probe.mostInside.get()).isEqualTo(1);
    assertThat(fenced).isEmpty();
  }

  private byte @Nullable [] lockOf(ServerKeys keys) {
    return backend.run(tx -> tx.get(keys.lockKey()));
  }
}
