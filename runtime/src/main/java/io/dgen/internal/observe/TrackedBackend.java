package io.dgen.internal.observe;

import io.dgen.backend.Backend;
import io.dgen.backend.ForwardingBackend;
import io.dgen.backend.Transaction;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

/**
 * The user's backend as the runtime uses it, counting the transactions under way, so that closing
 * the runtime can wait for them: most of them hold no thread, so waiting for the worker threads no
 * longer waits for them, and a backend closed under a transaction in flight fails it (or, on
 * FoundationDB, frees what its reply still needs).
 *
 * <p>Threading: thread-safe.
 */
public final class TrackedBackend extends ForwardingBackend {

  private final AtomicInteger inFlight = new AtomicInteger();
  private final Object quiet = new Object();

  private final Metrics metrics;

  public TrackedBackend(Backend delegate, Metrics metrics) {
    super(delegate);
    this.metrics = metrics;
  }

  /** Counts the attempt if it is a retry: by the code of the error that ended the one before. */
  private void attempt(Transaction tx) {
    int code = tx.retriedAfter();
    if (code != 0) {
      metrics.transactionRetried(code);
    }
  }

  @Override
  public <T> T run(Function<? super Transaction, ? extends T> body) {
    inFlight.incrementAndGet();
    try {
      return delegate()
          .run(
              tx -> {
                attempt(tx);
                return body.apply(tx);
              });
    } finally {
      done();
    }
  }

  @Override
  public <T> CompletableFuture<T> runAsync(
      Function<? super Transaction, ? extends CompletableFuture<? extends T>> body) {
    inFlight.incrementAndGet();
    CompletableFuture<T> f;
    try {
      f =
          delegate()
              .runAsync(
                  tx -> {
                    attempt(tx);
                    return body.apply(tx);
                  });
    } catch (RuntimeException | Error e) {
      done();
      throw e;
    }
    f.whenComplete((v, e) -> done());
    return f;
  }

  private void done() {
    if (inFlight.decrementAndGet() == 0) {
      synchronized (quiet) {
        quiet.notifyAll();
      }
    }
  }

  /**
   * Waits until no transaction of the runtime is under way, at most {@code timeout}.
   *
   * @return whether none is
   */
  public boolean awaitQuiet(long timeout, TimeUnit unit) throws InterruptedException {
    long deadline = System.nanoTime() + unit.toNanos(timeout);
    synchronized (quiet) {
      while (inFlight.get() > 0) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          return false;
        }
        TimeUnit.NANOSECONDS.timedWait(quiet, left);
      }
    }
    return true;
  }

  /** The runtime never closes the user's backend. */
  @Override
  public void close() {
    throw new UnsupportedOperationException("the runtime does not close the user's backend");
  }

  @Override
  public String toString() {
    return delegate().toString();
  }
}
