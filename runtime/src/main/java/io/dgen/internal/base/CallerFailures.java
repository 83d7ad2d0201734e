package io.dgen.internal.base;

import io.dgen.BackendFailureException;
import io.dgen.DGenException;
import io.dgen.backend.BackendException;
import io.dgen.backend.Futures;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;

/**
 * What the caller of a {@code ServerRef} method gets when it fails: the one place where the
 * backend's errors, and anything else the runtime's paths let through, become {@link
 * DGenException}s. A {@link DGenException} and an argument error ({@link IllegalArgumentException},
 * {@link NullPointerException}) reach the caller as they are; a backend's {@link BackendException}
 * as a {@link BackendFailureException} carrying it (its code and retryability); an {@link Error} as
 * it is; anything else as a {@link DGenException} whose cause it is.
 *
 * <p>Stateless; never retries and never decides what an operation did (the exception's message says
 * so where it is known).
 */
public final class CallerFailures {

  private CallerFailures() {}

  /**
   * {@code failure} as the caller of {@code operation} gets it.
   *
   * @param operation what failed: {@code cast}, {@code call}, ...
   * @param context the server, as {@code key=value} pairs
   */
  public static Throwable of(Throwable failure, String operation, String context) {
    Throwable t = Futures.unwrap(failure);
    if (t instanceof DGenException
        || t instanceof IllegalArgumentException
        || t instanceof NullPointerException
        || t instanceof Error) {
      return t;
    }
    if (t instanceof BackendException be) {
      return new BackendFailureException(
          operation + " failed in the backend: " + be.getMessage() + " (" + context + ")", be);
    }
    if (t instanceof CancellationException) {
      return new DGenException(
          operation
              + " was interrupted while it waited; its outcome is unknown (the interrupt flag is"
              + " set): "
              + context,
          t);
    }
    return new DGenException(operation + " failed: " + t + " (" + context + ")", t);
  }

  /** {@link #of} as a runtime exception to throw: an {@link Error} is thrown from here. */
  public static RuntimeException toThrow(Throwable failure, String operation, String context) {
    Throwable t = of(failure, operation, context);
    if (t instanceof Error e) {
      throw e;
    }
    return (RuntimeException) t;
  }

  /** {@code future}, failing with what {@link #of} makes of its failure. */
  public static <T> CompletableFuture<T> mapped(
      CompletableFuture<T> future, String operation, String context) {
    if (future.isDone() && !future.isCompletedExceptionally()) {
      return future;
    }
    return future.exceptionallyCompose(
        e -> CompletableFuture.failedFuture(of(e, operation, context)));
  }
}
