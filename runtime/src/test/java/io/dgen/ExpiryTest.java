package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.Tally.Add;
import io.dgen.Tally.Get;
import io.dgen.Tally.Msg;
import io.dgen.Tally.Remind;
import io.dgen.Tally.State;
import io.dgen.admin.DGenAdmin;
import io.dgen.admin.ServerAdmin;
import io.dgen.backend.Backend;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Hosted servers that expire ({@code HostOptions.expireAfter}): one idle for the expiry is deleted
 * by its holder's collection, a message that comes after it finds a new server even before the
 * collection, a server with a pending timer, queued work or a lock is kept, and a push racing the
 * collection is neither lost nor applied to the old server. The wall clock is a manual one; servers
 * are unloaded (and so marked idle) on the real clock's short idle timeout.
 */
class ExpiryTest extends RuntimeTestBase {

  static final String KIND = "session";
  static final Duration EXPIRY = Duration.ofHours(1);
  static final Duration PAST_EXPIRY = EXPIRY.plusSeconds(1);

  final ManualTestClock clock = new ManualTestClock(Instant.parse("2026-03-01T10:00:00Z"));
  final Tally.Seen seen = new Tally.Seen();
  final List<Tuple> expired = new CopyOnWriteArrayList<>();
  final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  final String[] path = {"expiry", UUID.randomUUID().toString()};
  private final List<DGen> runtimes = new ArrayList<>();

  @AfterEach
  void closeRuntimes() {
    runtimes.forEach(DGen::close);
  }

  /** A runtime on the test's backend and manual clock, that hears expiries. */
  DGen runtime(Backend over) {
    DGen d =
        DGen.builder(over)
            .clock(clock)
            .buckets(8)
            .leaseDuration(Duration.ofSeconds(2))
            .retryBackoff(Duration.ofMillis(1), Duration.ofMillis(50))
            .meterRegistry(registry)
            .listener(
                new DGenListener() {
                  @Override
                  public void serverExpired(Tenant t, Tuple tuid) {
                    expired.add(tuid);
                  }
                })
            .build();
    runtimes.add(d);
    return d;
  }

  /** A runtime that hosts the kind with the expiry, unloading idle servers after 200 ms. */
  DGen hosting(UnaryOperator<HostOptions.Builder> more) {
    DGen d = runtime(backend);
    d.host(
        KIND,
        () -> new Tally(seen, "holder"),
        more.apply(
                HostOptions.builder(d.tenant(path))
                    .idleTimeout(Duration.ofMillis(200))
                    .expireAfter(EXPIRY))
            .build());
    return d;
  }

  DGen hosting() {
    return hosting(b -> b);
  }

  ServerRef<Msg> refIn(DGen d, String id) {
    return d.ref(d.tenant(path), KIND, Tuple.from(id));
  }

  static Tuple tuid(String id) {
    return Tuple.from(KIND, id);
  }

  Optional<ServerAdmin> stored(String id) {
    return new DGenAdmin(backend).tenant(path).orElseThrow().server(tuid(id));
  }

  /** Waits until the server's holder unloaded it and marked it idle. */
  void awaitIdle(String id) {
    await()
        .atMost(Duration.ofSeconds(30))
        .until(
            () -> stored(id).flatMap(ServerAdmin::behaviour).orElse("").startsWith("hosted (idle"));
  }

  /** A server that applied {@code Add(5)} and was unloaded since (and so marked idle). */
  ServerRef<Msg> idleWithFive(DGen d, String id) {
    ServerRef<Msg> r = refIn(d, id);
    r.cast(new Add(5));
    await().atMost(BULK_WAIT).until(() -> get(r).total() == 5);
    awaitIdle(id);
    return r;
  }

  static State get(ServerRef<Msg> r) {
    return r.call(new Get(), Duration.ofSeconds(30));
  }

  double expiredMetric() {
    var c = registry.find("dgen.servers.expired").counter();
    return c == null ? 0 : c.count();
  }

  @Test
  void anIdleServer_isCollectedAfterItsExpiry_andItsNextMessageCreatesItAnew() {
    DGen d = hosting();
    ServerRef<Msg> r = idleWithFive(d, "a");
    assertThat(stored("a").flatMap(ServerAdmin::behaviour).orElseThrow())
        .as("the unload recorded when it expires")
        .contains("expires at 2026-03-01T11:00");

    clock.advance(EXPIRY.minusSeconds(1));
    d.clockAdvanced();
    assertThat(stored("a")).as("not idle for the expiry yet: kept").isPresent();
    assertThat(expired).isEmpty();

    clock.advance(Duration.ofSeconds(2));
    d.clockAdvanced();
    assertThat(stored("a")).as("collected: state, queue and entry gone").isEmpty();
    assertThat(expired).containsExactly(tuid("a"));
    assertThat(expiredMetric()).isEqualTo(1.0);

    r.cast(new Add(1));
    await().atMost(BULK_WAIT).until(() -> get(r).count() == 1);
    assertThat(get(r).total()).as("a new server: init ran again").isEqualTo(1);
    assertThat(seen.inits).hasSize(2);
  }

