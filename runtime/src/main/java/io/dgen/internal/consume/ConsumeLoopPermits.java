package io.dgen.internal.consume;

import io.dgen.internal.limits.ConcurrencyGate;
import io.dgen.internal.limits.RateLimiter;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * The permits one consume loop ({@code ConsumeLoop}) waits for besides the runtime's batch permits:
 * those of its kind's rate limit, taken for each batch and the unused ones given back, and a free
 * slot of its kind's concurrency limit, waited for in the gate's line. Waiting holds no thread: the
 * limiter or the gate runs the loop again. The gate hands its wake-up to the executor as it is: a
 * task of the consume loop, as its class name says ({@code LimitsTest} holds such tasks back).
 * Threading: touched by the loop's owner only, but for {@link #cancel}, which a stopping process
 * calls.
 */
final class ConsumeLoopPermits {

  private final @Nullable RateLimiter rate;
  private final @Nullable ConcurrencyGate gate;
  private final int consumeK;

  // Rate permits the loop holds for its next batch; touched by the loop's owner only.
  private int ratePermits;
  private volatile RateLimiter.@Nullable Waiter rateWaiter;
  private volatile ConcurrencyGate.@Nullable Waiter gateWaiter;
  private boolean gateWoken;

  ConsumeLoopPermits(@Nullable RateLimiter rate, @Nullable ConcurrencyGate gate, int consumeK) {
    this.rate = rate;
    this.gate = gate;
    this.consumeK = consumeK;
  }

  /**
   * With a rate limit, takes the permits of the next batch (up to {@code consumeK}) unless it holds
   * some; with none usable now, waits for them in the limiter's line, holding no thread, and
   * returns false: the grant runs {@code drain}.
   */
  boolean takeRatePermits(Runnable drain) {
    if (rate == null || ratePermits > 0) {
      return true;
    }
    int n = rate.tryAcquire(consumeK);
    if (n > 0) {
      ratePermits = n;
      return true;
    }
    rateWaiter =
        rate.await(
            consumeK,
            granted -> {
              rateWaiter = null;
              ratePermits = granted;
              drain.run();
            });
    return false;
  }

  /** The most items the next batch may take by the rate limit. */
  int rateCap() {
    return rate != null ? ratePermits : Integer.MAX_VALUE;
  }

  /** Gives back the rate permits the last batch did not use ({@code used} of them it did). */
  void giveBackRatePermits(int used) {
    if (rate != null && ratePermits > 0) {
      rate.giveBack(ratePermits - Math.min(used, ratePermits));
      ratePermits = 0;
    }
  }

  /**
   * After a batch woken for a free slot of the concurrency limit: if it took none, the gate's next
   * waiter may.
   */
  void passGate() {
    if (gateWoken) {
      gateWoken = false;
      Objects.requireNonNull(gate).passed();
    }
  }

  /** Waits in the concurrency limit's line for a free slot: then the gate runs {@code drain}. */
  void awaitGate(Runnable drain) {
    gateWaiter =
        Objects.requireNonNull(gate)
            .await(
                () -> {
                  gateWaiter = null;
                  gateWoken = true;
                  drain.run();
                });
  }

  /**
   * The process stopped: leaves the limiter's and the gate's lines.
   *
   * @return whether the loop was waiting in either (it is quiet now)
   */
  boolean cancel() {
    boolean left = false;
    RateLimiter.Waiter r = rateWaiter;
    if (r != null && Objects.requireNonNull(rate).cancel(r)) {
      left = true;
    }
    ConcurrencyGate.Waiter g = gateWaiter;
    if (g != null && Objects.requireNonNull(gate).cancel(g)) {
      left = true;
    }
    return left;
  }
}
