package io.dgen.internal.hosting;

import com.google.common.hash.Hasher;
import com.google.common.hash.Hashing;
import io.dgen.backend.Backend;
import io.dgen.backend.Futures;
import io.dgen.backend.KeyValue;
import io.dgen.backend.ReadTransaction;
import io.dgen.backend.Transaction;
import io.dgen.internal.codec.PlacementRecords.Lease;
import io.dgen.internal.codec.PlacementRecords.Member;
import io.dgen.internal.commit.Fence;
import io.dgen.internal.keys.Buckets;
import io.dgen.internal.keys.TenantKeys;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
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

  private record KindBucket(String kind, int bucket) {}

  /** What this runtime saw of a member: its counter, and when that last changed here. */
  private record Seen(long heartbeat, long changedAtNanos) {}

  /** What a round read. */
  private record Snapshot(Map<UUID, Member> members, Map<String, Map<Integer, Lease>> leases) {}

  private final Backend backend;
  private final TenantKeys keys;
  private final Buckets buckets;
  private final UUID me;
  private final long leaseNanos;
  private final LongSupplier nanoTime;
  private final long startedAtMillis;
  private final Holder holder;
  private final String context;

  private final Set<String> kinds = new java.util.concurrent.CopyOnWriteArraySet<>();
  private final Map<KindBucket, Long> held = new ConcurrentHashMap<>();
  private final Set<KindBucket> moving = ConcurrentHashMap.newKeySet();

  // touched on the placement's thread only
  private final Map<UUID, Seen> seen = new HashMap<>();

  /** The members the last round found live (this one included), for any thread to ask. */
  private volatile Set<UUID> liveMembers = Set.of();

  private final AtomicLong heartbeat = new AtomicLong();
  private final AtomicBoolean beating = new AtomicBoolean();
  private final AtomicBoolean beatAgain = new AtomicBoolean();

  /** A round of this tenant is queued or running on the placement's thread. */
  private final AtomicBoolean roundPending = new AtomicBoolean();

  /** Hand-offs whose work has drained, waiting for their leases to be written. */
  private final java.util.Queue<List<HandOff>> drained =
      new java.util.concurrent.ConcurrentLinkedQueue<>();

  private volatile boolean warnedBeat;
  private volatile @Nullable Executor executor;
  private volatile boolean closed;

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
    this.startedAtMillis = startedAtMillis;
    this.holder = holder;
    this.context = context;
  }

  /** This runtime's member id. */
  /**
   * Whether the last round found {@code member} live: its record exists and its heartbeat changed
   * within its lease on this runtime's clock, the test by which its buckets are taken. Any thread.
   */
  boolean isLive(UUID member) {
    return liveMembers.contains(member);
  }

  /** How long this runtime's leases outlive its last heartbeat. */
  long leaseMillis() {
    return TimeUnit.NANOSECONDS.toMillis(leaseNanos);
  }

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
   * Rewrites this member's record with the next counter: a blind write, nothing else renewed, and
   * no thread waits for it. Skipped while the previous one is still under way, so that a slow
   * cluster cannot pile them up, nor commit an older counter after a newer one.
   *
   * @return a future that completes (never exceptionally) once the write committed or failed
   */
  CompletableFuture<Void> beat() {
    if (closed) {
      return CompletableFuture.completedFuture(null);
    }
    if (!beating.compareAndSet(false, true)) {
      beatAgain.set(true); // the one in flight may have read the kinds before a change
      return CompletableFuture.completedFuture(null);
    }
    beatAgain.set(false);
    Member record =
        new Member(
            me,
            heartbeat.incrementAndGet(),
            TimeUnit.NANOSECONDS.toMillis(leaseNanos),
            startedAtMillis,
            host(),
            ProcessHandle.current().pid(),
            List.copyOf(new TreeSet<>(kinds)));
    CompletableFuture<Void> write;
    try {
      write =
          backend.runAsync(
              tx -> {
                tx.set(keys.member(me), record.encode());
                return CompletableFuture.completedFuture(null);
              });
    } catch (RuntimeException e) {
      write = CompletableFuture.failedFuture(e);
    }
    return write.handle(
        (done, e) -> {
          beating.set(false);
          if (beatAgain.get()) {
            beat(); // asked for while this one was in flight: the record it wrote may be stale
          }
          if (e == null) {
            warnedBeat = false;
          } else if (!warnedBeat) {
            warnedBeat = true;
            log.warn(
                "heartbeat failed; others may take this runtime's leases: {}",
                context,
                Futures.unwrap(e));
          }
          return null;
        });
  }

  private static String host() {
    try {
      return java.net.InetAddress.getLocalHost().getHostName();
    } catch (java.io.IOException | SecurityException e) {
      return "unknown";
    }
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
    Snapshot snap;
    try {
      snap = backend.run(this::read);
    } catch (RuntimeException e) {
      log.warn("a placement round could not read the leases; trying again: {}", context, e);
      return;
    }
    long now = nanoTime.getAsLong();
    Map<UUID, Member> live = observe(snap.members(), now);
    for (String kind : kinds) {
      roundOf(kind, snap.leases().getOrDefault(kind, Map.of()), live, snap.members());
    }
    forgetDead(snap.members(), now);
  }

  private Snapshot read(Transaction tx) {
    ReadTransaction snap = tx.snapshot();
    var members =
        snap.getRangeAsync(
            keys.members().range().begin,
            keys.members().range().end,
            ReadTransaction.UNLIMITED,
            false);
    Map<String, CompletableFuture<List<KeyValue>>> leaseReads = new HashMap<>();
    for (String kind : kinds) {
      var space = keys.leases(kind);
      leaseReads.put(
          kind,
          snap.getRangeAsync(
              space.range().begin, space.range().end, ReadTransaction.UNLIMITED, false));
    }
    Map<UUID, Member> ms = new HashMap<>();
    for (KeyValue kv : Futures.join(members)) {
      UUID id = keys.members().unpack(kv.key()).getUUID(0);
      try {
        ms.put(id, Member.decode(id, kv.value()));
      } catch (RuntimeException bad) {
        log.warn("ignoring a member record that does not decode: {} member={}", context, id, bad);
      }
    }
    Map<String, Map<Integer, Lease>> leases = new HashMap<>();
    for (var e : leaseReads.entrySet()) {
      Map<Integer, Lease> byBucket = new HashMap<>();
      for (KeyValue kv : Futures.join(e.getValue())) {
        int bucket = (int) keys.leases(e.getKey()).unpack(kv.key()).getLong(0);
        byBucket.put(bucket, Objects.requireNonNull(Lease.decode(kv.value())));
      }
      leases.put(e.getKey(), byBucket);
    }
    return new Snapshot(ms, leases);
  }

  /** Records what changed since the last round; returns the live members, this one included. */
  private Map<UUID, Member> observe(Map<UUID, Member> members, long now) {
    Map<UUID, Member> live = new HashMap<>();
    for (Member m : members.values()) {
      Seen s = seen.get(m.id());
      if (s == null || s.heartbeat() != m.heartbeat()) {
        s = new Seen(m.heartbeat(), now);
        seen.put(m.id(), s);
      }
      if (m.id().equals(me)
          || now - s.changedAtNanos() < TimeUnit.MILLISECONDS.toNanos(m.leaseMillis())) {
        live.put(m.id(), m);
      }
    }
    seen.keySet().retainAll(members.keySet());
    live.putIfAbsent(
        me, new Member(me, heartbeat.get(), 0, startedAtMillis, "", 0, List.copyOf(kinds)));
    liveMembers = Set.copyOf(live.keySet());
    return live;
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
      take(kind, takes.subList(i, Math.min(takes.size(), i + TAKES_PER_TRANSACTION)), leases, all);
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

  /**
   * Takes the leases of {@code buckets} in one transaction, each only if neither it nor its dead
   * holder's record changed since the round read them (both read serializably: a holder that renews
   * meanwhile makes the take conflict, and its retry sees the renewal and backs off).
   */
  private void take(
      String kind,
      List<Integer> bucketsToTake,
      Map<Integer, Lease> seenLeases,
      Map<UUID, Member> all) {
    Map<Integer, Long> taken;
    try {
      taken =
          backend.run(
              tx -> {
                Map<Integer, CompletableFuture<byte @Nullable []>> reads = new HashMap<>();
                Map<UUID, CompletableFuture<byte @Nullable []>> holders = new HashMap<>();
                for (int b : bucketsToTake) {
                  reads.put(b, tx.getAsync(keys.lease(kind, b)));
                  Lease l = seenLeases.get(b);
                  if (l != null && l.owner() != null) {
                    holders.computeIfAbsent(l.owner(), o -> tx.getAsync(keys.member(o)));
                  }
                }
                Map<Integer, Long> out = new HashMap<>();
                for (int b : bucketsToTake) {
                  Lease now = Lease.decode(Futures.join(reads.get(b)));
                  Lease expected = seenLeases.get(b);
                  if (!Objects.equals(now, expected)) {
                    continue; // moved since the round read it
                  }
                  if (now != null && now.owner() != null) {
                    byte[] record = Futures.join(holders.get(now.owner()));
                    Member then = all.get(now.owner());
                    if (record != null
                        && (then == null
                            || Member.decode(now.owner(), record).heartbeat()
                                != then.heartbeat())) {
                      continue; // its holder beat since: alive after all
                    }
                  }
                  long epoch = now == null ? 1 : now.epoch() + 1;
                  tx.set(keys.lease(kind, b), new Lease(me, epoch).encode());
                  out.put(b, epoch);
                }
                return out;
              });
    } catch (RuntimeException e) {
      log.warn(
          "taking {} leases of kind {} failed; the next round tries again: {}",
          bucketsToTake.size(),
          kind,
          context,
          e);
      return;
    }
    for (var t : taken.entrySet()) {
      acquire(new KindBucket(kind, t.getKey()), t.getValue());
    }
    if (!taken.isEmpty()) {
      log.info("took {} buckets of kind {}: {}", taken.size(), kind, context);
    }
  }

  /** A hand-off under way: the bucket, the epoch this member holds it at, and its new owner. */
  private record HandOff(KindBucket kb, long epoch, UUID to) {}

  /**
   * Hands the buckets of {@code handoffs} to their desired owners: stops their work, waits for what
   * is in flight in all of them at once (at most {@link #DRAIN_LIMIT}), then writes {@code (to,
   * epoch + 1)} for every lease still this member's, in one transaction per {@link
   * #TAKES_PER_TRANSACTION} buckets. Not a transaction per bucket: those ran one after another on
   * the placement's one thread, so on a slow cluster a round's hand-offs took seconds, and the
   * heartbeat queued behind them.
   */
  private void handOff(String kind, List<Map.Entry<Integer, UUID>> handoffs) {
    List<HandOff> moves = new ArrayList<>();
    List<CompletableFuture<@Nullable Void>> drains = new ArrayList<>();
    for (var h : handoffs) {
      KindBucket kb = new KindBucket(kind, h.getKey());
      Long epoch = held.get(kb);
      if (epoch == null || !moving.add(kb)) {
        continue;
      }
      moves.add(new HandOff(kb, epoch, h.getValue()));
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
    for (List<HandOff> moves = drained.poll(); moves != null; moves = drained.poll()) {
      finishHandOffs(moves);
    }
  }

  private void finishHandOffs(List<HandOff> moves) {
    try {
      for (int i = 0; i < moves.size(); i += TAKES_PER_TRANSACTION) {
        List<HandOff> part = moves.subList(i, Math.min(moves.size(), i + TAKES_PER_TRANSACTION));
        try {
          backend.run(tx -> writeHandOffs(tx, part));
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
      for (HandOff m : moves) {
        moving.remove(m.kb());
        lose(m.kb()); // its work stopped; a round that finds the lease still ours acquires it again
      }
    }
  }

  private @Nullable Void writeHandOffs(Transaction tx, List<HandOff> part) {
    Map<HandOff, CompletableFuture<byte @Nullable []>> reads = new HashMap<>();
    for (HandOff m : part) {
      reads.put(m, tx.getAsync(keys.lease(m.kb().kind(), m.kb().bucket())));
    }
    for (HandOff m : part) {
      Lease now = Lease.decode(Futures.join(reads.get(m)));
      if (now != null && me.equals(now.owner()) && now.epoch() == m.epoch()) {
        tx.set(
            keys.lease(m.kb().kind(), m.kb().bucket()), new Lease(m.to(), m.epoch() + 1).encode());
      }
    }
    return null;
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

  /**
   * Deletes the records of members dead for twice their lease, if they have not beaten since (a
   * serializable read of the record: a late beat makes the delete conflict).
   */
  private void forgetDead(Map<UUID, Member> members, long now) {
    for (Member m : members.values()) {
      Seen s = seen.get(m.id());
      if (m.id().equals(me)
          || s == null
          || now - s.changedAtNanos() < 2 * TimeUnit.MILLISECONDS.toNanos(m.leaseMillis())) {
        continue;
      }
      try {
        backend.run(
            tx -> {
              byte[] v = tx.get(keys.member(m.id()));
              if (v != null && Member.decode(m.id(), v).heartbeat() == m.heartbeat()) {
                tx.clear(keys.member(m.id()));
              }
              return null;
            });
        log.info("removed the record of member {}, dead for twice its lease: {}", m.id(), context);
      } catch (RuntimeException e) {
        log.debug("removing a dead member's record failed: {}", context, e);
      }
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
        backend.run(tx -> release(tx, part));
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

  private @Nullable Void release(Transaction tx, List<KindBucket> part) {
    Map<KindBucket, CompletableFuture<byte @Nullable []>> reads = new HashMap<>();
    for (KindBucket kb : part) {
      reads.put(kb, tx.getAsync(keys.lease(kb.kind(), kb.bucket())));
    }
    for (KindBucket kb : part) {
      Lease now = Lease.decode(Futures.join(reads.get(kb)));
      Long mine = held.get(kb);
      if (now != null && me.equals(now.owner()) && mine != null && now.epoch() == mine) {
        tx.set(keys.lease(kb.kind(), kb.bucket()), new Lease(null, now.epoch() + 1).encode());
      }
    }
    return null;
  }
}
