package io.dgen.internal.limits;

import io.dgen.backend.Backend;
import io.dgen.backend.Futures;
import io.dgen.backend.KeyValue;
import io.dgen.backend.ReadTransaction;
import io.dgen.backend.Transaction;
import io.dgen.internal.observe.Metrics;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.IntConsumer;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One rate limit as this runtime enforces it: a share of the limit's rate and burst, in a token
 * bucket of its own that no other runtime writes, so that its reservations never conflict.
 *
 * <p><b>Shares.</b> Every runtime enforcing the limit keeps a heartbeat record ({@link
 * LimitKeys#rateMember}: a counter and its demand, see {@link RateShares}) and its share ({@link
 * LimitKeys#rateShare}). Every {@value #ROUND_MILLIS} ms a round snapshot-reads the heartbeats and
 * shares, takes the live runtimes (live while its counter changed within {@value #DEAD_MILLIS} ms
 * on this runtime's own clock; no two clocks are compared), computes this runtime's share, writes
 * it when it changed, and rewrites the heartbeat when the hunger changed or {@value #BEAT_MILLIS}
 * ms passed. A share shrinks at once (before the round commits); it grows only into the room the
 * other live runtimes' shares leave ({@code rate - Σ their shares}), in a round that adds a read
 * conflict on the shares' range, so two rounds growing at once conflict and the published shares
 * never add up to more than the rate. Heartbeats are never read serializably, so they never make a
 * round conflict. A runtime that has not committed a heartbeat for {@value #FENCE_MILLIS} ms stops
 * reserving, and for {@value #HAND_OUT_MILLIS} ms stops handing out permits (those of a reservation
 * that completes later are dropped), before others may count it dead and take its share; they clear
 * its keys, and a reservation never writes a bucket key it finds cleared.
 *
 * <p><b>Reservations.</b> This runtime reserves slices of permits from its own bucket (one
 * read-modify-write of its bucket key per slice of about {@value #SLICE_MILLIS} ms of its share).
 * The bucket may go into debt: a slice's permit {@code k} is usable {@code max(0, (k + 1 - tokens)
 * / share)} seconds after the reservation, exactly when a token bucket of that size would have had
 * a token for it; so over any window the servers of this runtime take at most {@code burstShare +
 * share × window} permits, plus the slack of permits handed out late (at most {@value
 * #STALE_MILLIS} ms late, or dropped) or early (at most {@value #LEAD_MILLIS} ms, to a batch that
 * takes several). It reserves only while its servers take permits or wait, and at most {@value
 * #AHEAD_MILLIS} ms ahead.
 *
 * <p>Never holds a thread for a waiting server: a waiter is a callback in a queue, and one timer
 * (for the next permit's time, or the next reservation) runs the hand-out. Never touches a server's
 * keys, and never runs a server's batch: a grant is handed to the server's loop on the executor.
 *
 * <p>Threading: thread-safe; the permits, waiters and share are guarded by {@code this}, grants run
 * outside the monitor, and at most one of this limiter's transactions (a round or a reservation)
 * runs at a time.
 */
public final class RateLimiter {

  private static final Logger log = LoggerFactory.getLogger(RateLimiter.class);

  /** A reservation takes about this much of the share. */
  static final long SLICE_MILLIS = 200;

  /** A runtime never reserves permits usable later than this from now. */
  static final long AHEAD_MILLIS = 400;

  /** A permit not handed out within this of its time is dropped (it would exceed the bound). */
  static final long STALE_MILLIS = 200;

  /**
   * A waiter handed permits takes those due within this too, so that a batch gets several at a high
   * rate instead of one per timer tick.
   */
  static final long LEAD_MILLIS = 20;

  /** How often a runtime reads the others' heartbeats and shares, and adjusts its own share. */
  static final long ROUND_MILLIS = 250;

  /** A runtime rewrites its heartbeat record at least this often. */
  static final long BEAT_MILLIS = 1_000;

  /** A runtime stops reserving when its last heartbeat committed longer ago than this. */
  static final long FENCE_MILLIS = 2_000;

  /** A member whose heartbeat did not change for this long (on the reader's clock) is dead. */
  static final long DEAD_MILLIS = 3_000;

  /**
   * A runtime hands out no permit when its last heartbeat committed longer ago than this: the last
   * reservation it may start (at {@link #FENCE_MILLIS}) has permits due at most {@link
   * #AHEAD_MILLIS} later, handed out at most {@link #STALE_MILLIS} after that; a reservation that
   * completes later than this (a slow commit) is dropped. Less than {@link #DEAD_MILLIS}, after
   * which the others may take this runtime's share.
   */
  static final long HAND_OUT_MILLIS = FENCE_MILLIS + AHEAD_MILLIS + STALE_MILLIS;

  /**
   * A runtime with a server waiting for a permit during at least this part of a round is hungry: it
   * wants a bigger share. (Not "it used its share": after a shrink its bucket repays the permits it
   * reserved ahead, and it takes little while its servers wait.)
   */
  static final double HUNGRY_WAITING = 0.5;

  /** A share moves only by more than this part of the rate (or to or from zero). */
  static final double HYSTERESIS = 0.02;

  private static final long LEAD_NANOS = TimeUnit.MILLISECONDS.toNanos(LEAD_MILLIS);
  private static final long STALE_NANOS = TimeUnit.MILLISECONDS.toNanos(STALE_MILLIS);
  private static final long SLICE_NANOS = TimeUnit.MILLISECONDS.toNanos(SLICE_MILLIS);
  private static final long RETRY_NANOS = TimeUnit.MILLISECONDS.toNanos(100);
  private static final long ROUND_NANOS = TimeUnit.MILLISECONDS.toNanos(ROUND_MILLIS);
  private static final long BEAT_NANOS = TimeUnit.MILLISECONDS.toNanos(BEAT_MILLIS);
  private static final long FENCE_NANOS = TimeUnit.MILLISECONDS.toNanos(FENCE_MILLIS);
  private static final long DEAD_NANOS = TimeUnit.MILLISECONDS.toNanos(DEAD_MILLIS);
  private static final long HAND_OUT_NANOS = TimeUnit.MILLISECONDS.toNanos(HAND_OUT_MILLIS);

  /** A server waiting for up to {@code want} permits; {@code grant} gets how many it got. */
  public static final class Waiter {
    private final int want;
    private final IntConsumer grant;
    private final long since;

    private Waiter(int want, IntConsumer grant, long since) {
      this.want = want;
      this.grant = grant;
      this.since = since;
    }
  }

  /**
   * What a reservation got: {@code count} permits from a bucket that had {@code tokens} before it,
   * refilled at {@code share}; or none, and no reservation is worth trying before {@code
   * laterMillis}.
   */
  private record Reservation(double share, double tokens, int count, long laterMillis) {}

  /**
   * What a round decided: this runtime's {@code share} of {@code rate} (burst {@code burst}); the
   * members it found dead (and cleared); the record it wrote, if any, in the attempt begun at
   * {@code startedAt}.
   */
  private record Round(
      double rate,
      int burst,
      double share,
      List<UUID> dead,
      LimitKeys.@Nullable Member wrote,
      boolean wroteShare,
      long startedAt) {}

  /** When this runtime last saw a member's heartbeat change (nanos, its own clock). */
  private record Seen(long beat, long atNanos) {}

  private final String name;
  private final UUID id;
  private final Backend backend;
  private final LimitKeys keys;
  private final byte[] configKey;
  private final byte[] bucketKey;
  private final byte[] memberKey;
  private final byte[][] membersRange;
  private final byte[] shareKey;
  private final byte[][] sharesRange;
  private final LongSupplier nanoTime;
  private final LongSupplier wallMillis;
  private final Executor executor;
  private final ScheduledExecutorService scheduler;
  private final Metrics.Limit meters;

  // Guarded by this.
  private final PriorityQueue<Long> permits = new PriorityQueue<>();
  private final ArrayDeque<Waiter> waiters = new ArrayDeque<>();
  private final Map<UUID, Seen> seen = new HashMap<>();
  private double rate;
  private int burst;
  private double share;
  private boolean busy;
  private boolean roundDue;
  private long reserveNotBefore;
  private @Nullable ScheduledFuture<?> timer;
  private long timerAt;
  private @Nullable ScheduledFuture<?> rounds;
  private long windowStart;
  private int takenThisWindow;
  private int takenLastWindow;
  private long beat;
  private long beatCommittedAt;
  private boolean beaten;
  private LimitKeys.@Nullable Member published;
  private double publishedShare = -1;
  private long sinceRound;
  private int takenSinceRound;
  private long waitingSince;
  private long waitingNanos;
  private int mostWaiting;
  private boolean closed;

  RateLimiter(
      String name,
      UUID id,
      LimitKeys keys,
      LimitKeys.RateConfig config,
      Backend backend,
      LongSupplier nanoTime,
      LongSupplier wallMillis,
      Executor executor,
      ScheduledExecutorService scheduler,
      Metrics metrics) {
    this.name = name;
    this.id = id;
    this.backend = backend;
    this.keys = keys;
    this.configKey = keys.rateConfig(name);
    this.bucketKey = keys.rateBucket(name, id);
    this.memberKey = keys.rateMember(name, id);
    this.membersRange = keys.rateMembers(name);
    this.shareKey = keys.rateShare(name, id);
    this.sharesRange = keys.rateShares(name);
    this.rate = config.permitsPerSecond();
    this.burst = config.burst();
    this.nanoTime = nanoTime;
    this.wallMillis = wallMillis;
    this.executor = executor;
    this.scheduler = scheduler;
    this.windowStart = nanoTime.getAsLong();
    this.reserveNotBefore = windowStart;
    this.sinceRound = windowStart;
    this.meters = metrics.limit(name, "rate", this::waiting);
  }

  /** Joins the limit: the first round runs now, then one every {@value #ROUND_MILLIS} ms. */
  synchronized void start() {
    try {
      rounds =
          scheduler.scheduleWithFixedDelay(this::roundTick, 0, ROUND_MILLIS, TimeUnit.MILLISECONDS);
    } catch (RejectedExecutionException e) {
      closed = true; // the runtime is closing
    }
  }

  /** The limit's name. */
  String name() {
    return name;
  }

  /**
   * Takes up to {@code max} permits usable now, if no server waits for one (first come, first
   * served); 0 if none.
   */
  public int tryAcquire(int max) {
    int n = 0;
    synchronized (this) {
      long now = nanoTime.getAsLong();
      if (waiters.isEmpty()) {
        dropStale(now);
        n = take(max, now);
      }
      maybeReserve(now);
    }
    if (n > 0) {
      meters.granted(n);
    }
    return n;
  }

  /**
   * Waits for permits: {@code grant} runs on the executor with between 1 and {@code max} permits,
   * in the order servers started waiting.
   *
   * @return the waiter, for {@link #cancel}
   */
  public Waiter await(int max, IntConsumer grant) {
    Waiter w = new Waiter(max, grant, nanoTime.getAsLong());
    synchronized (this) {
      if (waiters.isEmpty()) {
        waitingSince = w.since;
      }
      waiters.add(w);
      mostWaiting = Math.max(mostWaiting, waiters.size());
    }
    dispatch();
    return w;
  }

  /** Stops waiting; false if the waiter was granted already (its grant runs). */
  public synchronized boolean cancel(Waiter w) {
    boolean removed = waiters.remove(w);
    if (removed && waiters.isEmpty()) {
      waitingNanos += nanoTime.getAsLong() - waitingSince;
    }
    return removed;
  }

  /** Gives back {@code n} permits a batch took and did not use. */
  public void giveBack(int n) {
    if (n <= 0) {
      return;
    }
    synchronized (this) {
      long now = nanoTime.getAsLong();
      for (int i = 0; i < n; i++) {
        permits.add(now);
      }
      takenThisWindow = Math.max(0, takenThisWindow - n);
      takenSinceRound = Math.max(0, takenSinceRound - n);
    }
    dispatch();
  }

  /** Servers of this runtime waiting for a permit now. */
  synchronized int waiting() {
    return waiters.size();
  }

  /** Permits this runtime holds, usable now or later. */
  synchronized int held() {
    return permits.size();
  }

  @Override
  public synchronized String toString() {
    return "RateLimiter["
        + name
        + " share="
        + share
        + "/"
        + rate
        + " permits="
        + permits.size()
        + " waiters="
        + waiters.size()
        + " busy="
        + busy
        + " timer="
        + (timer != null)
        + " taken="
        + takenThisWindow
        + "/"
        + takenLastWindow
        + " notBefore="
        + (reserveNotBefore - nanoTime.getAsLong())
        + "]";
  }

  /**
   * Stops reserving and scheduling, and leaves the limit (its record and bucket are cleared, so the
   * others take its share at their next round); waiters are dropped (their processes stop).
   */
  void close() {
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
      waiters.clear();
      if (timer != null) {
        timer.cancel(false);
      }
      if (rounds != null) {
        rounds.cancel(false);
      }
      if (busy) {
        return; // the transaction under way leaves when it ends, so it cannot write after this
      }
      busy = true;
    }
    leave();
  }

  /**
   * Clears this runtime's keys of the limit, so that the others take its share at their next round.
   * Called once, closed, with {@code busy} set (no other transaction of this limiter runs).
   */
  private void leave() {
    LimitRuns.counted(
            backend,
            meters,
            tx -> {
              tx.clear(memberKey);
              tx.clear(shareKey);
              tx.clear(bucketKey);
              return CompletableFuture.completedFuture(null);
            })
        .whenComplete(
            (ignored, err) -> {
              if (err != null) {
                log.debug(
                    "leaving the rate limit {} failed; the others count this runtime dead in {} ms",
                    name,
                    DEAD_MILLIS,
                    Futures.unwrap(err));
              }
            });
  }

  /**
   * Ends this limiter's transaction under way: false if the limiter closed meanwhile, and it leaves
   * now. Holds the monitor.
   */
  private boolean ended() {
    if (closed) {
      return false; // busy stays set: nothing else starts
    }
    busy = false;
    return true;
  }

  private void dispatch() {
    List<Waiter> granted = new ArrayList<>();
    List<Integer> counts = new ArrayList<>();
    long now;
    synchronized (this) {
      if (closed) {
        return;
      }
      now = nanoTime.getAsLong();
      while (!waiters.isEmpty()) {
        int n = take(waiters.peekFirst().want, now);
        if (n == 0) {
          break;
        }
        granted.add(waiters.pollFirst());
        if (waiters.isEmpty()) {
          waitingNanos += now - waitingSince;
        }
        counts.add(n);
      }
      dropStale(now);
      maybeReserve(now);
      if (!waiters.isEmpty() && !permits.isEmpty()) {
        wakeAt(permits.peek());
      }
    }
    for (int i = 0; i < granted.size(); i++) {
      Waiter w = granted.get(i);
      int n = counts.get(i);
      meters.waited(now - w.since);
      meters.granted(n);
      try {
        executor.execute(() -> w.grant.accept(n));
      } catch (RejectedExecutionException e) {
        // the runtime is closing
      }
    }
  }

  /**
   * Takes up to {@code max} permits usable at {@code now}; none, and drops them all, once this
   * runtime's last committed heartbeat is older than {@value #HAND_OUT_MILLIS} ms. Holds the
   * monitor.
   */
  private int take(int max, long now) {
    if (fenced(now)) {
      permits.clear();
      return 0;
    }
    int n = 0;
    while (n < max && !permits.isEmpty() && permits.peek() - now <= LEAD_NANOS) {
      permits.poll();
      n++;
    }
    rollWindow(now);
    takenThisWindow += n;
    takenSinceRound += n;
    return n;
  }

  /**
   * Whether this runtime must hand out nothing at {@code now}: its last heartbeat committed too
   * long ago for the others to be sure to count it live. Holds the monitor.
   */
  private boolean fenced(long now) {
    return !beaten || now - beatCommittedAt > HAND_OUT_NANOS;
  }

  private void dropStale(long now) {
    while (!permits.isEmpty() && now - permits.peek() > STALE_NANOS) {
      permits.poll();
    }
  }

  private void rollWindow(long now) {
    long elapsed = now - windowStart;
    if (elapsed >= SLICE_NANOS) {
      takenLastWindow = elapsed >= 2 * SLICE_NANOS ? 0 : takenThisWindow;
      takenThisWindow = 0;
      windowStart = now;
    }
  }

  /**
   * Reserves the next slice if servers wait or have been taking permits, fewer than half a slice
   * are left here, this runtime has a share and its heartbeat is recent enough. Holds the monitor.
   */
  private void maybeReserve(long now) {
    if (closed || busy) {
      return;
    }
    if (roundDue) {
      startRound();
      return;
    }
    if (share <= 0 || !beaten || now - beatCommittedAt > FENCE_NANOS) {
      return; // the next round may give this runtime a share, or renew its heartbeat
    }
    rollWindow(now);
    int demand = Math.max(takenThisWindow, takenLastWindow);
    for (Waiter w : waiters) {
      demand += w.want;
    }
    if (demand <= 0) {
      return;
    }
    int size = (int) Math.min(demand, sliceOf(share));
    if (permits.size() >= Math.max(1, size / 2)) {
      return;
    }
    if (now - reserveNotBefore < 0) {
      wakeAt(reserveNotBefore);
      return;
    }
    busy = true;
    double s = share;
    double b = burstOf(s);
    try {
      executor.execute(() -> reserve(Math.max(1, size), s, b));
    } catch (RejectedExecutionException e) {
      busy = false; // the runtime is closing
    }
  }

  /** The most permits a reservation takes at {@code rate}: about a slice's worth, at least one. */
  static long sliceOf(double rate) {
    return Math.max(1, (long) Math.ceil(rate * SLICE_MILLIS / 1000.0));
  }

  /** This runtime's part of the burst at share {@code s}: the burst in proportion. Holds it. */
  private double burstOf(double s) {
    return rate <= 0 ? 0 : burst * s / rate;
  }

  private void reserve(int size, double s, double burstShare) {
    LimitRuns.counted(
            backend,
            meters,
            tx ->
                // Serializable: the only other writer of this key is a runtime that counted this
                // one dead and clears it; this reservation then conflicts, and its retry finds the
                // key gone.
                tx.getAsync(bucketKey)
                    .thenApply(
                        stored -> {
                          long now = wallMillis.getAsLong();
                          LimitKeys.Bucket b = LimitKeys.Bucket.decode(stored);
                          if (b == null) {
                            // Cleared by a runtime that counted this one dead (the first round
                            // wrote it): writing it again would leave a bucket nobody clears.
                            // The next round finds this runtime's keys gone and starts over.
                            return new Reservation(s, 0, 0, ROUND_MILLIS);
                          }
                          double tokens = b.tokensAt(now, s, burstShare);
                          double firstMillis = (1 - tokens) / s * 1000;
                          if (firstMillis > AHEAD_MILLIS) {
                            return new Reservation(
                                s, tokens, 0, (long) Math.ceil(firstMillis - AHEAD_MILLIS));
                          }
                          int n = (int) Math.min(size, sliceOf(s));
                          tx.set(
                              bucketKey,
                              new LimitKeys.Bucket(tokens - n, Math.max(now, b.atMillis()))
                                  .encode());
                          return new Reservation(s, tokens, n, 0);
                        }))
        .whenComplete(this::reserved);
  }

  private void reserved(@Nullable Reservation r, @Nullable Throwable err) {
    synchronized (this) {
      if (!ended()) {
        leave(); // starts a transaction, and blocks nothing
        return;
      }
      long now = nanoTime.getAsLong();
      if (err != null || r == null) {
        log.warn(
            "reserving permits of the rate limit {} failed; trying again in {} ms",
            name,
            TimeUnit.NANOSECONDS.toMillis(RETRY_NANOS),
            Futures.unwrap(err));
        reserveNotBefore = now + RETRY_NANOS;
      } else if (r.count() > 0 && fenced(now)) {
        // Completed too late: the others may count this runtime dead by the time these permits
        // are handed out, and take its share over.
        log.debug(
            "dropping {} permits of the rate limit {} reserved by a transaction that completed {} ms"
                + " after this runtime's last heartbeat",
            r.count(),
            name,
            TimeUnit.NANOSECONDS.toMillis(now - beatCommittedAt));
      } else {
        if (r.count() == 0) {
          reserveNotBefore = now + TimeUnit.MILLISECONDS.toNanos(r.laterMillis());
        }
        for (int k = 0; k < r.count(); k++) {
          double wait = Math.max(0, (k + 1 - r.tokens()) / r.share());
          permits.add(now + (long) (wait * 1e9));
        }
      }
    }
    dispatch();
  }

  // ---------------------------------------------------------------- rounds

  private void roundTick() {
    synchronized (this) {
      if (closed) {
        return;
      }
      roundDue = true;
      if (busy) {
        return; // runs when the transaction under way ends
      }
      startRound();
    }
  }

  /** Starts a round on the executor. Holds the monitor; no transaction of this limiter runs. */
  private void startRound() {
    long now = nanoTime.getAsLong();
    double seconds = Math.max(1e-3, (now - sinceRound) / 1e9);
    if (!waiters.isEmpty()) {
      waitingNanos += now - waitingSince;
      waitingSince = now;
    }
    boolean hungry = waitingNanos > 0 && waitingNanos >= HUNGRY_WAITING * (now - sinceRound);
    RateShares.Demand mine =
        new RateShares.Demand(
            hungry, Math.max(mostWaiting, waiters.size()), takenSinceRound / seconds);
    sinceRound = now;
    takenSinceRound = 0;
    waitingNanos = 0;
    roundDue = false;
    busy = true;
    try {
      executor.execute(() -> round(mine));
    } catch (RejectedExecutionException e) {
      busy = false; // the runtime is closing
    }
  }

  private void round(RateShares.Demand mine) {
    LimitRuns.counted(
            backend,
            meters,
            tx -> {
              long startedAt = nanoTime.getAsLong();
              ReadTransaction snap = tx.snapshot();
              CompletableFuture<byte @Nullable []> config = snap.getAsync(configKey);
              CompletableFuture<byte @Nullable []> bucket = snap.getAsync(bucketKey);
              CompletableFuture<List<KeyValue>> members =
                  snap.getRangeAsync(
                      membersRange[0], membersRange[1], ReadTransaction.UNLIMITED, false);
              CompletableFuture<List<KeyValue>> shares =
                  snap.getRangeAsync(
                      sharesRange[0], sharesRange[1], ReadTransaction.UNLIMITED, false);
              return CompletableFuture.allOf(config, bucket, members, shares)
                  .thenApply(
                      ignored ->
                          decide(
                              tx,
                              mine,
                              startedAt,
                              config.join(),
                              bucket.join(),
                              members.join(),
                              shares.join()));
            })
        .whenComplete(this::rounded);
  }

  /** The body of a round's attempt begun at {@code startedAt}; see the class comment. */
  private Round decide(
      Transaction tx,
      RateShares.Demand mine,
      long startedAt,
      byte @Nullable [] config,
      byte @Nullable [] bucket,
      List<KeyValue> heartbeats,
      List<KeyValue> shares) {
    LimitKeys.RateConfig c = LimitKeys.RateConfig.decode(config);
    if (c == null) {
      throw new IllegalStateException("the rate limit " + name + " is no longer stored");
    }
    double newRate = c.permitsPerSecond();
    Map<UUID, Double> shareOf = new HashMap<>();
    for (KeyValue kv : shares) {
      shareOf.put(keys.unpack(kv.key()).getUUID(3), LimitKeys.decodeShare(kv.value()));
    }
    Map<UUID, RateShares.Demand> demands = new HashMap<>();
    demands.put(id, mine);
    double others = 0;
    boolean listed = false;
    List<UUID> dead = new ArrayList<>();
    synchronized (this) {
      Set<UUID> present = new HashSet<>();
      for (KeyValue kv : heartbeats) {
        UUID member = keys.unpack(kv.key()).getUUID(3);
        present.add(member);
        if (member.equals(id)) {
          listed = true;
          continue;
        }
        LimitKeys.Member m = LimitKeys.Member.decode(kv.value());
        Seen s = seen.get(member);
        if (s == null || s.beat() != m.beat()) {
          seen.put(member, new Seen(m.beat(), startedAt));
        } else if (startedAt - s.atNanos() > DEAD_NANOS) {
          dead.add(member);
          continue;
        }
        demands.put(member, new RateShares.Demand(m.hungry(), m.weight(), m.perSecond()));
      }
      seen.keySet().retainAll(present); // forget runtimes that left
      for (var e : shareOf.entrySet()) {
        UUID member = e.getKey();
        if (member.equals(id) || dead.contains(member)) {
          continue;
        }
        if (demands.containsKey(member)) {
          others += e.getValue();
        } else {
          dead.add(member); // a share without a heartbeat (they are written and cleared together)
        }
      }
      if (!listed && published != null) {
        // Others counted this runtime dead and cleared its keys: whatever it reserved may
        // overlap what they took over, so it starts again from nothing.
        share = 0;
        published = null;
        publishedShare = -1;
        permits.clear();
      }
      double old = share;
      double room = Math.max(0, newRate - others);
      double target = Math.min(RateShares.split(newRate, demands).get(id), room);
      if (Math.abs(target - old) < newRate * HYSTERESIS && old > 0 && target > 0 && old <= room) {
        target = old;
      }
      if (target > old) {
        // A grow must not overlap another runtime's: two rounds that read the shares before
        // either wrote its own conflict here, and one reads the other's share when it retries.
        tx.addReadConflictRange(sharesRange[0], sharesRange[1]);
      } else {
        share = target; // a shrink applies at once, before anyone can read it
      }
      long nowMillis = wallMillis.getAsLong();
      if (target != old || newRate != rate || c.burst() != burst || bucket == null) {
        double oldBurst = burstOf(old);
        double newBurst = newRate <= 0 ? 0 : c.burst() * target / newRate;
        LimitKeys.Bucket b = LimitKeys.Bucket.decode(bucket);
        double tokens =
            b == null ? newBurst : Math.min(newBurst, b.tokensAt(nowMillis, old, oldBurst));
        tx.set(bucketKey, new LimitKeys.Bucket(tokens, nowMillis).encode());
      }
      boolean writeShare = target != publishedShare;
      if (writeShare) {
        tx.set(shareKey, LimitKeys.encodeShare(target));
      }
      LimitKeys.Member written = null;
      if (published == null
          || mine.hungry() != published.hungry()
          || startedAt - beatCommittedAt >= BEAT_NANOS - ROUND_NANOS / 2) {
        written =
            new LimitKeys.Member(
                beat + 1, mine.hungry(), mine.weight(), mine.perSecond(), nowMillis);
        tx.set(memberKey, written.encode());
      }
      for (UUID d : dead) {
        tx.clear(keys.rateMember(name, d));
        tx.clear(keys.rateShare(name, d));
        tx.clear(keys.rateBucket(name, d));
      }
      return new Round(newRate, c.burst(), target, dead, written, writeShare, startedAt);
    }
  }

  private void rounded(@Nullable Round r, @Nullable Throwable err) {
    synchronized (this) {
      if (!ended()) {
        leave(); // starts a transaction, and blocks nothing
        return;
      }
      if (err != null || r == null) {
        log.warn(
            "a round of the rate limit {} failed; this runtime keeps its share for now",
            name,
            Futures.unwrap(err));
      } else {
        rate = r.rate();
        burst = r.burst();
        share = r.share();
        if (r.wroteShare()) {
          publishedShare = r.share();
        }
        if (r.wrote() != null) {
          published = r.wrote();
          beat = published.beat();
          beatCommittedAt = r.startedAt();
          beaten = true;
          mostWaiting = waiters.size();
        }
        r.dead().forEach(seen::remove);
      }
    }
    dispatch();
  }

  /** Runs a hand-out at {@code at} (nanos), unless one is due earlier. Holds the monitor. */
  private void wakeAt(long at) {
    if (closed || (timer != null && timerAt - at <= 0)) {
      return;
    }
    if (timer != null) {
      timer.cancel(false);
    }
    timerAt = at;
    try {
      timer =
          scheduler.schedule(
              () -> {
                synchronized (this) {
                  if (timerAt == at) {
                    timer = null;
                  }
                }
                try {
                  executor.execute(this::dispatch);
                } catch (RejectedExecutionException e) {
                  // the runtime is closing
                }
              },
              Math.max(0, at - nanoTime.getAsLong()),
              TimeUnit.NANOSECONDS);
    } catch (RejectedExecutionException e) {
      timer = null; // the runtime is closing
    }
  }
}
