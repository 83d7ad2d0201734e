package io.dgen.internal.base;

import io.dgen.OperationTimeoutException;
import io.dgen.backend.Backend;
import io.dgen.backend.Futures;
import io.dgen.backend.Transaction;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * Owns the operation timeout: the bound on how long a user-facing operation ({@code cast}, the push
 * of a {@code call}, {@code kill}, the admin's calls) may wait for a cluster that does not answer,
 * after which it fails with {@link OperationTimeoutException} naming the operation, its server and
 * the timeout.
 *
 * <p>Giving up abandons the operation: the future it waits for is failed with the timeout, which
 * tells the commit runner to start no further attempt. An attempt already sent to the cluster may
 * still commit; the exception says so.
 *
 * <p>An interrupt of the waiting thread does not abandon the operation (its outcome would then be
 * unknown): the wait goes on, bounded by the same deadline, and the interrupt flag is set again
 * when the method returns or throws.
 *
 * <p>Never decides what an operation writes. Threading: thread-safe, immutable.
 */
public final class OperationTimeouts {

  /** The default operation timeout: 30 seconds. */
  public static final Duration DEFAULT = Duration.ofSeconds(30);

  /** The most threads that blocking operations (kill, the admin's calls) hold in this JVM. */
  public static final int MAX_BLOCKING_THREADS = 64;

  /** The most blocking operations that wait for one of those threads. */
  public static final int MAX_QUEUED_OPERATIONS = 256;

  /**
   * Threads for operations that block (the admin's reads, directory operations), made on demand and
   * bounded: an operation that timed out may leave its thread blocked on a cluster that does not
   * answer (until the backend gives up), so a dead cluster would otherwise grow them forever.
   */
  private static final ExecutorService BLOCKING =
      BoundedPool.create(
          "dgen-operation-",
          MAX_BLOCKING_THREADS,
          MAX_QUEUED_OPERATIONS,
          "blocking operations of this JVM");

  private final Duration timeout;

  /**
   * An operation timeout of {@code timeout}.
   *
   * @throws IllegalArgumentException if {@code timeout} is not positive
   */
  public OperationTimeouts(Duration timeout) {
    this.timeout = check(timeout);
  }

  /**
   * Checks an operation timeout given by a user.
   *
   * @return {@code timeout}
   * @throws IllegalArgumentException if it is zero or negative
   * @throws NullPointerException if it is null
   */
  public static Duration check(Duration timeout) {
    Objects.requireNonNull(timeout, "operationTimeout must not be null");
    if (timeout.isZero() || timeout.isNegative()) {
      throw new IllegalArgumentException("operationTimeout must be positive, was " + timeout);
    }
    return timeout;
  }

  /** The timeout. */
  public Duration timeout() {
    return timeout;
  }

  /** The exception of {@code operation} on {@code context} that did not complete in time. */
  OperationTimeoutException timedOut(String operation, String context) {
    return new OperationTimeoutException(
        operation
            + " did not complete within timeout="
            + timeout
            + ": "
            + context
            + "; the cluster did not answer in time and the outcome is unknown (an attempt already"
            + " sent may still commit)",
        null);
  }

  /**
   * Waits for {@code op} at most the timeout and returns its value or throws its failure; past the
   * timeout, fails {@code op} with {@link OperationTimeoutException} (abandoning it) and throws
   * that, unless {@code op} completed meanwhile.
   */
  public <T> T await(CompletableFuture<T> op, String operation, String context) {
    long deadline = System.nanoTime() + timeout.toNanos();
    boolean interrupted = false;
    try {
      while (true) {
        try {
          op.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
          break;
        } catch (InterruptedException e) {
          interrupted = true; // the operation goes on; the flag is restored below
        } catch (ExecutionException e) {
          break;
        } catch (TimeoutException e) {
          op.completeExceptionally(timedOut(operation, context));
          break;
        }
      }
      return Futures.join(op); // done: returns or throws at once
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /**
   * Fails {@code op} with {@link OperationTimeoutException} once the timeout passes, unless it
   * completed first; returns {@code op}.
   */
  public <T> CompletableFuture<T> bound(
      CompletableFuture<T> op,
      ScheduledExecutorService scheduler,
      String operation,
      String context) {
    return bound(op, scheduler, timeout.toNanos(), () -> timedOut(operation, context));
  }

  /**
   * Fails {@code op} with {@code failure} once {@code nanos} have passed, unless it completed
   * first; returns {@code op}. A bound tighter than the operation timeout (a call's own timeout).
   */
  public static <T> CompletableFuture<T> bound(
      CompletableFuture<T> op,
      ScheduledExecutorService scheduler,
      long nanos,
      Supplier<? extends RuntimeException> failure) {
    if (op.isDone()) {
      return op;
    }
    try {
      var timer =
          scheduler.schedule(
              () -> op.completeExceptionally(failure.get()),
              Math.max(0, nanos),
              TimeUnit.NANOSECONDS);
      op.whenComplete((v, e) -> timer.cancel(false));
    } catch (RejectedExecutionException closed) {
      // the runtime is closing: the operation fails on its own
    }
    return op;
  }

  /**
   * Runs {@code body} in a transaction of {@code backend} within the timeout. The body may block
   * (synchronous reads), so the run happens on a thread of its own; once the timeout passed, no
   * further attempt starts (one under way may still commit). <b>The body may execute more than
   * once.</b>
   */
  public <T> T run(
      Backend backend,
      Function<? super Transaction, ? extends T> body,
      String operation,
      String context) {
    AtomicBoolean abandoned = new AtomicBoolean();
    CompletableFuture<T> op =
        blocking(() -> backend.run(unlessAbandoned(abandoned, body, operation, context)));
    op.whenComplete((v, e) -> abandoned.set(true));
    return await(op, operation, context);
  }

  /**
   * Runs {@code body}, whose reads are asynchronous, in a transaction of {@code backend}, bounded
   * by the timeout: no thread of its own. Once the timeout passed, the future fails with {@link
   * OperationTimeoutException} and no further attempt starts (one under way may still commit).
   * <b>The body may execute more than once.</b>
   */
  public <T> CompletableFuture<T> runAsync(
      Backend backend,
      Function<? super Transaction, ? extends CompletableFuture<? extends T>> body,
      ScheduledExecutorService scheduler,
      String operation,
      String context) {
    AtomicBoolean abandoned = new AtomicBoolean();
    CompletableFuture<T> op =
        backend.runAsync(unlessAbandoned(abandoned, body, operation, context));
    op.whenComplete((v, e) -> abandoned.set(true));
    return bound(op, scheduler, operation, context);
  }

  /** {@code body}, which no attempt starts once the operation was abandoned (it timed out). */
  private <R> Function<Transaction, R> unlessAbandoned(
      AtomicBoolean abandoned,
      Function<? super Transaction, ? extends R> body,
      String operation,
      String context) {
    return tx -> {
      if (abandoned.get()) {
        throw new CancellationException(
            operation + " abandoned after timeout=" + timeout + ": " + context);
      }
      return body.apply(tx);
    };
  }

  /** {@link #run} for a body that returns nothing. */
  public void execute(
      Backend backend, Consumer<? super Transaction> body, String operation, String context) {
    run(
        backend,
        tx -> {
          body.accept(tx);
          return null;
        },
        operation,
        context);
  }

  /**
   * Runs a blocking call (a directory operation) on a thread of its own and waits for it within the
   * timeout.
   */
  public <T> T call(Supplier<T> blocking, String operation, String context) {
    return await(blocking(blocking), operation, context);
  }

  /**
   * Runs a blocking call on a thread of the bounded pool (made on demand, dropped when idle). With
   * every thread blocked and the queue full, the future fails at once with {@link
   * OperationTimeoutException}, nothing started.
   */
  static <T> CompletableFuture<T> blocking(Supplier<T> blocking) {
    try {
      return CompletableFuture.supplyAsync(blocking, BLOCKING);
    } catch (RejectedExecutionException e) {
      return CompletableFuture.failedFuture(new OperationTimeoutException(e.getMessage(), e));
    }
  }
}
