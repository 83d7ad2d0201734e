package io.dgen.internal.hosting;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.apple.foundationdb.subspace.Subspace;
import io.dgen.backend.Futures;
import io.dgen.backend.memory.MemoryBackend;
import io.dgen.internal.codec.PlacementRecords;
import io.dgen.internal.commit.Fence;
import io.dgen.internal.keys.Buckets;
import io.dgen.internal.keys.TenantKeys;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The placement's rounds, driven step by step with a manual clock: several members of one tenant on
 * one memory backend. A member "dies" by no longer beating or running rounds. Every test checks the
 * one property the runtime relies on: no bucket is held by two members at once in their own views,
 * and every bucket ends held by its desired owner.
 */
class PlacementTest {

  private static final int BUCKETS = 64;
  private static final Duration LEASE = Duration.ofSeconds(5);
  private static final String KIND = "account";

  private final MemoryBackend backend = MemoryBackend.create();
  private final Subspace tenant = backend.directory("placement", "test");
  private final TenantKeys keys = new TenantKeys(tenant, Buckets.of(BUCKETS));
  private final AtomicLong clock = new AtomicLong(1_000_000_000L);
  private final Map<Integer, UUID> holders = new HashMap<>();
  private final List<String> overlaps = new ArrayList<>();

  @AfterEach
  void close() {
    backend.close();
  }

  /** A member and what its holder was told. */
  private final class Node implements Placement.Holder {
    final UUID id = UUID.randomUUID();
    final Placement placement;
    final Map<Integer, Long> mine = new HashMap<>();
    int releases;

    Node() {
      this(LEASE);
    }

    /** A member with its own lease: its heartbeats and rounds come every fifth of it. */
    Node(Duration lease) {
      placement =
          new Placement(
              backend, keys, Buckets.of(BUCKETS), id, lease, clock::get, 0, this, "test " + id);
      placement.host(KIND);
      placement.runOn(Runnable::run);
    }

    void step() {
      placement.beat().join();
      placement.round();
    }

    @Override
    public void acquired(String kind, int bucket, long epoch) {
      synchronized (holders) {
        UUID other = holders.putIfAbsent(bucket, id);
        if (other != null && !other.equals(id)) {
          overlaps.add("bucket " + bucket + " acquired by " + id + " while " + other + " held it");
        }
      }
      mine.put(bucket, epoch);
    }

    @Override
    public CompletableFuture<@Nullable Void> releasing(String kind, int bucket) {
      releases++;
      return CompletableFuture.completedFuture(null);
    }

    @Override
    public void lost(String kind, int bucket) {
      synchronized (holders) {
        holders.remove(bucket, id);
      }
      mine.remove(bucket);
    }
  }

  private void advance(Duration d) {
    clock.addAndGet(d.toNanos());
  }

  @Test
  void aLoneMember_takesEveryBucketInOneRound() {
    Node a = new Node();
    a.step();
    assertThat(a.mine).hasSize(BUCKETS);
    assertThat(a.mine.values()).containsOnly(1L);
    assertThat(a.placement.held(KIND)).isEqualTo(BUCKETS);
  }

  @Test
  void aJoiningMember_getsItsShareGradually_andNoBucketIsHeldTwice() {
    Node a = new Node();
    a.step();
    Node b = new Node();
    int rounds = 0;
    int moved = 0;
    while (b.mine.size() < expectedShare(b, a, b) && rounds < 50) {
      int before = b.mine.size();
      b.step();
      a.step();
      b.step();
      moved = Math.max(moved, b.mine.size() - before);
      rounds++;
    }
    assertThat(overlaps).isEmpty();
    assertThat(b.mine.size()).isEqualTo(expectedShare(b, a, b));
    assertThat(a.mine.size() + b.mine.size()).isEqualTo(BUCKETS);
    // at most 10 % of the buckets per round, spread over the members: ceil(0.1 * 64 / 2) = 4
    assertThat(moved).isLessThanOrEqualTo(4);
    assertThat(rounds).isGreaterThan(1);
    // every bucket ends with its desired owner, at a higher epoch than the first take
    List<UUID> both = new ArrayList<>(List.of(a.id, b.id));
    both.sort(null);
    for (int bucket = 0; bucket < BUCKETS; bucket++) {
      UUID desired = Placement.desiredOwner(KIND, bucket, both);
      assertThat(desired.equals(a.id) ? a.mine : b.mine).containsKey(bucket);
    }
    assertThat(b.mine.values()).allMatch(e -> e >= 2);
  }

