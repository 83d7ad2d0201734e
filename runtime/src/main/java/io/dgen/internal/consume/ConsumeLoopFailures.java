package io.dgen.internal.consume;

import io.dgen.ServerStoppedException;
import io.dgen.UndecodableDataException;
import io.dgen.internal.base.Lifecycle;
import io.dgen.internal.base.RuntimeServices;
import io.dgen.internal.behaviour.CallbackInvoker;
import io.dgen.internal.commit.Fence;
import io.dgen.internal.limits.ConcurrencyGate;
import io.dgen.internal.lock.DeadLetters;
import io.dgen.internal.observe.LogContext;
import io.dgen.internal.state.StateStore;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.LongConsumer;
import java.util.function.UnaryOperator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What one consume loop ({@code ConsumeLoop}) does when a batch or a step of it fails: blames the
 * failure on an item or on the batch's size, counts it against the item and dead-letters it at the
 * threshold, retries with a growing backoff, and stops the process on a state that does not decode,
 * a deposed fence or a fatal error. Owns the failure count and the sizes of the next batches that
 * failures set (up to a failing item, or one by one). Threading: touched by the loop's owner only.
 */
final class ConsumeLoopFailures {

  // The consume loop's own category, as before this class was split from it (by name: this class
  // does not depend on the loop).
  private static final Logger log = LoggerFactory.getLogger("io.dgen.internal.consume.ConsumeLoop");

  private final RuntimeServices services;
  private final ConsumerParts<?, ?> parts;
  private final StateStore<?> states;
  private final DeadLetters<?> deadLetters;
  private final CallbackInvoker<?, ?> invoker;
  private final Lifecycle lifecycle;
  private final ConsumeLoopPermits permits;
  private final Attempt attempt;
  private final int deadLetterThreshold;
  private final String context;
  private final Runnable drain;
  private final Runnable drainSoon;
  private final LongConsumer drainAfter;
  private final UnaryOperator<Runnable> guarded;

  private int consecutiveFailures;
  private int limitOverride;
  // Items left to run in batches of one, after a batch of them exceeded a limit of FoundationDB.
  private int oneByOne;

  /**
   * @param drain runs the loop in this thread
   * @param drainSoon runs the loop on the executor
   * @param drainAfter runs the loop on the executor after a delay (nanos)
   * @param guarded makes a task that cannot end the loop silently
   */
  ConsumeLoopFailures(
      RuntimeServices services,
      ConsumerParts<?, ?> parts,
      ConsumeLoopPermits permits,
      Attempt attempt,
      String context,
      Runnable drain,
      Runnable drainSoon,
      LongConsumer drainAfter,
      UnaryOperator<Runnable> guarded) {
    this.services = services;
    this.parts = parts;
    this.states = parts.states();
    this.deadLetters = parts.deadLetters();
    this.invoker = parts.invoker();
    this.lifecycle = parts.lifecycle();
    this.permits = permits;
    this.attempt = attempt;
    this.deadLetterThreshold = parts.deadLetterThreshold();
    this.context = context;
    this.drain = drain;
    this.drainSoon = drainSoon;
    this.drainAfter = drainAfter;
    this.guarded = guarded;
  }

  /** The most items the next batch may take, of {@code consumeK}, after the failures so far. */
  int limit(int consumeK) {
    return oneByOne > 0 ? 1 : limitOverride > 0 ? limitOverride : consumeK;
  }

  /** A batch found the queue empty: no items are left to run one by one. */
  void idle() {
    oneByOne = 0;
  }

  /** A batch committed {@code processed} items. */
  void succeeded(int processed) {
    limitOverride = 0;
    consecutiveFailures = 0;
    oneByOne = Math.max(0, oneByOne - processed);
  }

  /** A step ended well after failures: the backoff starts again from the shortest. */
  void reset() {
    consecutiveFailures = 0;
  }

  /** Counts a failure that is retried; returns the backoff before the retry (nanos). */
  long countFailure() {
    consecutiveFailures++;
    return services.backoffNanos(consecutiveFailures);
  }

  /** The failures counted since the last success. */
  int count() {
    return consecutiveFailures;
  }

  /** A fatal error stopped this process: its termination fails with it. */
  void stopFatally(Throwable error) {
    try (LogContext.Scope mdc = invoker.logs().open(null)) {
      lifecycle.terminateIfFatal(error);
    }
  }

