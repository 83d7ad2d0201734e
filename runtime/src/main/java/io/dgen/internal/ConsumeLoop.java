package io.dgen.internal;

import io.dgen.Action;
import io.dgen.ServerStoppedException;
import io.dgen.backend.BackendException;
import io.dgen.backend.Futures;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The consume loop of one process: scheduling drains on the shared workers (at most one at a time),
 * running batches back to back within a time slice, parking on a watch when the queue is empty or
 * locked (no thread held), backing off after failures and repeated cache misses, retrying a failed
 * batch up to its failing item, and handing a taken lock to {@code handleLocked}'s threads.
 *
 * <p>Never touches keys itself: batches, dead letters and the lock coordinator do, through the
 * commit runner. Never runs two batches of its process at once.
 *
 * <p>Threading: {@link #scheduled} guards the loop, so that it never runs concurrently with itself;
 * the failure count and the batch limit are touched only by the loop. The idle watch is volatile:
 * stopping the process cancels it from any thread.
 *
 * @param <S> the state type
 * @param <M> the message type
 */
final class ConsumeLoop<S, M> {

  private static final Logger log = LoggerFactory.getLogger(ConsumeLoop.class);

  private static final int CACHE_MISS_BACKOFF_CAP_MS = 50;
  private static final long BATCH_SLICE_NANOS = TimeUnit.MILLISECONDS.toNanos(20);

  private final RuntimeCore core;
  private final CommitRunner commits;
  private final ConsumerBatch<S, M> batches;
  private final StateStore<S> states;
  private final LockCoordinator<S, M> locks;
  private final DeadLetters<M> deadLetters;
  private final CallbackInvoker<S, M> invoker;
  private final Lifecycle lifecycle;
  private final int consumeK;
  private final int deadLetterThreshold;
  private final String context;

  private final AtomicBoolean scheduled = new AtomicBoolean();
  private volatile @Nullable CompletableFuture<Void> idleWatch;
  private int consecutiveFailures;
  private int limitOverride;

  ConsumeLoop(
      RuntimeCore core,
      CommitRunner commits,
      ConsumerBatch<S, M> batches,
      StateStore<S> states,
      LockCoordinator<S, M> locks,
      DeadLetters<M> deadLetters,
      CallbackInvoker<S, M> invoker,
      Lifecycle lifecycle,
      int consumeK,
      int deadLetterThreshold,
      String context) {
    this.core = core;
    this.commits = commits;
    this.batches = batches;
    this.states = states;
    this.locks = locks;
    this.deadLetters = deadLetters;
    this.invoker = invoker;
    this.lifecycle = lifecycle;
    this.consumeK = consumeK;
    this.deadLetterThreshold = deadLetterThreshold;
    this.context = context;
  }

  /** Cancels the watch an idle loop sleeps on (the process stopped). */
  void cancelIdleWatch() {
    CompletableFuture<Void> w = idleWatch;
    if (w != null) {
      w.cancel(false);
    }
  }

  /** Starts consuming: schedules a drain unless one is scheduled or running. */
  void schedule() {
    if (lifecycle.isAlive() && scheduled.compareAndSet(false, true)) {
      try {
        core.workers().execute(this::drain);
      } catch (RejectedExecutionException e) {
        scheduled.set(false); // the runtime is closing
      }
    }
  }

  private void scheduleAfter(long nanos) {
    try {
      core.scheduler().schedule(this::schedule, nanos, TimeUnit.NANOSECONDS);
    } catch (RejectedExecutionException e) {
      // the runtime is closing
    }
  }

  private void drain() {
    long sliceEnd = core.nanoTime() + BATCH_SLICE_NANOS;
    try {
      while (lifecycle.isAlive()) {
        int limit = limitOverride > 0 ? limitOverride : consumeK;
        ConsumerBatch.Batch<S, M> batch;
        try {
          batch = Objects.requireNonNull(commits.commit(tx -> batches.run(tx, limit)));
        } catch (ConsumerBatch.ItemFailure failure) {
          onItemFailure(failure);
          return;
        }
        if (batch.busted()) {
          continue;
        }
        if (batch.watch() != null) {
          park(batch.watch(), batch.lockExpiresAt());
          return;
        }
        limitOverride = 0;
        consecutiveFailures = 0;
        for (List<Action<S>> actions : batch.actions()) {
          invoker.runActions(actions, Objects.requireNonNull(batch.state()));
        }
        if (batch.stopReason() != null) {
          lifecycle.stopIfAsked(batch.stopReason());
          return;
        }
        if (batch.lock() != null) {
          LockCoordinator.Held<M> lock = batch.lock();
          S locked = Objects.requireNonNull(batch.state());
          // keeps `scheduled` set until handleLocked's run has ended
          core.lockedWork().execute(() -> afterLocked(locks.runLocked(lock, locked)));
          return;
        }
        int misses = states.missStreak();
        if (misses >= 3) {
          scheduled.set(false);
          scheduleAfter(
              TimeUnit.MILLISECONDS.toNanos(
                  Math.min(CACHE_MISS_BACKOFF_CAP_MS, 1L << Math.min(misses - 3, 6))));
          return;
        }
        if (core.nanoTime() - sliceEnd > 0) {
          scheduled.set(false); // let other servers' batches run, then continue
          schedule();
          return;
        }
      }
      scheduled.set(false);
    } catch (ServerStoppedException e) {
      log.warn("stopping consumer: {}", e.getMessage());
      scheduled.set(false);
      lifecycle.terminate(null);
    } catch (RuntimeException e) {
      retryLater("consumer transaction failed", e);
    } catch (Error e) {
      scheduled.set(false);
      log.error("consumer died: {}", context, e);
      throw e;
    }
  }

  private void afterLocked(LockCoordinator.Run run) {
    switch (run.ending()) {
      case RELEASED, FENCED -> {
        // A fenced holder's result was refused and reported; one slow job must not take this
        // consumer out of service.
        consecutiveFailures = 0;
        scheduled.set(false);
        schedule();
      }
      case FAILED ->
          retryLater(
              "handleLocked failed; the lock is released and its message re-queued",
              Objects.requireNonNull(run.cause()));
      case STOPPED -> {
        // the process stopped itself; `scheduled` stays set, as nothing is to run any more
      }
    }
  }

  private void retryLater(String what, Throwable cause) {
    consecutiveFailures++;
    long delay = core.backoffNanos(consecutiveFailures);
    log.warn(
        "{}; retrying in {} ms: {} failures={}",
        what,
        TimeUnit.NANOSECONDS.toMillis(delay),
        context,
        consecutiveFailures,
        cause);
    states.invalidate();
    scheduled.set(false);
    scheduleAfter(delay);
  }

  /** Sleeps on a watch (and, for a lock with a timeout, until it expires) without a thread. */
  private void park(CompletableFuture<Void> watch, long lockExpiresAt) {
    idleWatch = watch;
    scheduled.set(false);
    watch.whenComplete((v, err) -> onIdleWatch(err));
    if (lockExpiresAt >= 0) {
      long delayMs = Math.max(0, lockExpiresAt - core.wallMillis()) + 1;
      scheduleAfter(TimeUnit.MILLISECONDS.toNanos(delayMs));
    }
    if (!lifecycle.isAlive()) {
      watch.cancel(false);
    }
  }

  private void onIdleWatch(@Nullable Throwable err) {
    if (!lifecycle.isAlive()) {
      return;
    }
    if (err == null) {
      schedule();
      return;
    }
    Throwable c = Futures.unwrap(err);
    if (c instanceof CancellationException) {
      return;
    }
    if (c instanceof BackendException be && be.code() == BackendException.TOO_MANY_WATCHES) {
      log.warn(
          "idle consumer cannot watch its queue (too many watches); polling every 100 ms: {}",
          context);
    } else {
      log.warn("idle watch failed; polling in 100 ms: {}", context, c);
    }
    scheduleAfter(TimeUnit.MILLISECONDS.toNanos(100));
  }

  /**
   * A callback failed: count the failure against that item in its own transaction (the batch's was
   * aborted), dead-letter it at the threshold, and retry the batch up to the failing item so that
   * its neighbours commit without it.
   */
  private void onItemFailure(ConsumerBatch.ItemFailure failure) {
    limitOverride = Math.max(1, failure.index());
    Throwable cause = failure.reason();
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
      deadLetters.afterDeadLetter(failure.item(), attempts);
      scheduled.set(false);
      schedule();
      return;
    }
    retryLater("callback failed, transaction aborted (attempt " + attempts + ")", cause);
  }
}