  @Test
  void aMessageAfterTheIdleTime_findsANewServer_beforeTheCollection() {
    DGen d = hosting();
    ServerRef<Msg> r = idleWithFive(d, "b");

    clock.advance(PAST_EXPIRY); // no clockAdvanced: the collection has not run
    r.cast(new Add(2));
    await().atMost(BULK_WAIT).until(() -> get(r).count() == 1);

    assertThat(get(r).total()).as("applied to a new server, not to the old state").isEqualTo(2);
    assertThat(seen.inits).hasSize(2);
    assertThat(expired).containsExactly(tuid("b"));
    assertThat(expiredMetric()).isEqualTo(1.0);
  }

  @Test
  void aCallAfterTheIdleTime_findsANewServer() {
    DGen d = hosting();
    ServerRef<Msg> r = idleWithFive(d, "c");

    clock.advance(PAST_EXPIRY);
    Long total = r.call(new Tally.AddAndGet(3), Duration.ofSeconds(30));

    assertThat(total).as("the call ran on a new server").isEqualTo(3);
    assertThat(expired).containsExactly(tuid("c"));
  }

  @Test
  void atomicWork_onAnIdleServerOfAnExpiringKind_isRefused_andItsNextMessageRuns() {
    DGen d = hosting();
    ServerRef<Msg> r = idleWithFive(d, "t");
    clock.advance(PAST_EXPIRY); // expired, not yet judged: the old state must not be used

    assertThatThrownBy(() -> d.transact(d.tenant(path), tx -> tx.call(r, new Tally.AddAndGet(1))))
        .isInstanceOf(DGenException.class)
        .hasMessageContaining("is idle and its kind has an expiry");
    assertThat(seen.inits).as("nothing ran").hasSize(1);

    Long total = r.call(new Tally.AddAndGet(3), Duration.ofSeconds(30));
    assertThat(total).as("the holder judged it expired: a new server").isEqualTo(3);
    Long after = d.transact(d.tenant(path), tx -> tx.call(r, new Tally.AddAndGet(1)));
    assertThat(after).as("loaded and judged: atomic work runs on it").isEqualTo(4);
  }

  @Test
  void aServerWithAPendingTimer_doesNotExpire() {
    DGen d = hosting();
    ServerRef<Msg> r = refIn(d, "t");
    r.cast(new Add(5));
    r.cast(new Remind(1, Duration.ofHours(3).toMillis())); // its own timer, from the callback
    await().atMost(BULK_WAIT).until(() -> get(r).count() == 1);
    awaitIdle("t");
    assertThat(stored("t").flatMap(ServerAdmin::behaviour).orElseThrow())
        .as("no expiry recorded while a timer is pending")
        .isEqualTo("hosted (idle)");

    clock.advance(PAST_EXPIRY);
    d.clockAdvanced();
    assertThat(stored("t")).isPresent();
    assertThat(get(r).total()).isEqualTo(5);

    clock.advance(Duration.ofHours(2)); // the timer fires: the old server gets it
    d.clockAdvanced();
    await().atMost(BULK_WAIT).until(() -> get(r).total() == 6);
    assertThat(expired).isEmpty();
    assertThat(seen.inits).hasSize(1);
  }

  @Test
  void aTimerScheduledOnAnIdleServer_keepsIt() {
    DGen d = hosting();
    ServerRef<Msg> r = idleWithFive(d, "u");

    r.castAfter(new Add(1), Duration.ofHours(3)); // through the ref, while it is unloaded
    assertThat(stored("u").flatMap(ServerAdmin::behaviour).orElseThrow())
        .isEqualTo("hosted (idle)");
    clock.advance(PAST_EXPIRY);
    d.clockAdvanced();

    assertThat(stored("u")).isPresent();
    assertThat(get(r).total()).isEqualTo(5);
    assertThat(expired).isEmpty();
  }

  @Test
  void aPausedServer_withQueuedMessages_doesNotExpire() {
    DGen d = hosting();
    ServerRef<Msg> r = idleWithFive(d, "p");

    ServerAdmin admin = stored("p").orElseThrow();
    assertThat(admin.pause("maintenance")).isTrue();
    r.cast(new Add(1)); // queued behind the pause
    clock.advance(PAST_EXPIRY.multipliedBy(2));
    d.clockAdvanced();

    assertThat(stored("p")).isPresent();
    assertThat(expired).isEmpty();
    assertThat(admin.resume()).isTrue();
    await().atMost(BULK_WAIT).until(() -> get(r).total() == 6);
    assertThat(seen.inits).hasSize(1);
  }

  @Test
  void aLockedServer_doesNotExpire() throws Exception {
    CountDownLatch release = new CountDownLatch(1);
    CountDownLatch locked = new CountDownLatch(1);
    DGen d = runtime(backend);
    d.host(
        KIND,
        () -> new Locker(locked, release),
        HostOptions.builder(d.tenant(path))
            .idleTimeout(Duration.ofMillis(200))
            .expireAfter(EXPIRY)
            .build());
    ServerRef<Msg> r = refIn(d, "k");
    r.cast(new Add(5));
    r.cast(new Tally.Fail("lock")); // Locker takes the lock on it
    assertThat(locked.await(30, TimeUnit.SECONDS)).isTrue();
    r.cast(new Add(1)); // waits for the lock

    clock.advance(PAST_EXPIRY);
    d.clockAdvanced();
    assertThat(stored("k")).isPresent();

    release.countDown();
    await().atMost(BULK_WAIT).until(() -> r.priorityCall(new Get()).total() == 6);
    assertThat(expired).isEmpty();
  }

