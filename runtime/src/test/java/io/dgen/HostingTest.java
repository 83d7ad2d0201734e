package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.apple.foundationdb.subspace.Subspace;
import com.apple.foundationdb.tuple.Tuple;
import io.dgen.Tally.Add;
import io.dgen.Tally.Get;
import io.dgen.Tally.Msg;
import io.dgen.Tally.State;
import io.dgen.admin.DGenAdmin;
import io.dgen.admin.ServerControl;
import io.dgen.admin.TenantAdmin;
import io.dgen.backend.Backend;
import io.dgen.backend.BackendException;
import io.dgen.backend.FaultInjectingBackend;
import io.dgen.backend.ForwardingBackend;
import io.dgen.backend.Transaction;
import io.dgen.internal.hosting.Placement;
import io.dgen.internal.keys.Buckets;
import io.dgen.internal.keys.ServerKeys;
import io.dgen.internal.keys.TenantKeys;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import java.util.function.UnaryOperator;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import java.util.stream.LongStream;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Servers addressed by id ({@code DGen.host} and {@code DGen.ref}), several runtimes on one
 * backend: a server is created by its first message, runs in exactly one runtime at a time (the
 * holder of its bucket's lease), is reached from runtimes that do not host its kind, moves when a
 * runtime leaves or is cut off, and every message is applied once throughout.
 */
class HostingTest extends RuntimeTestBase {

  private static final String KIND = "tally";
  private static final int BUCKETS = 64;
  private static final Duration LEASE = Duration.ofMillis(600);

  private final Tally.Seen seen = new Tally.Seen();

  /** The lease of the runtimes a test builds; {@link #LEASE} unless the test needs no moves. */
  private Duration lease = LEASE;

  private final List<DGen> runtimes = new ArrayList<>();
  private final String[] path = {"hosting", UUID.randomUUID().toString()};

  @AfterEach
  void closeRuntimes() {
    runtimes.forEach(DGen::close);
  }

  /** A runtime over {@code over} (the test's backend unless given), with a short lease. */
  private DGen runtime(Backend over) {
    return runtime(over, b -> b);
  }

  /** As {@link #runtime(Backend)}, with more of the builder set by {@code more}. */
  private DGen runtime(Backend over, UnaryOperator<DGen.Builder> more) {
    DGen d =
        more.apply(
                DGen.builder(over)
                    .buckets(BUCKETS)
                    .leaseDuration(lease)
                    .retryBackoff(Duration.ofMillis(1), Duration.ofMillis(50)))
            .build();
    runtimes.add(d);
    return d;
  }

  /** A runtime that hosts the kind, named {@code name} in what the servers record. */
  private DGen hosting(
      String name, Backend over, Function<HostOptions.Builder, HostOptions.Builder> opts) {
    DGen d = runtime(over);
    Tenant t = d.tenant(path);
    d.host(KIND, () -> new Tally(seen, name), opts.apply(HostOptions.builder(t)).build());
    return d;
  }

  private DGen hosting(String name) {
    return hosting(name, backend, b -> b);
  }

  private ServerRef<Msg> refIn(DGen d, long id) {
    return d.ref(d.tenant(path), KIND, Tuple.from(id));
  }

  private TenantAdmin admin() {
    return new DGenAdmin(backend).tenant(path).orElseThrow();
  }

  /** Waits until every bucket's lease is held by its desired owner among {@code members}. */
  private void awaitPlacement(DGen... members) {
    List<UUID> ids = new ArrayList<>();
    for (DGen m : members) {
      ids.add(m.memberId());
    }
    SettledPlacement.await(this::admin, KIND, BUCKETS, ids, Duration.ofSeconds(60));
  }

  /**
   * Waits until each of servers {@code 0..servers-1}, seen through {@code d}, tallied {@code
   * expected} (looking at once: most are done by the time the first is).
   */
  private void awaitTallies(DGen d, int servers, long expected) {
    for (int s = 0; s < servers; s++) {
      ServerRef<Msg> r = refIn(d, s);
      await().pollDelay(Duration.ZERO).atMost(BULK_WAIT).until(() -> tallied(r) == expected);
    }
  }

  private static long tallied(ServerRef<Msg> ref) {
    State s = ref.call(new Get(), State.class, Duration.ofSeconds(30));
    return s.total();
  }

  @Test
  void theFirstMessage_createsTheServer_andInitGetsTheIdItWasAddressedWith() {
    DGen d = hosting("a");
    ServerRef<Msg> account = refIn(d, 42);

    account.cast(new Add(5));

    assertThat((Object) account.tuid()).isEqualTo(Tuple.from(KIND, 42L));
    await().atMost(BULK_WAIT).until(() -> tallied(account) == 5);
    assertThat(seen.inits).containsExactly(Tuple.from(42L));
    assertThat(admin().servers())
        .extracting(TenantAdmin.ServerEntry::tuid)
        .contains(Tuple.from(KIND, 42L));
  }

  @Test
  void aRuntimeThatDoesNotHostTheKind_castsAndCallsThroughARef() {
    hosting("holder");
    DGen client = runtime(backend);
    ServerRef<Msg> account = client.ref(client.tenant(path), KIND, Tuple.from(7));

    account.cast(new Add(3));
    long after = account.call(new Add(4), Long.class, Duration.ofSeconds(30));
    assertThat(after).isEqualTo(7);
    State state = account.call(new Get(), Duration.ofSeconds(30));

    assertThat(state)
        .as("a Call's reply, decoded as the type it names by a runtime that does not host it")
        .isEqualTo(new State(7, 2));
    assertThat(seen.runtimes.get(Tuple.from(KIND, 7L))).containsExactly("holder");
    String kept = account.submit(new Get());
    assertThatThrownBy(() -> account.awaitReply(kept, Duration.ofSeconds(30)))
        .as(
            "a reply awaited by id, its type unnamed, is not decoded by a runtime that does not know it")
        .isInstanceOf(UndecodableDataException.class)
        .hasMessageContaining(State.class.getName());
  }

  @Test
  void threeRuntimes_shareTheBuckets_andEveryCastIsAppliedOnce_eachServerInOneRuntime()
      throws Exception {
    // a lease long enough that a loaded machine's late heartbeat moves no bucket: after placement
    // settled, a server consumed in two runtimes is a placement defect, not an expiry
    lease = Duration.ofSeconds(10);
    DGen a = hosting("a");
    DGen b = hosting("b");
    DGen c = hosting("c");
    awaitPlacement(a, b, c);
    int servers = 100;
    int perServer = 20;
    ExecutorService pool = Executors.newFixedThreadPool(6);
    try {
      List<Future<?>> sent = new ArrayList<>();
      for (DGen from : List.of(a, b, c)) {
        for (int t = 0; t < 2; t++) {
          int half = t;
          sent.add(
              pool.submit(
                  () -> {
                    for (int i = 0; i < perServer; i++) {
                      for (int s = 0; s < servers; s++) {
                        if (s % 2 == half) {
                          refIn(from, s).cast(new Add(1));
                        }
                      }
                    }
                  }));
        }
      }
      for (Future<?> f : sent) {
        f.get();
      }
    } finally {
      pool.shutdown();
    }
    awaitTallies(a, servers, 3L * perServer);
    assertThat(seen.runtimes).hasSize(servers);
    assertThat(seen.runtimes.values()).allSatisfy(in -> assertThat(in).hasSize(1));
    assertThat(seen.runtimes.values().stream().flatMap(Set::stream).collect(Collectors.toSet()))
        .containsExactlyInAnyOrder("a", "b", "c");
    assertThat(seen.inits).hasSize(servers);
  }

  /**
   * Two runtimes hosting the kind, settled; returns them as (holder, visitor) of server {@code id},
   * which exists (it applied one cast, in its holder).
   */
  private List<DGen> holderAndVisitorOf(long id) {
    lease = Duration.ofSeconds(10); // no bucket moves under a loaded machine's late heartbeat
    DGen a = hosting("a");
    DGen b = hosting("b");
    awaitPlacement(a, b);
    refIn(a, id).cast(new Add(1));
    Tuple tuid = Tuple.from(KIND, id);
    await().atMost(BULK_WAIT).until(() -> seen.runtimes.containsKey(tuid));
    return seen.runtimes.get(tuid).contains("a") ? List.of(a, b) : List.of(b, a);
  }

  @Test
  void aCallFromAReplicaThatDoesNotHoldTheServer_runsInlineThere_againstTheDurableState() {
    List<DGen> two = holderAndVisitorOf(5);
    DGen visitor = two.get(1);
    String visitorName = visitor == runtimes.get(0) ? "a" : "b";
    ServerRef<Msg> r = refIn(visitor, 5);
    await().atMost(BULK_WAIT).until(() -> tallied(r) == 1);
    seen.called.clear();

    for (long i = 2; i <= 21; i++) {
      assertThat(refIn(visitor, 5).call(new Tally.AddAndGet(1))).isEqualTo(i);
    }

    assertThat(seen.called.get(Tuple.from(KIND, 5L)))
        .as("every call ran in the caller's runtime, none was queued for the holder")
        .containsExactly(visitorName);
    assertThat(refIn(two.get(0), 5).call(new Get())).isEqualTo(new State(21, 21));
    assertThat(ServerControl.of(r).queueLength()).isZero();
  }

  @Test
  void callsRunInlineByAVisitor_andCastsConsumedByTheHolder_areEachAppliedOnceInOneOrder()
      throws Exception {
    List<DGen> two = holderAndVisitorOf(6);
    DGen holder = two.get(0);
    DGen visitor = two.get(1);
    int each = 150;
    ExecutorService pool = Executors.newFixedThreadPool(4);
    List<Long> replies = new CopyOnWriteArrayList<>();
    try {
      List<Future<?>> sent = new ArrayList<>();
      for (int t = 0; t < 2; t++) {
        sent.add(
            pool.submit(
                () -> {
                  for (int i = 0; i < each; i++) {
                    refIn(holder, 6).cast(new Add(1));
                  }
                }));
        sent.add(
            pool.submit(
                () -> {
                  ServerRef<Msg> r = refIn(visitor, 6);
                  long last = 0;
                  for (int i = 0; i < each; i++) {
                    long now = r.call(new Tally.AddAndGet(1));
                    assertThat(now).as("one caller's replies only grow").isGreaterThan(last);
                    last = now;
                    replies.add(now);
                  }
                }));
      }
      for (Future<?> f : sent) {
        f.get();
      }
    } finally {
      pool.shutdown();
    }
    long total = 1 + 4L * each;
    await().atMost(BULK_WAIT).until(() -> tallied(refIn(holder, 6)) == total);
    assertThat(refIn(visitor, 6).call(new Get())).isEqualTo(new State(total, total));
    assertThat(replies)
        .as("no two calls saw the same state: each ran once, serialized with the casts")
        .doesNotHaveDuplicates()
        .hasSize(2 * each);
    assertThat(seen.runtimes.get(Tuple.from(KIND, 6L)))
        .as("the casts were consumed by the holder alone")
        .hasSize(1);
  }

  @Test
  void aVisitorsInlineCall_isAppliedOnce_whenItsCommitsOutcomeIsUnknown_orItIsRetried() {
    List<DGen> two = holderAndVisitorOf(8);
    DGen visitor = two.get(1);
    await().atMost(BULK_WAIT).until(() -> tallied(refIn(visitor, 8)) == 1);

    faults().commitUnknownResult(1, true); // applied, but reported as commit_unknown_result
    long first = refIn(visitor, 8).call(new Tally.AddAndGet(10));
    faults().commitUnknownResult(1, false); // not applied, reported the same
    long second = refIn(visitor, 8).call(new Tally.AddAndGet(10));
    faults().failNextCommits(2); // not_committed twice: a conflict with the holder, say
    long third = refIn(visitor, 8).call(new Tally.AddAndGet(10));

    assertThat(List.of(first, second, third)).containsExactly(11L, 21L, 31L);
    assertThat(refIn(two.get(0), 8).call(new Get())).isEqualTo(new State(31, 4));
  }

  @Test
  void aRuntimeThatHoldsNoBuckets_runsCallsInline_andLeavesEverythingElseToTheHolder() {
    DGen holder = hosting("holder");
    DGen web = hosting("web", backend, b -> b.holdBuckets(false));
    awaitPlacement(holder);
    int servers = 20;
    for (long s = 0; s < servers; s++) {
      refIn(web, s).cast(new Add(1)); // creates each server, at its holder
    }
    awaitTallies(web, servers, 1);
    seen.called.clear();

    for (long s = 0; s < servers; s++) {
      assertThat(refIn(web, s).call(new Tally.AddAndGet(2))).isEqualTo(3);
    }

    assertThat(seen.runtimes.values())
        .as("every cast was consumed by the holder: the web tier took no lease")
        .hasSize(servers)
        .allSatisfy(in -> assertThat(in).containsExactly("holder"));
    assertThat(seen.called.values())
        .as("every call ran inline in the web tier")
        .hasSize(servers)
        .allSatisfy(in -> assertThat(in).containsExactly("web"));
  }

  @Test
  void aCallToAServerThatDoesNotExist_isQueued_andItsHolderCreatesIt() {
    List<DGen> two = holderAndVisitorOf(7);
    for (long fresh = 100; fresh < 110; fresh++) {
      DGen from = two.get((int) (fresh % 2));
      Tuple tuid = Tuple.from(KIND, fresh);

      assertThat(refIn(from, fresh).call(new Tally.AddAndGet(4))).isEqualTo(4);

      refIn(from, fresh).cast(new Add(0)); // tells which runtime consumes the server
      await().atMost(BULK_WAIT).until(() -> seen.runtimes.containsKey(tuid));
      assertThat(seen.called.get(tuid))
          .as("init and the first call ran where the server is consumed, its holder")
          .isEqualTo(seen.runtimes.get(tuid));
    }
    assertThat(seen.inits).hasSize(11).doesNotHaveDuplicates();
  }

  /** Two hosting runtimes, {@code a} behind a partition the test can cut, and a tally each. */
  private record CutOff(Partition partition, DGen a, DGen b) {}

  /** Two runtimes sharing the buckets, {@code servers} tallies at 1, added through {@code a}. */
  private CutOff twoRuntimesOneCuttable(int servers) {
    Partition partition = new Partition(backend);
    DGen a = hosting("a", partition, b -> b);
    DGen b = hosting("b");
    awaitPlacement(a, b);
    for (int s = 0; s < servers; s++) {
      refIn(a, s).cast(new Add(1)); // a loads the servers of the buckets it holds
    }
    awaitTallies(a, servers, 1);
    return new CutOff(partition, a, b);
  }

  @Test
  void aCutOffRuntimesBuckets_areTakenAfterItsLease_andNothingIsLostOrAppliedTwice() {
    int servers = 40;
    CutOff two = twoRuntimesOneCuttable(servers);
    Partition cutOff = two.partition();
    DGen a = two.a();
    DGen b = two.b();

    cutOff.cut = true; // a stops beating and committing, as if stalled or partitioned
    for (int s = 0; s < servers; s++) {
      refIn(b, s).cast(new Add(10));
    }
    awaitPlacement(b);
    awaitTallies(b, servers, 11);

    cutOff.cut = false; // a comes back: its old leases are gone, its batches fenced
    for (int s = 0; s < servers; s++) {
      refIn(a, s).cast(new Add(100));
    }
    awaitTallies(a, servers, 111);
    for (int s = 0; s < servers; s++) {
      ServerRef<Msg> r = refIn(a, s);
      assertThat(r.call(new Get(), State.class, Duration.ofSeconds(30)).count())
          .as("messages applied")
          .isEqualTo(3);
    }
  }

  @Test
  void aCallInARuntimeThatLostTheBucket_beforeItsRoundSaysSo_isAnsweredByTheNewHolder() {
    int servers = 40;
    CutOff two = twoRuntimesOneCuttable(servers);
    Partition cutOff = two.partition();
    DGen a = two.a();
    DGen b = two.b();

    List<ServerRef<Msg>> refs = new ArrayList<>();
    for (int s = 0; s < servers; s++) {
      refs.add(refIn(a, s));
    }

    cutOff.cut = true;
    awaitPlacement(b); // b took a's buckets
    cutOff.roundsCut = true; // a's rounds still fail: in its own view it holds its old buckets
    cutOff.cut = false;

    List<CompletableFuture<State>> calls = new ArrayList<>();
    for (ServerRef<Msg> ref : refs) {
      calls.add(ref.callAsync(new Get(), Duration.ofSeconds(30)));
    }
    cutOff.roundsCut = false;
    for (int s = 0; s < servers; s++) {
      assertThat(calls.get(s).join().count()).as("server %d answered", s).isEqualTo(1);
    }
  }

  /**
   * A hosted server in lock mode whose handleLocked runs ({@code "a"}: until the test ends) or
   * completes ({@code "b"}); its state counts the completed jobs, a call answers it.
   */
  private static final class Locker implements DGenServer<Long, String> {
    private final String runtime;
    private final CountDownLatch holding;
    private final CountDownLatch release;

    Locker(String runtime, CountDownLatch holding, CountDownLatch release) {
      this.runtime = runtime;
      this.holding = holding;
      this.release = release;
    }

    @Override
    public InitResult<Long> init(@Nullable Object id) {
      return InitResult.ok(0L);
    }

    @Override
    public Result<Long> handleCast(String job, Long done) {
      return Result.lock(done);
    }

    @Override
    public Result<Long> handleCall(String get, From from, Long done) {
      return Result.reply(done, done);
    }

    @Override
    public Result<Long> handleLocked(DbContext db, Event<String> event, Long done)
        throws InterruptedException {
      if (runtime.equals("a")) {
        holding.countDown();
        release.await(2, TimeUnit.MINUTES);
      }
      return Result.noReply(done + 1);
    }
  }

  /**
   * A lock taken by a hosted server's holder whose runtime then stops beating is busted by the
   * runtime that takes the bucket over, as soon as it sees the holder gone, not at a {@code
   * lockTimeout} (none, or one of ten minutes): the holder can neither commit nor release (its
   * lease is lost), so nobody else would release it before. With a concurrency limit, the bust
   * gives the lock's permit back too, or the new holder's run would wait for the permit's expiry
   * instead.
   */
  @ParameterizedTest(name = "concurrency limit={0}")
  @ValueSource(booleans = {false, true})
  void aLockWhoseHoldersRuntimeIsGone_isBustedByTheNewHolder_beforeAnyLockTimeout(boolean limited) {
    String gate = "gate-" + UUID.randomUUID();
    UnaryOperator<DGen.Builder> limits = b -> limited ? b.concurrencyLimit(gate, 1) : b;
    UnaryOperator<HostOptions.Builder> options =
        o -> limited ? o.concurrencyLimit(gate).lockTimeout(Duration.ofMinutes(10)) : o;
    CountDownLatch holding = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    Partition cutOff = new Partition(backend);
    try {
      DGen a = runtime(cutOff, limits);
      a.host(
          "locker",
          () -> new Locker("a", holding, release),
          options.apply(HostOptions.builder(a.tenant(path))).build());
      ServerRef<String> viaA = a.ref(a.tenant(path), "locker", Tuple.from(7L));
      viaA.cast("job 1");
      await("a runs handleLocked").atMost(BULK_WAIT).until(() -> holding.getCount() == 0);

      cutOff.cut = true; // a stops beating and committing while its handleLocked runs
      DGen b = runtime(backend, limits);
      b.host(
          "locker",
          () -> new Locker("b", holding, release),
          options.apply(HostOptions.builder(b.tenant(path))).build());
      ServerRef<String> viaB = b.ref(b.tenant(path), "locker", Tuple.from(7L));
      viaB.cast("job 2");
      await("b busts a's lock and completes both jobs")
          .atMost(Duration.ofMinutes(2)) // well inside the ten minutes of the lockTimeout
          .until(() -> viaB.call("get", Long.class, Duration.ofSeconds(30)) == 2L);
      assertThat(admin().server(Tuple.from("locker", 7L)).orElseThrow().lock()).isEmpty();
      if (limited) {
        assertThat(new DGenAdmin(backend).limits())
            .filteredOn(l -> l.name().equals(gate))
            .singleElement()
            .satisfies(l -> assertThat(l.holders()).isEmpty());
      }
    } finally {
      release.countDown();
      cutOff.cut = false;
    }
  }

  /**
   * A rescan of a bucket's ready index waits for its reads. On the worker pool, rescans that a
   * cluster recovery stalled stalled every batch and reply of their runtime with them, started
   * servers' too: the chaos test saw consumer transactions of 60–80 s and calls unanswered long
   * past their timeouts. Here every synchronous transaction begun on a worker thread is held while
   * a hosting runtime takes its buckets (a rescan each), and a started server in that runtime must
   * still apply a message.
   */
  @Test
  void rescansStalledByTheCluster_leaveTheWorkersFree() {
    StallOnWorkers stalled = new StallOnWorkers(backend);
    try {
      DGen a = hosting("a", stalled, b -> b);
      ServerRef<TestServer.Msg> started =
          a.start(new TestServer(hooks), null, StartOptions.builder(a.tenant(path)).build());
      started.cast(new TestServer.Add(1));
      await("a started server's cast applied while rescans are stalled")
          .atMost(Duration.ofSeconds(30))
          .until(() -> total(started) == 1);
    } finally {
      stalled.release();
    }
  }

  /**
   * Holds every synchronous transaction begun on one of the runtime's worker threads until {@link
   * #release}: a cluster whose recovery stalls such a transaction's reads.
   */
  private static final class StallOnWorkers extends ForwardingBackend {
    private final java.util.concurrent.CountDownLatch released =
        new java.util.concurrent.CountDownLatch(1);

    StallOnWorkers(Backend delegate) {
      super(delegate);
    }

    void release() {
      released.countDown();
    }

    @Override
    public <T> T run(Function<? super Transaction, ? extends T> body) {
      if (Thread.currentThread().getName().startsWith("dgen-worker-")) {
        try {
          released.await(2, TimeUnit.MINUTES);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new BackendException(BackendException.TRANSACTION_CANCELLED, "interrupted");
        }
      }
      return delegate().run(body);
    }

    @Override
    public <T> CompletableFuture<T> runAsync(
        Function<? super Transaction, ? extends CompletableFuture<? extends T>> body) {
      return delegate().runAsync(body);
    }
  }

  /** A backend whose watches never fire: only a rescan or a local shortcut wakes a consumer. */
  private static final class WatchesNeverFire extends ForwardingBackend {
    WatchesNeverFire(Backend delegate) {
      super(delegate);
    }

    private static Transaction deaf(Transaction tx) {
      return (Transaction)
          java.lang.reflect.Proxy.newProxyInstance(
              Transaction.class.getClassLoader(),
              new Class<?>[] {Transaction.class},
              (proxy, method, args) -> {
                if (method.getName().equals("watch")) {
                  return new CompletableFuture<Void>();
                }
                try {
                  return method.invoke(tx, args);
                } catch (java.lang.reflect.InvocationTargetException e) {
                  throw e.getCause();
                }
              });
    }

    @Override
    public <T> T run(Function<? super Transaction, ? extends T> body) {
      return delegate().run(tx -> body.apply(deaf(tx)));
    }

    @Override
    public <T> CompletableFuture<T> runAsync(
        Function<? super Transaction, ? extends CompletableFuture<? extends T>> body) {
      return delegate().runAsync(tx -> body.apply(deaf(tx)));
    }
  }

  @Test
  void aPushFromTheHoldingRuntime_loadsTheServer_withoutWaitingForItsBucketsWatch() {
    lease = Duration.ofMinutes(1); // no rescan of the ready index within the test's wait
    DGen d = hosting("holder", new WatchesNeverFire(backend), b -> b);
    awaitPlacement(d);

    refIn(d, 7).cast(new Add(3));

    await()
        .pollDelay(Duration.ZERO)
        .atMost(Duration.ofSeconds(20))
        .until(() -> seen.runtimes.containsKey(Tuple.from(KIND, 7L)));
    assertThat(seen.inits).containsExactly(Tuple.from(7L));
  }

  @Test
  void aClosedRuntime_handsItsBucketsOver_withoutWaitingForItsLease() {
    DGen a = hosting("a");
    DGen b = hosting("b");
    awaitPlacement(a, b);
    refIn(a, 1).cast(new Add(1));

    a.close();

    awaitPlacement(b);
    assertThat(admin().members()).extracting(TenantAdmin.Member::id).containsExactly(b.memberId());
    ServerRef<Msg> r = refIn(b, 1);
    r.cast(new Add(1));
    await().atMost(BULK_WAIT).until(() -> tallied(r) == 2);
  }

  @Test
  void callsFromARuntimeWithoutTheCode_whileTheHolderLeaves_areAnsweredByTheNewHolderOrTimeOut()
      throws Exception {
    DGen a = hosting("a");
    DGen b = hosting("b");
    awaitPlacement(a, b);
    DGen client = runtime(backend); // hosts nothing: its calls are queued for the holders
    int servers = 8;
    for (long s = 0; s < servers; s++) {
      refIn(client, s).cast(new Add(1));
    }
    awaitTallies(client, servers, 1);
    int calls = 80;
    Map<Long, List<Long>> replies = new ConcurrentHashMap<>();
    AtomicInteger timedOut = new AtomicInteger();
    CountDownLatch halfway = new CountDownLatch(1);
    ExecutorService caller = Executors.newSingleThreadExecutor();
    try {
      Future<?> sent =
          caller.submit(
              () -> {
                for (int i = 0; i < calls; i++) {
                  long s = i % servers;
                  try {
                    long total =
                        refIn(client, s).call(new Tally.AddAndGet(1), Duration.ofSeconds(10));
                    replies.computeIfAbsent(s, x -> new CopyOnWriteArrayList<>()).add(total);
                  } catch (CallTimeoutException e) {
                    timedOut.incrementAndGet(); // may still run: counted below as a range
                  }
                  if (i == calls / 4) {
                    halfway.countDown();
                  }
                }
              });
      halfway.await();
      a.close(); // its buckets move to b while calls are queued and in flight

      sent.get(5, TimeUnit.MINUTES);
    } finally {
      caller.shutdown();
    }
    long answered = replies.values().stream().mapToLong(List::size).sum();
    assertThat(answered + timedOut.get()).as("every call answered or timed out").isEqualTo(calls);
    for (long s = 0; s < servers; s++) {
      List<Long> got = replies.getOrDefault(s, List.of());
      assertThat(got).as("server %d: each answered call applied once", s).doesNotHaveDuplicates();
      long total = tallied(refIn(b, s));
      assertThat(total)
          .as("server %d: its answered calls applied, no call applied twice", s)
          .isBetween(1L + got.size(), 1L + got.size() + timedOut.get());
    }
  }

  @Test
  void anIdleServer_isEvicted_andItsNextMessageLoadsItAgain() {
    DGen d = hosting("a", backend, o -> o.idleTimeout(Duration.ofMillis(200)));
    ServerRef<Msg> r = refIn(d, 5);
    r.cast(new Add(1));
    await().atMost(BULK_WAIT).until(() -> tallied(r) == 1);

    await()
        .atMost(Duration.ofSeconds(30))
        .until(
            () ->
                admin()
                    .server(Tuple.from(KIND, 5L))
                    .orElseThrow()
                    .behaviour()
                    .orElse("")
                    .equals("hosted (idle)"));

    r.cast(new Add(2));
    await().atMost(BULK_WAIT).until(() -> tallied(r) == 3);
    assertThat(seen.inits).as("init ran once: the state was stored").hasSize(1);
  }

  /**
   * The behaviour's supplier is user code, called where the holder loads a server (a doorbell
   * cycle, a rescan): an Error from it must neither stop the doorbell nor leave the server unloaded
   * for good. Its messages wait and the load is retried.
   */
  @Test
  void aBehaviourSupplierThatThrowsAnError_delaysTheLoad_andTheMessagesAreAppliedOnceItWorks() {
    java.util.concurrent.atomic.AtomicInteger supplied =
        new java.util.concurrent.atomic.AtomicInteger();
    DGen holder = runtime(backend);
    holder.host(
        KIND,
        () -> {
          int n = supplied.incrementAndGet();
          if (n >= 2 && n <= 4) { // the first is host's own sample
            throw new AssertionError("supplier failure " + n);
          }
          return new Tally(seen, "a");
        },
        HostOptions.builder(holder.tenant(path)).build());
    DGen client = runtime(backend);
    ServerRef<Msg> first = refIn(client, 1);

    first.cast(new Add(3));

    await().atMost(BULK_WAIT).until(() -> tallied(first) == 3);
    assertThat(supplied.get()).as("the failed loads were retried").isGreaterThanOrEqualTo(5);
    ServerRef<Msg> second = refIn(client, 2);
    second.cast(new Add(4));
    await().atMost(BULK_WAIT).until(() -> tallied(second) == 4);
  }

  @Test
  void killThroughARef_deletesTheServer_andTheNextMessageCreatesItAnew() {
    DGen d = hosting("a");
    ServerRef<Msg> r = refIn(d, 9);
    r.cast(new Add(4));
    await().atMost(BULK_WAIT).until(() -> tallied(r) == 4);

    ServerControl.of(r).kill("test");

    r.cast(new Add(1)); // a ref outlives a kill
    await().atMost(BULK_WAIT).until(() -> tallied(r) == 1);
    assertThat(seen.inits).hasSize(2);
  }

  @Test
  void timersThroughARef_fireInTheHoldersRuntime() {
    hosting("holder");
    DGen client = runtime(backend);
    ServerRef<Msg> r = client.ref(client.tenant(path), KIND, Tuple.from(3));

    r.castAfter(new Add(2), Duration.ofMillis(50));
    r.cast(new Tally.Remind(5, 50));

    await()
        .atMost(BULK_WAIT)
        .until(() -> r.call(new Get(), State.class, Duration.ofSeconds(30)).total() == 7);
    assertThat(seen.runtimes.get(Tuple.from(KIND, 3L))).containsExactly("holder");
  }

  @Test
  void keyedCastsAndSubmitThroughARef_areAppliedOnce() {
    hosting("holder");
    DGen client = runtime(backend);
    ServerRef<Msg> r = client.ref(client.tenant(path), KIND, Tuple.from(11));

    assertThat(r.cast(new Add(1), "k1")).isTrue();
    assertThat(r.cast(new Add(1), "k1")).isFalse();
    String id = r.submit(new Add(10));

    assertThat(r.<Long>awaitReply(id, Duration.ofSeconds(30))).isEqualTo(11L);
    assertThat(r.call(new Get(), State.class, Duration.ofSeconds(30))).isEqualTo(new State(11, 2));
  }

  @Test
  void priorityMessagesFromARuntimeWithoutTheBehaviour_runAtTheHolder_andFailuresAreNotRetried() {
    hosting("holder");
    DGen client = runtime(backend);
    ServerRef<Msg> r = client.ref(client.tenant(path), KIND, Tuple.from(21));
    r.cast(new Add(1));
    await().atMost(BULK_WAIT).until(() -> tallied(r) == 1); // a priority message overtakes it

    long after = r.priorityCall(new Tally.AddAndGet(2));
    r.priorityCast(new Add(3));
    r.info("an info is any allowed value");

    assertThat(after).isEqualTo(3);
    assertThat(r.call(new Get(), State.class, Duration.ofSeconds(30))).isEqualTo(new State(6, 3));
    assertThatThrownBy(() -> r.priorityCast(new Tally.Fail("refused")))
        .isInstanceOf(CallbackException.class)
        .hasMessageContaining("refused");
    assertThat(ServerControl.of(r).queueLength()).isZero();
    assertThat(ServerControl.of(r).deadLetters())
        .as("a priority message is never dead-lettered")
        .isEmpty();
    assertThat(seen.runtimes.get(Tuple.from(KIND, 21L))).containsExactly("holder");
  }

  @Test
  void theStoredBucketCount_isHonoured_byARuntimeConfiguredOtherwise() {
    DGen first = runtime(backend);
    assertThat(first.tenant(path).bucketCount()).isEqualTo(BUCKETS);
    DGen other = DGen.builder(backend).buckets(BUCKETS * 4).build();
    runtimes.add(other);

    assertThat(other.tenant(path).bucketCount()).isEqualTo(BUCKETS);
    assertThat(admin().bucketCount()).isEqualTo(BUCKETS);
  }

  @Test
  void badHosting_isRefusedClearly() {
    DGen d = hosting("a");
    Tenant t = d.tenant(path);
    assertThatThrownBy(
            () -> d.host(KIND, () -> new Tally(seen, "b"), HostOptions.builder(t).build()))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("hosts kind " + KIND);
    assertThatThrownBy(
            () -> d.host(" ", () -> new Tally(seen, "b"), HostOptions.builder(t).build()))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> dgen.ref(t, KIND, Tuple.from(1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("another DGen");
  }

  /**
   * A runtime's rounds take buckets of a kind as soon as it hosts it; its member record must list
   * the kind as soon, not a heartbeat period later: the other members count it a candidate for the
   * kind's buckets only by its record, and tools show the kinds from it.
   */
  @Test
  void aHostedKind_isListedInItsMembersRecordAtOnce() {
    lease = Duration.ofMinutes(1); // a heartbeat every 12 s
    DGen d = hosting("a");
    await()
        .atMost(Duration.ofSeconds(5))
        .until(
            () ->
                admin().members().stream()
                    .anyMatch(m -> m.id().equals(d.memberId()) && m.kinds().contains(KIND)));
  }

  /** A hosted kind that stops itself on {@code "stop"} and counts every other cast. */
  private static final class Stopper implements DGenServer<Long, String> {
    @Override
    public InitResult<Long> init(@Nullable Object id) {
      return InitResult.ok(0L);
    }

    @Override
    public Result<Long> handleCast(String m, Long n) {
      return m.equals("stop") ? Result.stop("asked to", n) : Result.noReply(n + 1);
    }

    @Override
    public Result<Long> handleCall(String m, From f, Long n) {
      return Result.reply(n, n);
    }
  }

  /** A runtime hosting {@code kind} with {@code behaviour}, holding every bucket (no moves). */
  private <S, M> DGen soleHolder(
      String kind, java.util.function.Supplier<DGenServer<S, M>> behaviour, Backend over) {
    lease = Duration.ofMinutes(1); // no bucket moves within a test: nothing rescans for it
    DGen d = runtime(over);
    d.host(kind, behaviour, HostOptions.builder(d.tenant(path)).build());
    SettledPlacement.await(
        this::admin, kind, BUCKETS, List.of(d.memberId()), Duration.ofSeconds(60));
    return d;
  }

  private long queued(String kind, long id) {
    return admin().server(Tuple.from(kind, id)).orElseThrow().summary().queueLength();
  }

  /**
   * A hosted server that returns {@code Result.stop} is deactivated, not gone: its next message,
   * from a runtime that does not hold its bucket, loads it again. Before, its index entry stayed
   * ready with no process loaded, so later pushes only rang a bucket nobody listened on for it.
   */
  @Test
  void aHostedServerThatStoppedItself_isLoadedAgainByItsNextMessageFromAnotherRuntime() {
    soleHolder("stopper", Stopper::new, backend);
    DGen c = runtime(backend); // hosts nothing
    ServerRef<String> viaC = c.ref(c.tenant(path), "stopper", Tuple.from(1L));
    viaC.cast("work");
    viaC.cast("stop");
    await().atMost(BULK_WAIT).until(() -> queued("stopper", 1L) == 0);

    viaC.cast("work");

    await("applied").atMost(Duration.ofSeconds(20)).until(() -> queued("stopper", 1L) == 0);
    assertThat(viaC.call("get", Long.class, Duration.ofSeconds(30))).isEqualTo(2L);
  }

  /** Messages queued behind a stop load the server again at once: none waits for a later one. */
  @Test
  void messagesQueuedBehindAStop_loadTheServerAgain_andAreApplied() {
    soleHolder("stopper", Stopper::new, backend);
    DGen c = runtime(backend);
    ServerRef<String> viaC = c.ref(c.tenant(path), "stopper", Tuple.from(2L));

    viaC.castAll(List.of("work", "stop", "work", "work"));

    await().atMost(Duration.ofSeconds(20)).until(() -> queued("stopper", 2L) == 0);
    assertThat(viaC.call("get", Long.class, Duration.ofSeconds(30))).isEqualTo(3L);
  }

  /**
   * A call through a ref in the runtime that runs the server goes inline to its loaded process.
   * When that process is unloaded between the lookup and the call (here it stops itself again and
   * again), the call is queued for whichever process runs the server next: it never fails with
   * {@code ServerStoppedException}, which for a ref means the server was killed.
   */
  @Test
  void refCallsWhereTheServerRuns_whileItsProcessKeepsStopping_neverFailAsStopped()
      throws Exception {
    DGen a = soleHolder("stopper", Stopper::new, backend);
    ServerRef<String> ref = a.ref(a.tenant(path), "stopper", Tuple.from(3L));
    ExecutorService threads = Executors.newFixedThreadPool(2);
    try {
      Future<?> stops =
          threads.submit(
              () -> {
                for (int i = 0; i < 60; i++) {
                  ref.cast("stop");
                }
              });
      Future<Integer> stopped =
          threads.submit(
              () -> {
                int failed = 0;
                for (int i = 0; i < 300; i++) {
                  try {
                    ref.call("get", Long.class, Duration.ofSeconds(30));
                  } catch (ServerStoppedException e) {
                    failed++;
                  }
                }
                return failed;
              });
      stops.get(2, TimeUnit.MINUTES);
      assertThat(stopped.get(2, TimeUnit.MINUTES)).as("calls failed as stopped").isZero();
    } finally {
      threads.shutdownNow();
    }
  }

  /**
   * A rescan of a taken bucket's ready index whose reads fail (a transaction timeout during a
   * recovery) is tried again, from the chunk that failed: the servers that were ready when the
   * bucket was taken are loaded although no activation rings for them later.
   */
  @Test
  void aRescanThatFails_isRetried_soTheReadyServersOfATakenBucketAreLoaded() {
    DGen c = runtime(backend); // hosts nothing
    ServerRef<Msg> viaC = c.ref(c.tenant(path), KIND, Tuple.from(1L));
    viaC.cast(new Add(1)); // ready, and nobody holds its bucket yet: its activation is lost
    FaultInjectingBackend faulty = FaultInjectingBackend.wrap(backend);
    Subspace ready = new TenantKeys(c.tenant(path).subspace(), Buckets.of(BUCKETS)).ready();
    faulty.failReads(
        ready.range().begin,
        ready.range().end,
        3 * BUCKETS,
        BackendException.TRANSACTION_TIMED_OUT);
    lease = Duration.ofMinutes(1);
    hosting("a", faulty, o -> o);

    await().atMost(Duration.ofSeconds(30)).until(() -> queued(KIND, 1L) == 0);
    assertThat(tallied(viaC)).isEqualTo(1);
  }

  /**
   * Holds the commit of the first transaction that takes the lock {@link #arm}ed (writes its
   * record) until {@link #release}: a batch whose commit is still in flight when its process is
   * stopped.
   */
  private static final class HoldLockCommit extends ForwardingBackend {
    private volatile byte @Nullable [] lockKey;
    private final CompletableFuture<@Nullable Void> released = new CompletableFuture<>();
    private final CountDownLatch held = new CountDownLatch(1);

    HoldLockCommit(Backend delegate) {
      super(delegate);
    }

    void arm(byte[] key) {
      lockKey = key;
    }

    void release() {
      released.complete(null);
    }

    boolean awaitHeld() throws InterruptedException {
      return held.await(30, TimeUnit.SECONDS);
    }

    @Override
    public <T> T run(Function<? super Transaction, ? extends T> body) {
      return delegate().run(body);
    }

    @Override
    public <T> CompletableFuture<T> runAsync(
        Function<? super Transaction, ? extends CompletableFuture<? extends T>> body) {
      return delegate()
          .runAsync(
              tx -> {
                AtomicBoolean takes = new AtomicBoolean();
                Transaction watched =
                    (Transaction)
                        Proxy.newProxyInstance(
                            Transaction.class.getClassLoader(),
                            new Class<?>[] {Transaction.class},
                            (proxy, method, args) -> {
                              byte[] key = lockKey;
                              if (key != null
                                  && method.getName().equals("set")
                                  && Arrays.equals((byte[]) args[0], key)) {
                                takes.set(true);
                              }
                              try {
                                return method.invoke(tx, args);
                              } catch (InvocationTargetException e) {
                                throw e.getCause();
                              }
                            });
                return body.apply(watched)
                    .thenCompose(
                        v -> {
                          if (takes.get() && held.getCount() > 0) {
                            held.countDown();
                            return released.thenApply(x -> v);
                          }
                          return CompletableFuture.completedFuture(v);
                        });
              });
    }
  }

  /**
   * A lock taken by a batch whose process a hand-off stopped while the batch's commit was in
   * flight: the batch commits (the lease is still its runtime's while the hand-off drains), so the
   * lock is its process's to run. Before, the stopped process dropped it, and the bucket's new
   * holder met a lock whose holder's runtime lives: nobody ran or released it (no lockTimeout), and
   * the server was stuck for as long as the old holder lived.
   */
  @Test
  void aLockTakenByABatchInFlightDuringAHandOff_isRunAndReleased() throws Exception {
    HoldLockCommit hold = new HoldLockCommit(backend);
    SimpleMeterRegistry meters = new SimpleMeterRegistry();
    DGen a = runtime(hold, r -> r.meterRegistry(meters));
    DGen b = runtime(backend); // hosts the kind later: a hands it the first buckets b desires
    List<UUID> both = new ArrayList<>(List.of(a.memberId(), b.memberId()));
    both.sort(null);
    int quota = (int) Math.ceil(0.10 * BUCKETS / 2);
    Set<Integer> firstMoves =
        IntStream.range(0, BUCKETS)
            .filter(k -> Placement.desiredOwner("locker", k, both).equals(b.memberId()))
            .limit(quota)
            .boxed()
            .collect(Collectors.toSet());
    long id =
        LongStream.range(0, 100_000)
            .filter(i -> firstMoves.contains(Buckets.of(BUCKETS).of(Tuple.from("locker", i))))
            .findFirst()
            .orElseThrow();
    Tenant tenant = a.tenant(path);
    hold.arm(
        new ServerKeys(tenant.subspace(), Buckets.of(BUCKETS), Tuple.from("locker", id)).lockKey());
    CountDownLatch none = new CountDownLatch(0);
    a.host("locker", () -> new Locker("b", none, none), HostOptions.builder(tenant).build());
    SettledPlacement.await(
        this::admin, "locker", BUCKETS, List.of(a.memberId()), Duration.ofSeconds(60));
    try {
      a.ref(tenant, "locker", Tuple.from(id)).cast("job");
      assertThat(hold.awaitHeld()).as("the batch taking the lock reached its commit").isTrue();

      b.host(
          "locker", () -> new Locker("b", none, none), HostOptions.builder(b.tenant(path)).build());
      await("a's hand-off stops the server's process")
          .atMost(Duration.ofSeconds(30))
          .until(
              () -> meters.find("dgen.hosted.loaded").tag("kind", "locker").gauge().value() == 0);
    } finally {
      hold.release(); // the batch commits: the lease is still a's while the hand-off drains
    }

    ServerRef<String> viaB = b.ref(b.tenant(path), "locker", Tuple.from(id));
    await("handleLocked ran and released the lock")
        .atMost(Duration.ofSeconds(30))
        .ignoreExceptions()
        .until(() -> viaB.call("get", Long.class, Duration.ofSeconds(5)) == 1L);
    assertThat(admin().server(Tuple.from("locker", id)).orElseThrow().lock()).isEmpty();
  }
}
