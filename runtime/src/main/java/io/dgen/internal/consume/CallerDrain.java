package io.dgen.internal.consume;

import io.dgen.ServerStoppedException;
import io.dgen.backend.Futures;
import io.dgen.internal.lock.LockRuns;
import io.dgen.internal.observe.LogContext;
import java.util.Objects;
import java.util.concurrent.Executor;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs one process's queue to empty in the calling thread: the test kit's {@code drain}. It runs
 * the same consumer batches as the {@link ConsumeLoop} (same transactions, retries, dead letters,
 * lock mode), but synchronously, with no backoff, no timer and no other thread: the process must
 * have been started without a background consumer ({@code DGen.Builder.backgroundConsumers(false)})
 * so that nothing else consumes its queue meanwhile.
 *
 * <p>Stops when the queue is empty, the server is locked by a lock that has not expired (advance
 * the clock past {@code lockTimeout} and drain again), or the process stopped.
 *
 * @param <S> the state type
 * @param <M> the message type
 */
public final class CallerDrain<S, M> {

  private static final Logger log = LoggerFactory.getLogger(CallerDrain.class);

  /** Runs every step in the thread that completes its input: the caller's, on a memory backend. */
  private static final Executor DIRECT = Runnable::run;

  private final ConsumerParts<S, M> p;
  private final LongSupplier nanoTime;

  CallerDrain(ConsumerParts<S, M> parts, LongSupplier nanoTime) {
    this.p = parts;
    this.nanoTime = nanoTime;
  }

  /**
   * Runs batches until the queue is empty, the server is locked, or the process stopped.
   *
   * @param maxFailures how many consecutive failures of one item (below its dead-letter threshold)
   *     to retry before giving up
   * @return the number of items processed (applied or dead-lettered)
   * @throws IllegalStateException with the callback's exception as its cause, after {@code
   *     maxFailures} consecutive failures
   */
  int run(int maxFailures) {
    try {
      return drain(maxFailures);
    } catch (Throwable t) {
      p.lifecycle().terminateIfFatal(t);
      throw t;
    }
  }

  private int drain(int maxFailures) {
    int processed = 0;
    int failures = 0;
    int limit = p.consumeK();
    int oneByOne = 0;
    Attempt attempt = new Attempt();
    while (p.lifecycle().isAlive()) {
      int l = oneByOne > 0 ? 1 : limit;
      long start = nanoTime.getAsLong();
      Batch<S, M> batch;
      try {
        batch =
            Objects.requireNonNull(
                p.commits()
                    .commitAsync(
                        tx -> p.batches().run(tx, l, DIRECT, attempt), (tx, prior) -> prior, DIRECT)
                    .join());
        Meters.batch(p.invoker().meters(), batch, nanoTime.getAsLong() - start);
      } catch (RuntimeException e) {
        Throwable cause = attempt.blame(Futures.unwrap(e));
        if (cause instanceof ServerStoppedException stopped) {
          log.warn("stopping consumer: {}", stopped.getMessage());
          p.lifecycle().terminate(null); // killed: as the consume loop does
          return processed;
        }
        if (cause instanceof ItemRefused refused) {
          // the items before it first; at the head, the next batch refuses it
          limit = refused.index() > 0 ? refused.index() : p.consumeK();
          continue;
        }
        if (cause instanceof TooLarge tooLarge) {
          oneByOne = tooLarge.items(); // batches of one find the item that caused it
          p.states().invalidate();
          continue;
        }
        if (!(cause instanceof ItemFailure failure)) {
          throw e;
        }
        p.states().invalidate();
        p.invoker().meters().failed();
        int attempts =
            p.deadLetters()
                .recordFailure(failure.item(), failure.reason(), p.deadLetterThreshold());
        if (attempts >= p.deadLetterThreshold()) {
          processed++;
          failures = 0;
          limit = p.consumeK();
          oneByOne = Math.max(0, oneByOne - 1);
          continue;
        }
        if (++failures >= maxFailures) {
          throw new IllegalStateException(
              "drain gave up: a message failed " + failures + " times in a row", failure.reason());
        }
        try (LogContext.Scope mdc = p.invoker().logs().open(null)) {
          log.warn(
              "callback failed, transaction aborted (attempt {}); draining again at once",
              attempts,
              failure.reason());
        }
        limit = Math.max(1, failure.index());
        continue;
      }
      if (batch.busted()) {
        continue;
      }
      if (batch.lockWait() || batch.idle()) {
        return processed;
      }
      processed += batch.processed();
      failures = 0;
      limit = p.consumeK();
      oneByOne = Math.max(0, oneByOne - batch.processed());
      if (!batch.deliver(p.invoker(), p.lifecycle())) {
        return processed; // the batch stopped the process
      }
      LockRuns.Held<M> lock = batch.lock();
      if (lock != null) {
        LockRuns.Run run = p.locks().runLocked(lock, batch.state());
        while (run.ending() == LockRuns.Ending.UNKNOWN) {
          if (++failures >= maxFailures) {
            throw new IllegalStateException(
                "drain gave up: the outcome of handleLocked's commit stayed unknown "
                    + failures
                    + " times in a row; the lock is still held",
                run.cause());
          }
          run = p.locks().resume(Objects.requireNonNull(run.pending()));
        }
        if (run.ending() == LockRuns.Ending.FAILED
            && !run.deadLettered()
            && ++failures >= maxFailures) {
          throw new IllegalStateException(
              "drain gave up: handleLocked failed " + failures + " times in a row", run.cause());
        }
        continue;
      }
      if (batch.drained()) {
        return processed;
      }
    }
    return processed;
  }
}