  @Test
  void pushesRacingTheCollection_areAppliedOnce_toNewServers() throws Exception {
    DGen d = hosting();
    int servers = 40;
    for (int i = 0; i < servers; i++) {
      refIn(d, "r" + i).cast(new Add(5));
    }
    for (int i = 0; i < servers; i++) {
      ServerRef<Msg> r = refIn(d, "r" + i);
      await().atMost(BULK_WAIT).until(() -> get(r).total() == 5);
    }
    for (int i = 0; i < servers; i++) {
      awaitIdle("r" + i);
    }

    clock.advance(PAST_EXPIRY);
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try {
      Future<?> collect = pool.submit(d::clockAdvanced);
      Future<?> push =
          pool.submit(
              () -> {
                for (int i = 0; i < servers; i++) {
                  refIn(d, "r" + i).cast(new Add(1));
                }
              });
      collect.get(5, TimeUnit.MINUTES);
      push.get(5, TimeUnit.MINUTES);
    } finally {
      pool.shutdown();
    }
    d.clockAdvanced(); // what the race left for the collection

    for (int i = 0; i < servers; i++) {
      ServerRef<Msg> r = refIn(d, "r" + i);
      await().atMost(BULK_WAIT).until(() -> get(r).count() == 1);
      assertThat(get(r).total()).as("server r%d: the push went to a new server, once", i).isOne();
    }
    assertThat(expired).as("each old server expired once").hasSize(servers).doesNotHaveDuplicates();
    assertThat(expiredMetric()).isEqualTo(servers);
  }

  @Test
  void aVisitorsInlineCall_toADueServer_goesToANewServer() {
    DGen holder = hosting();
    DGen visitor = runtime(backend);
    visitor.host(
        KIND,
        () -> new Tally(seen, "visitor"),
        HostOptions.builder(visitor.tenant(path)).holdBuckets(false).expireAfter(EXPIRY).build());
    ServerRef<Msg> r = refIn(visitor, "v");
    assertThat(r.call(new Tally.AddAndGet(5), Duration.ofSeconds(30))).isEqualTo(5L);
    ServerRef<Msg> q = refIn(visitor, "w");
    q.cast(new Add(7));
    await().atMost(BULK_WAIT).until(() -> get(q).total() == 7);
    awaitIdle("v");
    awaitIdle("w");

    clock.advance(PAST_EXPIRY);
    assertThat(r.call(new Tally.AddAndGet(1), Duration.ofSeconds(30)))
        .as("the visitor's call is queued for the holder, which makes a new server")
        .isEqualTo(1L);
    assertThat(q.priorityCall(new Get()).total())
        .as("a priority call too goes to a new server")
        .isZero();
    assertThat(expired).containsExactlyInAnyOrder(tuid("v"), tuid("w"));
    assertThat(holder.memberId()).as("the holder ran them").isNotNull();
  }

  @Test
  void badExpiries_areRefused_beforeAnythingIsWritten() {
    HostOptions.Builder b = HostOptions.builder(tenant);
    assertThatThrownBy(() -> b.expireAfter(Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("expireAfter must be positive");
    assertThatThrownBy(() -> b.expireAfter(Duration.ofSeconds(-1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("expireAfter must be positive");
    assertThatThrownBy(() -> b.expireAfter(Duration.ofSeconds(2)).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("shorter than the call timeout");
    DGen d = runtime(backend);
    HostOptions shorterThanTheLease =
        HostOptions.builder(d.tenant(path))
            .callTimeout(Duration.ofMillis(500))
            .expireAfter(Duration.ofSeconds(1))
            .build();
    assertThatThrownBy(() -> d.host(KIND, () -> new Tally(seen, "x"), shorterThanTheLease))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("shorter than the runtime's lease");
  }

  /** A tally that takes the lock on {@code Fail} and holds it until released. */
  static final class Locker implements DGenServer<State, Msg> {
    private final CountDownLatch locked;
    private final CountDownLatch release;

    Locker(CountDownLatch locked, CountDownLatch release) {
      this.locked = locked;
      this.release = release;
    }

    @Override
    public InitResult<State> init(Object arg) {
      return InitResult.ok(new State(0, 0));
    }

    @Override
    public Result<State> handleCast(Msg message, State state) {
      if (message instanceof Add a) {
        return Result.noReply(new State(state.total() + a.n(), state.count() + 1));
      }
      return Result.lock(state);
    }

    @Override
    public Result<State> handleCall(Msg request, From from, State state) {
      return Result.reply(state, state);
    }

    @Override
    public Result<State> handleLocked(DbContext db, Event<Msg> event, State state)
        throws InterruptedException {
      locked.countDown();
      release.await();
      return Result.noReply(state);
    }
  }
}
