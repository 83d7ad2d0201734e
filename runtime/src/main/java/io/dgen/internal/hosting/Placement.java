package io.dgen.internal.hosting;

import com.google.common.hash.Hasher;
import com.google.common.hash.Hashing;
import io.dgen.backend.Backend;
import io.dgen.backend.Transaction;
import io.dgen.internal.codec.PlacementRecords.Lease;
import io.dgen.internal.codec.PlacementRecords.Member;
import io.dgen.internal.commit.Fence;
import io.dgen.internal.keys.Buckets;
import io.dgen.internal.keys.TenantKeys;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * This runtime's membership in one tenant's placement and the leases it holds there (see {@code
 * docs/scale-out.md}): its member record and heartbeat, the rebalance rounds that take, hand off
 * and lose leases of {@code (kind, bucket)}, and the fence every consumer transaction of a hosted
 * server reads.
 *
 * <ul>
 *   <li><b>Heartbeat</b> ({@link #beat}): a blind rewrite of the member record {@code FF (9,
 *       memberId)} with the next counter value. Nothing else is renewed: a lease lives as long as
 *       its holder's record keeps changing.
 *   <li><b>Liveness</b> is observed: another member is live while its counter changed within its
 *       lease duration on this runtime's own monotonic clock (a first sighting counts as a change).
 *       No two clocks are compared.
 *   <li><b>A round</b> ({@link #round}): reads the members and the leases of the hosted kinds
 *       (snapshot reads), computes each {@code (kind, bucket)}'s desired owner by rendezvous
 *       hashing over the live members hosting the kind, takes what it should own and nobody live
 *       holds, and hands off a bounded share of what it holds and should not.
 *   <li><b>Fencing</b> ({@link #fence}): a serializable read of the lease in the consumer's
 *       transaction; a lease that no longer names this member at the epoch it took fails the
 *       transaction with {@link Fence.Deposed}, and one changed after the read makes it conflict.
 * </ul>
 *
 * <p>Never runs callbacks and never loads servers: it tells its {@link Holder} what it acquired,
 * must release, and lost. Threading: rounds run one at a time on the executor given to {@link
 * #start} (their transactions block that one thread), at most one of this tenant's queued or
 * running there, however long they take; a heartbeat is an asynchronous write from the scheduler's
 * thread, at most one in flight; {@link #fence} and {@link #epoch} may be called from any thread.
 */
public final class Placement {

  private static final Logger log = LoggerFactory.getLogger(Placement.class);

  /** The most leases one take transaction writes. */
  static final int TAKES_PER_TRANSACTION = 200;

  /** The share of a kind's buckets that may move in one round, across all members. */
  static final double MOVE_SHARE = 0.10;

  /** How long a hand-off waits for the bucket's work in flight before it writes the lease. */
  static final Duration DRAIN_LIMIT = Duration.ofSeconds(2);

  /** What the hosted kinds do as leases come and go. Called on the placement's thread. */
  interface Holder {
    /** This runtime now holds {@code (kind, bucket)} at {@code epoch}: run its servers. */
    void acquired(String kind, int bucket, long epoch);

    /**
     * The lease is about to be handed off: start no more work in the bucket. The future completes
     * once the work in flight has ended.
     */
    CompletableFuture<@Nullable Void> releasing(String kind, int bucket);

    /** The lease is gone (handed off, or taken by another member): drop the bucket's servers. */
    void lost(String kind, int bucket);
  }

  private final Backend backend;
  private final TenantKeys keys;
  private final Buckets buckets;
  private final UUID me;
  private final long leaseNanos;
  private final LongSupplier nanoTime;
  private final Holder holder;
  private final String context;

  private final Set<String> kinds = new java.util.concurrent.CopyOnWriteArraySet<>();
  private final Map<KindBucket, Long> held = new ConcurrentHashMap<>();
  private final Set<KindBucket> moving = ConcurrentHashMap.newKeySet();

  /** A round of this tenant is queued or running on the placement's thread. */
  private final AtomicBoolean roundPending = new AtomicBoolean();

  /** Hand-offs whose work has drained, waiting for their leases to be written. */
  private final java.util.Queue<List<LeaseStore.HandOff>> drained =
      new java.util.concurrent.ConcurrentLinkedQueue<>();

  private volatile @Nullable Executor executor;
  private volatile boolean closed;

  private final Membership membership;
  private final LeaseStore leaseStore;

  Placement(
      Backend backend,
      TenantKeys keys,
      Buckets buckets,
      UUID me,
      Duration lease,
      LongSupplier nanoTime,
      long startedAtMillis,
      Holder holder,
      String context) {
    this.backend = backend;
    this.keys = keys;
    this.buckets = buckets;
    this.me = me;
    this.leaseNanos = lease.toNanos();
    this.nanoTime = nanoTime;
    this.holder = holder;
    this.context = context;
    this.membership =
        new Membership(backend, keys, me, lease, startedAtMillis, kinds, () -> closed, context);
    this.leaseStore = new LeaseStore(backend, keys, me, context);
  }

  /**
   * Whether the last round found {@code member} live: its record exists and its heartbeat changed
   * within its lease on this runtime's clock, the test by which its buckets are taken. Any thread.
   */
  boolean isLive(UUID member) {
    return membership.isLive(member);
  }

  /** How long this runtime's leases outlive its last heartbeat. */
  long leaseMillis() {
    return TimeUnit.NANOSECONDS.toMillis(leaseNanos);
  }

  /** This runtime's member id. */
  UUID memberId() {
    return me;
  }

  /** The tenant's buckets. */
  Buckets buckets() {
    return buckets;
  }

  /** Adds {@code kind} to what this member hosts, and writes its record (a heartbeat) to say so. */
  void host(String kind) {
    kinds.add(kind);
    // Its record lists the kind now, not a beat period later: the rounds take buckets of the kind
    // at once, and the others count this member a candidate for them only by its record.
    beat();
  }

  /** The kinds this member hosts. */
  Set<String> kinds() {
    return kinds;
  }

  /** The epoch at which this runtime holds {@code (kind, bucket)}, or 0 if it does not. */
  long epoch(String kind, int bucket) {
    Long e = held.get(new KindBucket(kind, bucket));
    return e == null ? 0 : e;
  }

  /** How many buckets of {@code kind} this runtime holds. */
  int held(String kind) {
    int n = 0;
    for (KindBucket kb : held.keySet()) {
      if (kb.kind().equals(kind)) {
        n++;
      }
    }
    return n;
  }

  /** The buckets this runtime holds a lease in, for any kind. */
  Set<Integer> heldBuckets() {
    Set<Integer> out = new TreeSet<>();
    for (KindBucket kb : held.keySet()) {
      out.add(kb.bucket());
    }
    return out;
  }

  /**
   * Starts reading the lease of {@code (kind, bucket)} in a consumer's transaction: serializable,
   * so a lease written after the read makes the transaction conflict. The future fails with {@link
   * Fence.Deposed} unless the lease names this member at {@code epoch}.
   */
  CompletableFuture<@Nullable Void> fence(Transaction tx, String kind, int bucket, long epoch) {
    return tx.getAsync(keys.lease(kind, bucket))
        .thenApply(
            v -> {
              Lease l = Lease.decode(v);
              if (epoch == 0 || l == null || !me.equals(l.owner()) || l.epoch() != epoch) {
                throw new Fence.Deposed(
                    "this runtime no longer holds bucket "
                        + bucket
                        + " of kind "
                        + kind
                        + " (held at epoch "
                        + epoch
                        + ", the lease is "
                        + l
                        + "): "
                        + context);
              }
              return null;
            });
  }

  /**
   * Starts rounds on {@code placementThread} (one thread, which the rounds' transactions block) and
   * heartbeats, scheduled by {@code scheduler}. A heartbeat is one blind asynchronous write sent
   * from the scheduler's thread, never queued behind a round: a round slowed by a loaded cluster
   * must not make the others judge this runtime dead.
   */
  void start(Executor placementThread, java.util.concurrent.ScheduledExecutorService scheduler) {
    runOn(placementThread);
    long period = Math.max(TimeUnit.MILLISECONDS.toNanos(20), leaseNanos / 5);
    long round = Math.min(TimeUnit.SECONDS.toNanos(1), period);
    submitRound(
        () -> {
          beat().join(); // the first round finds this member's record
          round();
        });
    scheduler.scheduleWithFixedDelay(this::beat, period, period, TimeUnit.NANOSECONDS);
    scheduler.scheduleWithFixedDelay(
        () -> submitRound(this::round), round, round, TimeUnit.NANOSECONDS);
  }

  /**
   * Queues {@code round} on the placement's thread unless a round of this tenant is queued or
   * running already. The scheduler only queues: without this, every period in which a round (or
   * another tenant's) outlasts the period would queue one more, without bound on a stuck cluster,
   * to run back to back after it recovers, ahead of the hand-offs queued behind them.
   */
  private void submitRound(Runnable round) {
    if (!roundPending.compareAndSet(false, true)) {
      return;
    }
    boolean queued =
        submit(
            () -> {
              try {
                round.run();
              } finally {
                roundPending.set(false);
              }
            });
    if (!queued) {
      roundPending.set(false);
    }
  }

  /**
   * Runs a round on the placement's thread now, besides the scheduled ones: for a runtime without
   * background consumers (the test kit), whose {@code host} returns once the round took the kind's
   * buckets.
   *
   * @return completes once the round ran (at once if the placement is closing)
   */
  CompletableFuture<@Nullable Void> roundNow() {
    CompletableFuture<@Nullable Void> done = new CompletableFuture<>();
    boolean queued =
        submit(
            () -> {
              try {
                round();
              } finally {
                done.complete(null);
              }
            });
    if (!queued) {
      done.complete(null);
    }
    return done;
  }

  /** Where the steps that follow a hand-off's drain run (the placement's thread; a test's own). */
  void runOn(Executor placementThread) {
    this.executor = placementThread;
  }

  /** Queues {@code step} on the placement's thread; false if it was not queued (closing). */
  private boolean submit(Runnable step) {
    Executor e = executor;
    if (e != null && !closed) {
      try {
        e.execute(step);
        return true;
      } catch (java.util.concurrent.RejectedExecutionException closing) {
        // the runtime is closing
      }
    }
    return false;
  }

  // ---------------------------------------------------------------- heartbeat

  /**
   * Rewrites this member's record now, besides the scheduled heartbeats: see {@link
   * Membership#beat}.
   */
  CompletableFuture<Void> beat() {
    return membership.beat();
  }

  // ---------------------------------------------------------------- rounds

  /**
   * One rebalance round; see the class comment. It first writes the leases of the hand-offs whose
   * work has drained (their buckets' servers are stopped already), so that a round queued before
   * the hand-off's own step does not delay it.
   */
  void round() {
    finishDrained();
    if (closed || kinds.isEmpty()) {
      return;
    }
    LeaseStore.Snapshot snap;
    try {
      snap = backend.run(tx -> leaseStore.read(tx, kinds));
    } catch (RuntimeException e) {
      log.warn("a placement round could not read the leases; trying again: {}", context, e);
      return;
    }
    long now = nanoTime.getAsLong();
    Map<UUID, Member> live = membership.observe(snap.members(), now);
    for (String kind : kinds) {
      roundOf(kind, snap.leases().getOrDefault(kind, Map.of()), live, snap.members());
    }
    membership.forgetDead(snap.members(), now);
  }

  private void roundOf(
      String kind, Map<Integer, Lease> leases, Map<UUID, Member> live, Map<UUID, Member> all) {
    List<UUID> candidates = new ArrayList<>();
    for (Member m : live.values()) {
      if (m.id().equals(me) || m.kinds().contains(kind)) {
        candidates.add(m.id());
      }
    }
    candidates.sort(null);
    int quota = Math.max(1, (int) Math.ceil(MOVE_SHARE * buckets.count() / candidates.size()));
    List<Integer> takes = new ArrayList<>();
    List<Map.Entry<Integer, UUID>> handoffs = new ArrayList<>();
    for (int b = 0; b < buckets.count(); b++) {
      KindBucket kb = new KindBucket(kind, b);
      Lease lease = leases.get(b);
      UUID desired = desiredOwner(kind, b, candidates);
      if (lease != null && me.equals(lease.owner())) {
        Long mine = held.get(kb);
        if (mine == null || mine != lease.epoch()) {
          if (mine != null) {
            lose(kb);
          }
          acquire(kb, lease.epoch());
        }
        if (!desired.equals(me) && !moving.contains(kb) && handoffs.size() < quota) {
          handoffs.add(Map.entry(b, desired));
        }
        continue;
      }
      if (held.containsKey(kb) && !moving.contains(kb)) {
        lose(kb); // taken by another member: this runtime was judged dead, or lost a race
      }
      boolean free = lease == null || lease.owner() == null || !live.containsKey(lease.owner());
      if (free && desired.equals(me)) {
        takes.add(b);
      }
    }
    for (int i = 0; i < takes.size(); i += TAKES_PER_TRANSACTION) {
      List<Integer> part = takes.subList(i, Math.min(takes.size(), i + TAKES_PER_TRANSACTION));
      took(kind, leaseStore.take(kind, part, leases, all));
    }
    handOff(kind, handoffs);
  }

  /** Rendezvous hashing: the candidate with the highest score for {@code (kind, bucket)}. */
  public static UUID desiredOwner(String kind, int bucket, List<UUID> candidates) {
    UUID best = candidates.get(0);
    long bestScore = Long.MIN_VALUE;
    for (UUID m : candidates) {
      Hasher h = Hashing.farmHashFingerprint64().newHasher();
      h.putString(kind, StandardCharsets.UTF_8);
      h.putInt(bucket);
      h.putLong(m.getMostSignificantBits());
      h.putLong(m.getLeastSignificantBits());
      long score = h.hash().asLong();
      if (score > bestScore || (score == bestScore && m.compareTo(best) < 0)) {
        best = m;
        bestScore = score;
      }
    }
    return best;
  }

  /** Runs the servers of the buckets of {@code kind} a take ({@link LeaseStore#take}) got. */
  private void took(String kind, Map<Integer, Long> taken) {
    for (var t : taken.entrySet()) {
      acquire(new KindBucket(kind, t.getKey()), t.getValue());
    }
    if (!taken.isEmpty()) {
      log.info("took {} buckets of kind {}: {}", taken.size(), kind, context);
    }
  }

  /**
   * Hands the buckets of {@code handoffs} to their desired owners: stops their work, waits for what
   * is in flight in all of them at once (at most {@link #DRAIN_LIMIT}), then writes {@code (to,
   * epoch + 1)} for every lease still this member's, in one transaction per {@link
   * #TAKES_PER_TRANSACTION} buckets. Not a transaction per bucket: those ran one after another on
   * the placement's one thread, so on a slow cluster a round's hand-offs took seconds, and the
   * heartbeat queued behind them.
   */
  private void handOff(String kind, List<Map.Entry<Integer, UUID>> handoffs) {
    List<LeaseStore.HandOff> moves = new ArrayList<>();
    List<CompletableFuture<@Nullable Void>> drains = new ArrayList<>();
    for (var h : handoffs) {
      KindBucket kb = new KindBucket(kind, h.getKey());
      Long epoch = held.get(kb);
      if (epoch == null || !moving.add(kb)) {
        continue;
      }
      moves.add(new LeaseStore.HandOff(kb, epoch, h.getValue()));
      drains.add(
          holder
              .releasing(kind, kb.bucket())
              .orTimeout(DRAIN_LIMIT.toNanos(), TimeUnit.NANOSECONDS)
              .exceptionally(slow -> null)); // the epoch fences what is still in flight
    }
    if (moves.isEmpty()) {
      return;
    }
    CompletableFuture.allOf(drains.toArray(CompletableFuture[]::new))
        .whenComplete(
            (v, e) -> {
              drained.add(moves);
              submit(this::finishDrained); // or the next round, if it runs first
            });
  }

  /** Writes the leases of the hand-offs that have drained. On the placement's thread. */
  private void finishDrained() {
    for (List<LeaseStore.HandOff> moves = drained.poll(); moves != null; moves = drained.poll()) {
      finishHandOffs(moves);
    }
  }

  private void finishHandOffs(List<LeaseStore.HandOff> moves) {
    try {
      for (int i = 0; i < moves.size(); i += TAKES_PER_TRANSACTION) {
        List<LeaseStore.HandOff> part =
            moves.subList(i, Math.min(moves.size(), i + TAKES_PER_TRANSACTION));
        try {
          backend.run(tx -> leaseStore.writeHandOffs(tx, part));
        } catch (RuntimeException e) {
          log.warn(
              "handing off {} buckets of kind {} failed; the next round sees who holds them: {}",
              part.size(),
              part.get(0).kb().kind(),
              context,
              e);
        }
      }
    } finally {
      for (LeaseStore.HandOff m : moves) {
        moving.remove(m.kb());
        lose(m.kb()); // its work stopped; a round that finds the lease still ours acquires it again
      }
    }
  }

  private void acquire(KindBucket kb, long epoch) {
    held.put(kb, epoch);
    holder.acquired(kb.kind(), kb.bucket(), epoch);
  }

  private void lose(KindBucket kb) {
    if (held.remove(kb) != null) {
      holder.lost(kb.kind(), kb.bucket());
    }
  }

  // ---------------------------------------------------------------- close

  /**
   * Leaves the placement: releases every lease this member holds (the bucket's work drained first,
   * at most {@link #DRAIN_LIMIT}) and deletes its record, so the others take over at their next
   * round instead of after the lease expires. Runs in the caller's thread.
   */
  void close() {
    if (closed) {
      return;
    }
    closed = true;
    List<KindBucket> mine = new ArrayList<>(held.keySet());
    List<CompletableFuture<@Nullable Void>> drains = new ArrayList<>();
    for (KindBucket kb : mine) {
      drains.add(holder.releasing(kb.kind(), kb.bucket()));
    }
    try {
      CompletableFuture.allOf(drains.toArray(CompletableFuture[]::new))
          .get(DRAIN_LIMIT.toNanos(), TimeUnit.NANOSECONDS);
    } catch (Exception e) {
      if (e instanceof InterruptedException) {
        Thread.currentThread().interrupt();
      }
      // release anyway: the epoch fences whatever is still in flight
    }
    try {
      for (int i = 0; i < mine.size(); i += TAKES_PER_TRANSACTION) {
        List<KindBucket> part = mine.subList(i, Math.min(mine.size(), i + TAKES_PER_TRANSACTION));
        backend.run(tx -> leaseStore.release(tx, part, held));
      }
      backend.run(
          tx -> {
            tx.clear(keys.member(me));
            return null;
          });
    } catch (RuntimeException e) {
      log.warn(
          "leaving the placement failed; the others take over once the lease expires: {}",
          context,
          e);
    }
    for (KindBucket kb : mine) {
      lose(kb);
    }
  }
}