  @Test
  void aRoundsHandOffs_commitInOneTransaction_notOneEach() {
    Node a = new Node();
    a.step();
    Node b = new Node();
    b.step(); // a member now, and a's round sees it
    a.placement.beat().join();
    long before = backend.counters().transactionsCommitted();
    a.placement.round();
    long commits = backend.counters().transactionsCommitted() - before;

    // ceil(0.1 * 64 / 2) = 4 buckets move in the round, together
    assertThat(a.releases).isEqualTo(4);
    assertThat(a.mine).hasSize(BUCKETS - 4);
    assertThat(commits).as("writing transactions of the round").isEqualTo(1);
    b.step();
    assertThat(b.mine).hasSize(4);
    assertThat(b.mine.values()).containsOnly(2L);
    assertThat(overlaps).isEmpty();
  }

  private int expectedShare(Node who, Node... all) {
    List<UUID> ids = new ArrayList<>();
    for (Node n : all) {
      ids.add(n.id);
    }
    ids.sort(null);
    int n = 0;
    for (int bucket = 0; bucket < BUCKETS; bucket++) {
      if (Placement.desiredOwner(KIND, bucket, ids).equals(who.id)) {
        n++;
      }
    }
    return n;
  }

  @Test
  void aDeadMembersBuckets_areTakenOnlyAfterItsLease() {
    Node a = new Node();
    Node b = new Node();
    a.step();
    b.step();
    for (int i = 0; i < 40 && a.mine.size() + b.mine.size() < BUCKETS; i++) {
      a.step();
      b.step();
    }
    int aHeld = a.mine.size();
    assertThat(aHeld).isPositive();
    // a dies: no more beats or rounds
    advance(Duration.ofSeconds(4));
    b.step();
    assertThat(b.mine).hasSize(BUCKETS - aHeld); // 4 s < the 5 s lease: still a's
    advance(Duration.ofSeconds(2));
    b.step();
    assertThat(b.mine).hasSize(BUCKETS);
    assertThat(overlaps).hasSize(aHeld); // a never heard: in its own view it still holds them
  }

  @Test
  void aSlowButBeatingMember_keepsItsLeases() {
    Node a = new Node();
    Node b = new Node();
    a.step();
    b.step();
    for (int i = 0; i < 40 && a.mine.size() + b.mine.size() < BUCKETS; i++) {
      a.step();
      b.step();
    }
    int aHeld = a.mine.size();
    for (int i = 0; i < 5; i++) {
      advance(Duration.ofSeconds(3));
      a.placement.beat().join(); // beats, never runs a round
      b.step();
    }
    assertThat(a.mine).hasSize(aHeld);
    assertThat(b.mine).hasSize(BUCKETS - aHeld);
  }

