package io.dgen.internal.limits;

import io.dgen.backend.Backend;
import io.dgen.backend.Transaction;
import io.dgen.internal.observe.Metrics;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

/** How the limiters run their transactions: counted in their meters. */
final class LimitRuns {

  private LimitRuns() {}

  /**
   * Runs one limiter transaction on {@code backend} and counts its attempts in {@code meters} once
   * it commits (every attempt after the first was a conflict or a retry); a body that cannot even
   * start yields a failed future rather than a throw.
   */
  static <T> CompletableFuture<T> counted(
      Backend backend,
      Metrics.Limit meters,
      Function<? super Transaction, ? extends CompletableFuture<? extends T>> body) {
    AtomicInteger attempts = new AtomicInteger();
    CompletableFuture<T> done;
    try {
      done =
          backend.runAsync(
              tx -> {
                attempts.incrementAndGet();
                return body.apply(tx);
              });
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
    return done.whenComplete(
        (r, err) -> {
          if (err == null) {
            meters.transaction(attempts.get());
          }
        });
  }
}
