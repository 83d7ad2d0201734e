package io.dgen.internal.limits;

import io.dgen.backend.Backend;
import io.dgen.backend.Futures;
import io.dgen.backend.Transaction;
import io.dgen.internal.observe.Metrics;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.PriorityQueue;
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
 * <p><b>Shares and reservations.</b> The share, the heartbeat that keeps it and the bucket it fills
 * are {@link RateBucket}'s (see there): every {@value RateBucket#ROUND_MILLIS} ms a round adjusts
 * the share, and a reservation takes a slice of permits from the bucket. This class runs those
 * transactions, one at a time, and hands the permits out. A runtime that has not committed a
 * heartbeat for {@value #HAND_OUT_MILLIS} ms stops handing out permits (those of a reservation that
 * completes later are dropped), before others may count it dead and take its share.
 *
 * <p><b>Handing out.</b> A slice's permit is usable when a token bucket of that size would have had
 * a token for it; so over any window the servers of this runtime take at most {@code burstShare +
 * share × window} permits, plus the slack of permits handed out late (at most {@value
 * #STALE_MILLIS} ms late, or dropped) or early (at most {@value #LEAD_MILLIS} ms, to a batch that
 * takes several). It reserves only while its servers take permits or wait ({@link RateDemand}), and
 * at most {@value RateBucket#AHEAD_MILLIS} ms ahead.
 *
 * <p>Never holds a thread for a waiting server: a waiter is a callback in a queue, and one timer
 * (for the next permit's time, or the next reservation) runs the hand-out. Never touches a server's
 * keys, and never runs a server's batch: a grant is handed to the server's loop on the executor.
 *
 * <p>Threading: thread-safe; the permits, waiters, demand and bucket are guarded by {@code this},
 * grants run outside the monitor, and at most one of this limiter's transactions (a round or a
 * reservation) runs at a time.
 */
public final class RateLimiter {

  private static final Logger log = LoggerFactory.getLogger(RateLimiter.class);

  /** A permit not handed out within this of its time is dropped (it would exceed the bound). */
  static final long STALE_MILLIS = 200;

  /**
   * A waiter handed permits takes those due within this too, so that a batch gets several at a high
   * rate instead of one per timer tick.
   */
  static final long LEAD_MILLIS = 20;

  /**
   * A runtime hands out no permit when its last heartbeat committed longer ago than this: the last
   * reservation it may start (at {@link RateBucket#FENCE_MILLIS}) has permits due at most {@link
   * RateBucket#AHEAD_MILLIS} later, handed out at most {@link #STALE_MILLIS} after that; a
   * reservation that completes later than this (a slow commit) is dropped. Less than {@link
   * RateBucket#DEAD_MILLIS}, after which the others may take this runtime's share.
   */
  static final long HAND_OUT_MILLIS =
      RateBucket.FENCE_MILLIS + RateBucket.AHEAD_MILLIS + STALE_MILLIS;

  private static final long LEAD_NANOS = TimeUnit.MILLISECONDS.toNanos(LEAD_MILLIS);
  private static final long STALE_NANOS = TimeUnit.MILLISECONDS.toNanos(STALE_MILLIS);
  private static final long RETRY_NANOS = TimeUnit.MILLISECONDS.toNanos(100);
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

  private final String name;
  private final Backend backend;
  private final LongSupplier nanoTime;
  private final Executor executor;
  private final ScheduledExecutorService scheduler;
  private final Metrics.Limit meters;

  // Guarded by this.
  private final PriorityQueue<Long> permits = new PriorityQueue<>();
  private final ArrayDeque<Waiter> waiters = new ArrayDeque<>();
  private final RateBucket bucket;
  private final RateDemand demand;
  private boolean busy;
  private boolean roundDue;
  private long reserveNotBefore;
  private @Nullable ScheduledFuture<?> timer;
  private long timerAt;
  private @Nullable ScheduledFuture<?> rounds;
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
    this.backend = backend;
    this.bucket = new RateBucket(name, id, keys, config, wallMillis);
    this.nanoTime = nanoTime;
    this.executor = executor;
    this.scheduler = scheduler;
    this.reserveNotBefore = nanoTime.getAsLong();
    this.demand = new RateDemand(reserveNotBefore);
    this.meters = metrics.limit(name, "rate", this::waiting);
  }

  /**
   * Joins the limit: the first round runs now, then one every {@value RateBucket#ROUND_MILLIS} ms.
   */
  synchronized void start() {
    try {
      rounds =
          scheduler.scheduleWithFixedDelay(
              this::roundTick, 0, RateBucket.ROUND_MILLIS, TimeUnit.MILLISECONDS);
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
        demand.firstWaiting(w.since);
      }
      waiters.add(w);
      demand.waiting(waiters.size());
    }
    dispatch();
    return w;
  }

  /** Stops waiting; false if the waiter was granted already (its grant runs). */
  public synchronized boolean cancel(Waiter w) {
    boolean removed = waiters.remove(w);
    if (removed && waiters.isEmpty()) {
      demand.noneWaiting(nanoTime.getAsLong());
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
      demand.gaveBack(n);
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
        + bucket.share()
        + "/"
        + bucket.rate()
        + " permits="
        + permits.size()
        + " waiters="
        + waiters.size()
        + " busy="
        + busy
        + " timer="
        + (timer != null)
        + " taken="
        + demand
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
              bucket.leave(tx);
              return CompletableFuture.completedFuture(null);
            })
        .whenComplete(
            (ignored, err) -> {
              if (err != null) {
                log.debug(
                    "leaving the rate limit {} failed; the others count this runtime dead in {} ms",
                    name,
                    RateBucket.DEAD_MILLIS,
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
          demand.noneWaiting(now);
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
    demand.took(n, now);
    return n;
  }

  /**
   * Whether this runtime must hand out nothing at {@code now}: its last heartbeat committed too
   * long ago for the others to be sure to count it live. Holds the monitor.
   */
  private boolean fenced(long now) {
    return bucket.beatOlderThan(now, HAND_OUT_NANOS);
  }

  private void dropStale(long now) {
    while (!permits.isEmpty() && now - permits.peek() > STALE_NANOS) {
      permits.poll();
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
    if (!bucket.mayReserve(now)) {
      return; // the next round may give this runtime a share, or renew its heartbeat
    }
    int wanted = demand.recentlyTaken(now);
    for (Waiter w : waiters) {
      wanted += w.want;
    }
    if (wanted <= 0) {
      return;
    }
    int size = (int) Math.min(wanted, RateBucket.sliceOf(bucket.share()));
    if (permits.size() >= Math.max(1, size / 2)) {
      return;
    }
    if (now - reserveNotBefore < 0) {
      wakeAt(reserveNotBefore);
      return;
    }
    busy = true;
    double s = bucket.share();
    double b = bucket.burstOf(s);
    try {
      executor.execute(() -> reserve(Math.max(1, size), s, b));
    } catch (RejectedExecutionException e) {
      busy = false; // the runtime is closing
    }
  }

  private void reserve(int size, double s, double burstShare) {
    LimitRuns.counted(backend, meters, tx -> bucket.reserve(tx, size, s, burstShare))
        .whenComplete(this::reserved);
  }

  private void reserved(RateBucket.@Nullable Reservation r, @Nullable Throwable err) {
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
            TimeUnit.NANOSECONDS.toMillis(bucket.sinceBeat(now)));
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
    RateShares.Demand mine = demand.round(nanoTime.getAsLong(), waiters.size());
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
              return bucket.read(tx).thenApply(read -> decide(tx, mine, startedAt, read));
            })
        .whenComplete(this::rounded);
  }

  /** The body of a round's attempt begun at {@code startedAt}: {@link RateBucket#decide}. */
  private RateBucket.Round decide(
      Transaction tx, RateShares.Demand mine, long startedAt, RateBucket.Read read) {
    synchronized (this) {
      return bucket.decide(tx, mine, startedAt, read, permits::clear);
    }
  }

  private void rounded(RateBucket.@Nullable Round r, @Nullable Throwable err) {
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
      } else if (bucket.applied(r)) {
        demand.beat(waiters.size());
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