  /**
   * A round blocked by a cluster that does not answer holds the placement's one thread; the
   * heartbeats go on regardless, so the others do not judge this member dead and take its buckets
   * while it still holds them.
   */
  @Test
  void heartbeats_goOnWhileTheRoundsAreStuck() {
    Node a = new Node();
    ExecutorService placementThread = Executors.newSingleThreadExecutor();
    ScheduledExecutorService scheduler = Executors.newSingleThreadScheduledExecutor();
    CountDownLatch unstuck = new CountDownLatch(1);
    placementThread.execute(
        () -> {
          try {
            unstuck.await(); // a round waiting on the cluster
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        });
    try {
      a.placement.start(placementThread, scheduler);
      await()
          .atMost(Duration.ofSeconds(20))
          .pollDelay(Duration.ZERO)
          .until(() -> heartbeatOf(a.id) >= 3);
      assertThat(a.mine).as("no round ran").isEmpty();
    } finally {
      unstuck.countDown();
      a.placement.close();
      scheduler.shutdownNow();
      placementThread.shutdownNow();
    }
  }

  /**
   * A round stuck on the cluster holds the placement's one thread for many round periods: the
   * scheduler queues no more than one round of the tenant behind it (not one per period, which
   * would then run back to back, ahead of the hand-offs), and once the thread is free the rounds go
   * on: the member takes its buckets, and later hands some to a member that joins.
   */
  @Test
  void rounds_doNotPileUpWhileThePlacementThreadIsStuck_andGoOnAfterwards() {
    Node a = new Node(Duration.ofMillis(100)); // a heartbeat and a round every 20 ms
    ThreadPoolExecutor placementThread =
        new ThreadPoolExecutor(1, 1, 0, TimeUnit.SECONDS, new LinkedBlockingQueue<>());
    AtomicInteger ticks = new AtomicInteger();
    ScheduledThreadPoolExecutor scheduler =
        new ScheduledThreadPoolExecutor(1) {
          @Override
          protected void afterExecute(Runnable r, @Nullable Throwable t) {
            super.afterExecute(r, t);
            ticks.incrementAndGet(); // a heartbeat's or a round's tick
          }
        };
    CountDownLatch unstuck = new CountDownLatch(1);
    placementThread.execute(
        () -> {
          try {
            unstuck.await(); // a round waiting on the cluster
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        });
    try {
      a.placement.start(placementThread, scheduler);
      await("ten round periods")
          .atMost(Duration.ofSeconds(20))
          .pollDelay(Duration.ZERO)
          .until(() -> ticks.get() >= 20);
      assertThat(placementThread.getQueue())
          .as("rounds queued behind the stuck one")
          .hasSizeLessThanOrEqualTo(1);
      assertThat(a.placement.held(KIND)).as("no round ran").isZero();

      unstuck.countDown();
      await("the first round after the stall takes every bucket")
          .atMost(Duration.ofSeconds(20))
          .pollDelay(Duration.ZERO)
          .until(() -> a.placement.held(KIND) == BUCKETS);
      Node b = new Node();
      b.step(); // joins; a's later rounds hand it its share, a few buckets per round
      int aShare = expectedShare(a, a, b);
      await("a's later rounds hand b its share")
          .atMost(Duration.ofSeconds(20))
          .pollDelay(Duration.ZERO)
          .until(() -> a.placement.held(KIND) == aShare);
    } finally {
      unstuck.countDown();
      a.placement.close();
      scheduler.shutdownNow();
      placementThread.shutdownNow();
    }
  }

  /**
   * A hand-off's last step (writing the leases) is queued on the placement's thread once the
   * bucket's work has drained; a round that runs before it does that step first, so the buckets,
   * whose servers are stopped already, are not left unserved for a round.
   */
  @Test
  void aRoundQueuedBeforeAHandOffsLastStep_writesTheHandOffFirst() {
    Node a = new Node();
    a.step();
    Node b = new Node();
    b.step();
    List<Runnable> queued = new ArrayList<>();
    a.placement.runOn(queued::add); // the placement's thread, busy for now
    a.placement.beat().join();
    a.placement.round(); // hands 4 buckets off; their drain is done, the last step queued
    assertThat(a.releases).isEqualTo(4);
    assertThat(queued).hasSize(1);
    assertThat(a.mine).hasSize(BUCKETS);

    a.placement.round(); // the next round, queued ahead of that step; it hands off 4 more
    assertThat(a.mine).as("a's buckets after its next round").hasSize(BUCKETS - 4);
    b.step();
    assertThat(b.mine).hasSize(4);
    assertThat(queued).hasSize(2);
    queued.forEach(Runnable::run); // the first step finds its hand-off written; the second writes
    assertThat(a.mine).hasSize(BUCKETS - 8);
    b.step();
    assertThat(b.mine).hasSize(8);
    assertThat(overlaps).isEmpty();
  }

  private long heartbeatOf(UUID member) {
    byte[] record = backend.run(tx -> tx.get(keys.member(member)));
    return record == null ? 0 : PlacementRecords.Member.decode(member, record).heartbeat();
  }

  @Test
  void aDeposedHolder_isFenced_evenInATransactionThatReadTheLeaseBefore() {
    Node a = new Node();
    a.step();
    long epoch = a.mine.get(7);
    var tx = backendTransaction();
    Futures.join(a.placement.fence(tx.tx(), KIND, 7, epoch)); // holds: passes
    Node b = new Node();
    b.step(); // b sees a: live for a lease from now, in b's view
    assertThat(b.mine).doesNotContainKey(7);
    advance(Duration.ofSeconds(6)); // a dies
    b.step();
    assertThat(b.mine).containsKey(7);
    tx.tx().set(tenant.pack(com.apple.foundationdb.tuple.Tuple.from("w")), new byte[] {1});
    assertThatThrownBy(tx::commit)
        .isInstanceOf(IllegalStateException.class)
        .hasMessage("first attempt failed with 1020");
    // a later transaction of a reads the new lease and stops
    assertThatThrownBy(() -> backend.run(t -> Futures.join(a.placement.fence(t, KIND, 7, epoch))))
        .isInstanceOf(Fence.Deposed.class)
        .hasMessageContaining("bucket 7");
  }

  /** A transaction opened by hand, committed when the test says so. */
  private static final class OpenTransaction {
    final io.dgen.backend.Transaction tx;
    private final CompletableFuture<Void> go;
    private final CompletableFuture<Object> done;

    OpenTransaction(
        io.dgen.backend.Transaction tx,
        CompletableFuture<Void> go,
        CompletableFuture<Object> done) {
      this.tx = tx;
      this.go = go;
      this.done = done;
    }

    io.dgen.backend.Transaction tx() {
      return tx;
    }

    void commit() {
      go.complete(null);
      try {
        done.get(5, TimeUnit.SECONDS);
      } catch (java.util.concurrent.ExecutionException e) {
        throw (RuntimeException) Futures.unwrap(e);
      } catch (Exception e) {
        throw new AssertionError(e);
      }
    }
  }

  private OpenTransaction backendTransaction() {
    CompletableFuture<io.dgen.backend.Transaction> opened = new CompletableFuture<>();
    CompletableFuture<Void> go = new CompletableFuture<>();
    CompletableFuture<Object> done =
        backend.runAsync(
            t -> {
              if (t.attempt() > 1) { // report why the first attempt failed, retry nothing
                return CompletableFuture.failedFuture(
                    new IllegalStateException("first attempt failed with " + t.retriedAfter()));
              }
              opened.complete(t);
              return go.thenApply(v -> null);
            });
    return new OpenTransaction(Futures.join(opened), go, done);
  }

  @Test
  void aClosedMember_releasesItsLeases_andTheOthersTakeThemAtOnce() {
    Node a = new Node();
    Node b = new Node();
    a.step();
    b.step();
    for (int i = 0; i < 40 && a.mine.size() + b.mine.size() < BUCKETS; i++) {
      a.step();
      b.step();
    }
    a.placement.close();
    assertThat(a.mine).isEmpty();
    b.step(); // no time passed: released leases and a deleted record need no expiry
    assertThat(b.mine).hasSize(BUCKETS);
    assertThat(overlaps).isEmpty();
  }

  @Test
  void membersRacingForUnownedBuckets_endWithOneHolderEach() throws Exception {
    List<Node> nodes = List.of(new Node(), new Node(), new Node());
    List<Thread> threads = new ArrayList<>();
    for (Node n : nodes) {
      threads.add(new Thread(n::step));
    }
    threads.forEach(Thread::start);
    for (Thread t : threads) {
      t.join();
    }
    for (int i = 0; i < 60; i++) {
      for (Node n : nodes) {
        n.step();
      }
    }
    assertThat(overlaps).isEmpty();
    assertThat(nodes.stream().mapToInt(n -> n.mine.size()).sum()).isEqualTo(BUCKETS);
    for (Node n : nodes) {
      assertThat(n.mine.size()).isEqualTo(expectedShare(n, nodes.toArray(Node[]::new)));
    }
  }
}
