package io.dgen.benchmarks;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;

/**
 * Counts messages whose effect has been committed, as reported by the servers' post-commit actions
 * (or by the plain actor), and lets one thread wait until a count is reached without polling.
 *
 * <p>Post-commit actions run once per committed message, after the commit: a message counted here
 * is durably applied. The time at which a target was reached is taken by the thread that reached
 * it, so waking the waiter adds nothing to a measured interval.
 */
final class Progress {

  private final AtomicLong applied = new AtomicLong();
  private volatile long lastNanos = System.nanoTime();
  private volatile @Nullable Waiter waiter;

  private record Waiter(long target, CompletableFuture<Long> reachedAt) {}

  /** Called by whoever applied {@code n} more messages. */
  void add(long n) {
    long now = applied.addAndGet(n);
    long t = System.nanoTime();
    lastNanos = t;
    Waiter w = waiter;
    if (w != null && now >= w.target()) {
      w.reachedAt().complete(t);
    }
  }

  long applied() {
    return applied.get();
  }

  /**
   * Waits until at least {@code target} messages were applied.
   *
   * @return the {@link System#nanoTime()} at which the target was reached
   * @throws IllegalStateException if it was not reached within {@code timeout}
   */
  long awaitAtLeast(long target, Duration timeout) {
    Waiter w = new Waiter(target, new CompletableFuture<>());
    waiter = w;
    if (applied.get() >= target) {
      w.reachedAt().complete(lastNanos);
    }
    try {
      return w.reachedAt().get(timeout.toNanos(), TimeUnit.NANOSECONDS);
    } catch (TimeoutException e) {
      throw new IllegalStateException(
          "only " + applied.get() + " of " + target + " messages applied within " + timeout, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while waiting for " + target, e);
    } catch (ExecutionException e) {
      throw new IllegalStateException(e.getCause());
    } finally {
      waiter = null;
    }
  }
}
