package io.dgen.backend;

import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;

/** Waits for futures the way the blocking twins of async methods do: one place, one rule. */
public final class Futures {

  private Futures() {}

  /**
   * Waits for {@code future} and returns its value, rethrowing the failure itself rather than a
   * wrapper: a {@link RuntimeException} or {@link Error} is thrown as is; a checked exception is
   * wrapped in a {@link CompletionException}. If the waiting thread is interrupted, its interrupt
   * flag is restored and a {@link CancellationException} is thrown.
   *
   * @param future the future to wait for
   * @param <T> the value type
   * @return the future's value
   */
  public static <T> T join(Future<T> future) {
    try {
      return future.get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      CancellationException ce = new CancellationException("interrupted while waiting");
      ce.initCause(e);
      throw ce;
    } catch (ExecutionException e) {
      throw propagate(e.getCause() == null ? e : e.getCause());
    }
  }

  /**
   * Waits for {@code future}, which completes on its own within a bound (an operation's timeout
   * fails it), and returns its value, rethrowing its failure as {@link #join} does. An interrupt
   * does not end the wait, since the operation's outcome would then be unknown: the wait goes on,
   * and the interrupt flag is set again when this method returns or throws.
   *
   * @param future the future to wait for, bounded by a timeout of its own
   * @param <T> the value type
   * @return the future's value
   */
  public static <T> T joinBounded(Future<T> future) {
    boolean interrupted = false;
    try {
      while (true) {
        try {
          return future.get();
        } catch (InterruptedException e) {
          interrupted = true;
        } catch (ExecutionException e) {
          throw propagate(e.getCause() == null ? e : e.getCause());
        }
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /**
   * Strips {@link CompletionException} and {@link ExecutionException} wrappers from {@code t}.
   *
   * @param t a failure, possibly wrapped
   * @return the innermost cause that is not such a wrapper
   */
  public static Throwable unwrap(Throwable t) {
    Throwable c = t;
    while ((c instanceof CompletionException || c instanceof ExecutionException)
        && c.getCause() != null) {
      c = c.getCause();
    }
    return c;
  }

  private static RuntimeException propagate(Throwable t) {
    Throwable c = unwrap(t);
    if (c instanceof RuntimeException re) {
      return re;
    }
    if (c instanceof Error err) {
      throw err;
    }
    return new CompletionException(c);
  }
}
