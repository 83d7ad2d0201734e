package io.dgen.internal;

import io.dgen.backend.Backend;
import io.dgen.backend.Futures;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.PriorityQueue;
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
 * One rate limit as this runtime enforces it: it reserves slices of permits from the limit's stored
 * bucket (one read-modify-write of the bucket key per slice of about {@value #SLICE_MILLIS} ms of
 * the rate, so a few per second whatever the rate and the number of runtimes), keeps them in memory
 * with the time each becomes usable, and hands them to this runtime's servers, first come first
 * served.
 *
 * <p>The stored bucket is a token bucket that may go into debt: a slice's permit {@code k} is
 * usable {@code max(0, (k + 1 - tokens) / rate)} seconds after the reservation, exactly when a
 * token bucket of that size would have had a token for it; so over any window the servers of every
 * runtime together take at most {@code burst + rate × window} permits, plus the slack of permits
 * handed out late (at most {@value #STALE_MILLIS} ms late, or dropped) or early (at most {@value
 * #LEAD_MILLIS} ms, to a batch that takes several). A runtime reserves only while its servers take
 * permits or wait, and at most {@value #AHEAD_MILLIS} ms ahead.
 *
 * <p>Never holds a thread for a waiting server: a waiter is a callback in a queue, and one timer
 * (for the next permit's time, or the next reservation) runs the hand-out. Never touches a server's
 * keys, and never runs a server's batch: a grant is handed to the server's loop on the executor.
 *
 * <p>Threading: thread-safe; the permits and waiters are guarded by {@code this}, and grants run
 * outside the monitor.
 */
final class RateLimiter {

  private static final Logger log = LoggerFactory.getLogger(RateLimiter.class);

  /** A reservation takes about this much of the rate. */
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

  private static final long LEAD_NANOS = TimeUnit.MILLISECONDS.toNanos(LEAD_MILLIS);
  private static final long STALE_NANOS = TimeUnit.MILLISECONDS.toNanos(STALE_MILLIS);
  private static final long SLICE_NANOS = TimeUnit.MILLISECONDS.toNanos(SLICE_MILLIS);
  private static final long RETRY_NANOS = TimeUnit.MILLISECONDS.toNanos(100);

  /** A server waiting for up to {@code want} permits; {@code grant} gets how many it got. */
  static final class Waiter {
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
   * at {@code rate}; or none, and no reservation is worth trying before {@code laterMillis}.
   */
  private record Reservation(double rate, double tokens, int count, long laterMillis) {}

  private final String name;
  private final Backend backend;
  private final byte[] configKey;
  private final byte[] bucketKey;
  private final LongSupplier nanoTime;
  private final LongSupplier wallMillis;
  private final Executor executor;
  private final ScheduledExecutorService scheduler;
  private final Metrics.Limit meters;

  // Guarded by this.
  private final PriorityQueue<Long> permits = new PriorityQueue<>();
  private final ArrayDeque<Waiter> waiters = new ArrayDeque<>();
  private double rate;
  private boolean reserving;
  private long reserveNotBefore;
  private @Nullable ScheduledFuture<?> timer;
  private long timerAt;
  private long windowStart;
  private int takenThisWindow;
  private int takenLastWindow;
  private boolean closed;

  RateLimiter(
      String name,
      LimitKeys keys,
      double rate,
      Backend backend,
      LongSupplier nanoTime,
      LongSupplier wallMillis,
      Executor executor,
      ScheduledExecutorService scheduler,
      Metrics metrics) {
    this.name = name;
    this.backend = backend;
    this.configKey = keys.rateConfig(name);
    this.bucketKey = keys.rateBucket(name);
    this.rate = rate;
    this.nanoTime = nanoTime;
    this.wallMillis = wallMillis;
    this.executor = executor;
    this.scheduler = scheduler;
    this.windowStart = nanoTime.getAsLong();
    this.reserveNotBefore = windowStart;
    this.meters = metrics.limit(name, "rate", this::waiting);
  }

  /** The limit's name. */
  String name() {
    return name;
  }

  /**
   * Takes up to {@code max} permits usable now, if no server waits for one (first come, first
   * served); 0 if none.
   */
  int tryAcquire(int max) {
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
  Waiter await(int max, IntConsumer grant) {
    Waiter w = new Waiter(max, grant, nanoTime.getAsLong());
    synchronized (this) {
      waiters.add(w);
    }
    dispatch();
    return w;
  }

  /** Stops waiting; false if the waiter was granted already (its grant runs). */
  synchronized boolean cancel(Waiter w) {
    return waiters.remove(w);
  }

  /** Gives back {@code n} permits a batch took and did not use. */
  void giveBack(int n) {
    if (n <= 0) {
      return;
    }
    synchronized (this) {
      long now = nanoTime.getAsLong();
      for (int i = 0; i < n; i++) {
        permits.add(now);
      }
      takenThisWindow = Math.max(0, takenThisWindow - n);
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
        + " permits="
        + permits.size()
        + " waiters="
        + waiters.size()
        + " reserving="
        + reserving
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

  /** Stops reserving and scheduling; waiters are dropped (their processes stop). */
  synchronized void close() {
    closed = true;
    waiters.clear();
    if (timer != null) {
      timer.cancel(false);
    }
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

  /** Takes up to {@code max} permits usable at {@code now}. Holds the monitor. */
  private int take(int max, long now) {
    int n = 0;
    while (n < max && !permits.isEmpty() && permits.peek() - now <= LEAD_NANOS) {
      permits.poll();
      n++;
    }
    rollWindow(now);
    takenThisWindow += n;
    return n;
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
   * Reserves the next slice if servers wait or have been taking permits, and fewer than half a
   * slice are left here. Holds the monitor.
   */
  private void maybeReserve(long now) {
    if (closed || reserving) {
      return;
    }
    rollWindow(now);
    int demand = Math.max(takenThisWindow, takenLastWindow);
    for (Waiter w : waiters) {
      demand += w.want;
    }
    if (demand <= 0) {
      return;
    }
    int size = (int) Math.min(demand, sliceOf(rate));
    if (permits.size() >= Math.max(1, size / 2)) {
      return;
    }
    if (now - reserveNotBefore < 0) {
      wakeAt(reserveNotBefore);
      return;
    }
    reserving = true;
    try {
      executor.execute(() -> reserve(Math.max(1, size)));
    } catch (RejectedExecutionException e) {
      reserving = false; // the runtime is closing
    }
  }

  /** The most permits a reservation takes at {@code rate}: about a slice's worth, at least one. */
  static long sliceOf(double rate) {
    return Math.max(1, (long) Math.ceil(rate * SLICE_MILLIS / 1000.0));
  }

  private void reserve(int size) {
    Limits.counted(
            backend,
            meters,
            tx -> {
              CompletableFuture<byte @Nullable []> config = tx.getAsync(configKey);
              CompletableFuture<byte @Nullable []> bucket = tx.getAsync(bucketKey);
              return CompletableFuture.allOf(config, bucket)
                  .thenApply(
                      ignored -> {
                        LimitKeys.RateConfig c = LimitKeys.RateConfig.decode(config.join());
                        if (c == null) {
                          throw new IllegalStateException(
                              "the rate limit " + name + " is no longer stored");
                        }
                        long now = wallMillis.getAsLong();
                        LimitKeys.Bucket b = LimitKeys.Bucket.decode(bucket.join());
                        if (b == null) {
                          b = new LimitKeys.Bucket(c.burst(), now);
                        }
                        double tokens = b.tokensAt(now, c);
                        double firstMillis = (1 - tokens) / c.permitsPerSecond() * 1000;
                        if (firstMillis > AHEAD_MILLIS) {
                          return new Reservation(
                              c.permitsPerSecond(),
                              tokens,
                              0,
                              (long) Math.ceil(firstMillis - AHEAD_MILLIS));
                        }
                        int n = (int) Math.min(size, sliceOf(c.permitsPerSecond()));
                        tx.set(
                            bucketKey,
                            new LimitKeys.Bucket(tokens - n, Math.max(now, b.atMillis())).encode());
                        return new Reservation(c.permitsPerSecond(), tokens, n, 0);
                      });
            })
        .whenComplete(this::reserved);
  }

  private void reserved(@Nullable Reservation r, @Nullable Throwable err) {
    synchronized (this) {
      reserving = false;
      long now = nanoTime.getAsLong();
      if (err != null || r == null) {
        log.warn(
            "reserving permits of the rate limit {} failed; trying again in {} ms",
            name,
            TimeUnit.NANOSECONDS.toMillis(RETRY_NANOS),
            Futures.unwrap(err));
        reserveNotBefore = now + RETRY_NANOS;
      } else {
        rate = r.rate();
        if (r.count() == 0) {
          reserveNotBefore = now + TimeUnit.MILLISECONDS.toNanos(r.laterMillis());
        }
        for (int k = 0; k < r.count(); k++) {
          double wait = Math.max(0, (k + 1 - r.tokens()) / r.rate());
          permits.add(now + (long) (wait * 1e9));
        }
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