  /**
   * Acts on a failed batch: blames it ({@link Attempt#blame}), then retries, shrinks the next
   * batches, waits for a permit, or stops the process, as the failure says.
   */
  void onFailure(Throwable error) {
    if (Lifecycle.isFatal(error)) {
      stopFatally(error);
      return;
    }
    Throwable cause = attempt.blame(error);
    if (cause instanceof ItemFailure failure) {
      onItemFailure(failure);
    } else if (cause instanceof ItemRefused refused) {
      // Not a failure: no count, no backoff. The items before it commit first; at the head, the
      // next batch refuses it (Attempt#refusal).
      limitOverride = refused.index();
      drainSoon.run();
    } else if (cause instanceof TooLarge tooLarge) {
      // No failure is counted and no backoff taken: batches of one find the item that caused it.
      oneByOne = tooLarge.items();
      try (LogContext.Scope mdc = invoker.logs().open(null)) {
        log.warn(
            "a batch of {} items exceeded a limit of FoundationDB; running them one by one: {}",
            tooLarge.items(),
            context,
            tooLarge.getCause());
      }
      states.invalidate();
      drainSoon.run();
    } else if (cause instanceof ConcurrencyGate.Wait wait) {
      if (wait.index() > 0) {
        limitOverride = wait.index(); // commit the items before the one that waits
        drainSoon.run();
      } else {
        permits.awaitGate(drain);
      }
    } else if (cause instanceof ServerStoppedException e) {
      log.warn("stopping consumer: {}", e.getMessage());
      lifecycle.terminate(null);
      drainSoon.run(); // ends the loop: quiet
    } else if (cause instanceof UndecodableDataException e) {
      stopUndecodable(e);
    } else if (cause instanceof Fence.Deposed e) {
      log.info("{}; unloading the server", e.getMessage());
      lifecycle.terminate(e); // not a deactivation: the bucket's new holder runs the server
      drainSoon.run();
    } else if (cause instanceof Error e) {
      log.error("consumer batch failed with an error: {}", context, e);
      retryLater("consumer batch failed with an error", e);
    } else {
      retryLater("consumer transaction failed", cause);
    }
  }

  /**
   * The server's state (or lock record) cannot be decoded: no batch of it can succeed until it is
   * repaired, so its process stops, and only it; the data stays as it is for inspection and repair.
   */
  private void stopUndecodable(UndecodableDataException e) {
    try (LogContext.Scope mdc = invoker.logs().open(null)) {
      log.error(
          "the server's stored state cannot be decoded; its process stops and the state is kept"
              + " (dgen inspect shows its tree, dgen state-replace repairs it): {}",
          context,
          e);
    }
    invoker.meters().stateUndecodable();
    parts.undecodableState().accept(e);
    lifecycle.terminate(e);
    drainSoon.run(); // ends the loop
  }

  /** Counts a failure, logs it, and runs the loop again after the backoff. */
  void retryLater(String what, Throwable cause) {
    long delay = countFailure();
    try (LogContext.Scope mdc = invoker.logs().open(null)) {
      log.warn(
          "{}; retrying in {} ms: {} failures={}",
          what,
          TimeUnit.NANOSECONDS.toMillis(delay),
          context,
          consecutiveFailures,
          cause);
    }
    states.invalidate();
    drainAfter.accept(delay);
  }

  /**
   * A callback failed: count the failure against that item in its own transaction (the batch's was
   * aborted), dead-letter it at the threshold, and retry the batch up to the failing item so that
   * its neighbours commit without it. Recording waits for a commit, so it runs on a blocking
   * thread.
   */
  private void onItemFailure(ItemFailure failure) {
    limitOverride = Math.max(1, failure.index());
    invoker.meters().failed();
    Throwable cause = failure.reason();
    try {
      services.blocking().execute(guarded.apply(() -> recordFailure(failure, cause)));
    } catch (RejectedExecutionException e) {
      retryLater("no thread to record a callback's failure", cause);
    }
  }

  private void recordFailure(ItemFailure failure, Throwable cause) {
    int attempts;
    try {
      attempts = deadLetters.recordFailure(failure.item(), cause, deadLetterThreshold);
    } catch (RuntimeException e) {
      cause.addSuppressed(e);
      retryLater("callback failed and its failure could not be recorded", cause);
      return;
    }
    if (attempts >= deadLetterThreshold) {
      limitOverride = 0;
      consecutiveFailures = 0;
      oneByOne = Math.max(0, oneByOne - 1);
      drainSoon.run();
      return;
    }
    retryLater("callback failed, transaction aborted (attempt " + attempts + ")", cause);
  }
}
