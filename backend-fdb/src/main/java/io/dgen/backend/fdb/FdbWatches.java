package io.dgen.backend.fdb;

import io.dgen.backend.BackendException;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The watches a backend handed out that have not completed yet. A watch outlives its transaction,
 * and the SPI promises that closing the backend fails every pending watch with {@code
 * transaction_cancelled (1025)}; this registry keeps that promise without relying on what the
 * native client does to watches of a destroyed database.
 */
final class FdbWatches {

  private final Set<Pending> pending = ConcurrentHashMap.newKeySet();
  private volatile boolean closed;

  /** Adapts a watch future of fdb-java and tracks it until it completes. */
  CompletableFuture<Void> track(CompletableFuture<Void> source) {
    CompletableFuture<Void> out = FdbErrors.adapt(source);
    Pending watch = new Pending(out, source);
    pending.add(watch);
    out.whenComplete((value, failure) -> pending.remove(watch));
    if (closed) {
      watch.cancel();
    }
    return out;
  }

  /** The number of watches not yet fired, failed or cancelled. */
  int size() {
    return pending.size();
  }

  /** Fails every pending watch, and every watch tracked from now on, with {@code 1025}. */
  void closeAll() {
    closed = true;
    for (Pending watch : pending) {
      watch.cancel();
    }
  }

  private static final class Pending {
    private final CompletableFuture<Void> out;
    private final CompletableFuture<Void> source;

    Pending(CompletableFuture<Void> out, CompletableFuture<Void> source) {
      this.out = out;
      this.source = source;
    }

    void cancel() {
      out.completeExceptionally(
          new BackendException(BackendException.TRANSACTION_CANCELLED, "backend closed"));
      // Frees the native watch and its slot in the client's max_watches budget.
      source.cancel(true);
    }
  }
}
