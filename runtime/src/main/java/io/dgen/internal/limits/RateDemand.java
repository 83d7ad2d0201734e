package io.dgen.internal.limits;

import java.util.concurrent.TimeUnit;

/**
 * What this runtime's servers asked of one rate limit: the permits they took (in the current and
 * the last window of a slice, for the size of the next reservation, and since the last round) and
 * how long and how many of them waited (for the demand a round publishes).
 *
 * <p>Threading: not thread-safe; its rate limiter calls it holding the limiter's monitor.
 */
final class RateDemand {

  /**
   * A runtime with a server waiting for a permit during at least this part of a round is hungry: it
   * wants a bigger share. (Not "it used its share": after a shrink its bucket repays the permits it
   * reserved ahead, and it takes little while its servers wait.)
   */
  static final double HUNGRY_WAITING = 0.5;

  private static final long WINDOW_NANOS = TimeUnit.MILLISECONDS.toNanos(RateBucket.SLICE_MILLIS);

  private long windowStart;
  private int takenThisWindow;
  private int takenLastWindow;
  private long sinceRound;
  private int takenSinceRound;
  private long waitingSince;
  private long waitingNanos;
  private int mostWaiting;

  RateDemand(long now) {
    this.windowStart = now;
    this.sinceRound = now;
  }

  /** Servers took {@code n} permits at {@code now}. */
  void took(int n, long now) {
    rollWindow(now);
    takenThisWindow += n;
    takenSinceRound += n;
  }

  /** A batch gave back {@code n} permits it took and did not use. */
  void gaveBack(int n) {
    takenThisWindow = Math.max(0, takenThisWindow - n);
    takenSinceRound = Math.max(0, takenSinceRound - n);
  }

  /** A server started waiting at {@code now}, when none waited. */
  void firstWaiting(long now) {
    waitingSince = now;
  }

  /** {@code waiters} servers wait now. */
  void waiting(int waiters) {
    mostWaiting = Math.max(mostWaiting, waiters);
  }

  /** The last waiting server stopped waiting at {@code now}. */
  void noneWaiting(long now) {
    waitingNanos += now - waitingSince;
  }

  /** The permits servers took in the current or the last window, whichever is more. */
  int recentlyTaken(long now) {
    rollWindow(now);
    return Math.max(takenThisWindow, takenLastWindow);
  }

  /**
   * The demand a round starting at {@code now} publishes, with {@code waiters} servers waiting;
   * starts counting the next round's.
   */
  RateShares.Demand round(long now, int waiters) {
    double seconds = Math.max(1e-3, (now - sinceRound) / 1e9);
    if (waiters > 0) {
      waitingNanos += now - waitingSince;
      waitingSince = now;
    }
    boolean hungry = waitingNanos > 0 && waitingNanos >= HUNGRY_WAITING * (now - sinceRound);
    RateShares.Demand mine =
        new RateShares.Demand(hungry, Math.max(mostWaiting, waiters), takenSinceRound / seconds);
    sinceRound = now;
    takenSinceRound = 0;
    waitingNanos = 0;
    return mine;
  }

  /** A round wrote this runtime's heartbeat with {@code waiters} servers waiting. */
  void beat(int waiters) {
    mostWaiting = waiters;
  }

  @Override
  public String toString() {
    return takenThisWindow + "/" + takenLastWindow;
  }

  private void rollWindow(long now) {
    long elapsed = now - windowStart;
    if (elapsed >= WINDOW_NANOS) {
      takenLastWindow = elapsed >= 2 * WINDOW_NANOS ? 0 : takenThisWindow;
      takenThisWindow = 0;
      windowStart = now;
    }
  }
}
