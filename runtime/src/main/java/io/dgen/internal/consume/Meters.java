package io.dgen.internal.consume;

import io.dgen.internal.observe.Metrics;
import java.util.concurrent.CompletableFuture;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * One process's view of its {@link Metrics.Server}: the few steps that feed it from the runtime's
 * own types (a batch, a call's route), so that the components call it in one line.
 */
public final class Meters {

  private final Metrics.Server server;
  private final LongSupplier nanoTime;

  public Meters(Metrics.Server server, LongSupplier nanoTime) {
    this.server = server;
    this.nanoTime = nanoTime;
  }

  /** The meters of the process's tenant and behaviour. */
  public Metrics.Server server() {
    return server;
  }

  /**
   * A consumer batch ended (null: it failed): records the messages it committed, and the lock it
   * took or busted.
   */
  static void batch(Metrics.Server meters, @Nullable Batch<?, ?> batch, long nanos) {
    if (batch == null) {
      return;
    }
    if (batch.busted()) {
      meters.lockBusted();
    }
    if (batch.lock() != null) {
      meters.lockAcquired();
    }
    if (batch.processed() > 0) {
      meters.batch(batch.processed(), nanos);
    }
  }

  /**
   * Times a call from {@code start} until {@code reply} completes; {@code sent} tells its route (a
   * call that failed before its route was known counts as queued).
   */
  public <R> CompletableFuture<R> call(
      long start,
      CompletableFuture<? extends InlineRunner.Outcome<?>> sent,
      CompletableFuture<R> reply) {
    reply.whenComplete(
        (r, err) -> {
          boolean inline =
              sent.isDone() && !sent.isCompletedExceptionally() && !sent.join().queued();
          server.call(
              inline ? Metrics.Server.Route.INLINE : Metrics.Server.Route.QUEUED,
              nanoTime.getAsLong() - start,
              err != null);
        });
    return reply;
  }

  /** Runs and times a priority call. */
  public <R> R priority(Supplier<R> call) {
    long start = nanoTime.getAsLong();
    boolean failed = true;
    try {
      R r = call.get();
      failed = false;
      return r;
    } finally {
      server.call(Metrics.Server.Route.PRIORITY, nanoTime.getAsLong() - start, failed);
    }
  }
}
