package io.dgen.internal;

import io.dgen.CallTimeoutException;
import io.dgen.DGenException;
import io.dgen.From;
import io.dgen.ServerStoppedException;
import io.dgen.backend.BackendException;
import io.dgen.backend.Futures;
import io.dgen.backend.KeyValue;
import io.dgen.backend.Transaction;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jspecify.annotations.Nullable;

/**
 * The queued call, caller's side: pushing a call together with its reply slot (exactly once), and
 * waiting for the reply without a thread — the slot's watch against the caller's deadline,
 * whichever comes first takes the slot.
 *
 * <p>Never runs callbacks and never decides whether a call is queued or inline (the handle does);
 * never blocks a pool thread while it waits.
 */
final class CallProtocol {

  private final RuntimeCore core;
  private final CommitRunner commits;
  private final ServerQueue<?> queue;
  private final ReplySlots slots;
  private final String context;

  CallProtocol(
      RuntimeCore core,
      CommitRunner commits,
      ServerQueue<?> queue,
      ReplySlots slots,
      String context) {
    this.core = core;
    this.commits = commits;
    this.queue = queue;
    this.slots = slots;
    this.context = context;
  }

  /** Writes an empty reply slot, pushes the call, and returns the watch on the slot. */
  CompletableFuture<Void> push(Transaction tx, byte[] envelope, From from) {
    CompletableFuture<Void> watch = slots.open(tx, from);
    queue.push(tx, ServerKeys.LANE_NORMAL, envelope);
    return watch;
  }

  /** Pushes a call exactly once; after a replayed commit, waits on the slot as it is now. */
  CompletableFuture<Void> pushOnce(byte[] envelope, From from) {
    return Objects.requireNonNull(
        commits.commit(tx -> push(tx, envelope, from), (tx, prior) -> slots.reopen(tx, from)));
  }

  /** Completes with the reply that lands in {@code from}'s slot, or fails at the timeout. */
  <R> CompletableFuture<R> await(
      From from, CompletableFuture<Void> watch, @Nullable Class<R> replyType, Duration timeout) {
    CompletableFuture<R> result = new CompletableFuture<>();
    awaitInto(from, watch, replyType, core.nanoTime() + timeout.toNanos(), timeout, result);
    return result;
  }

  /**
   * Completes {@code result} from the reply slot when the watch fires, or at the deadline. Both
   * paths read and clear the slot in one transaction; whichever claims the call first does it, so a
   * reply that lands just before the deadline is still delivered.
   */
  private <R> void awaitInto(
      From from,
      CompletableFuture<Void> watch,
      @Nullable Class<R> replyType,
      long deadline,
      Duration timeout,
      CompletableFuture<R> result) {
    AtomicBoolean claimed = new AtomicBoolean();
    ScheduledFuture<?> timer =
        core.scheduler()
            .schedule(
                () ->
                    core.workers()
                        .execute(
                            () -> {
                              if (claimed.compareAndSet(false, true)) {
                                watch.cancel(false);
                                finish(from, replyType, deadline, timeout, true, result);
                              }
                            }),
                Math.max(0, deadline - core.nanoTime()),
                TimeUnit.NANOSECONDS);
    watch.whenComplete(
        (v, err) -> {
          if (err instanceof CancellationException) {
            return;
          }
          core.workers()
              .execute(
                  () -> {
                    if (!claimed.compareAndSet(false, true)) {
                      return;
                    }
                    timer.cancel(false);
                    if (err != null) {
                      slots.clearQuietly(from);
                      result.completeExceptionally(watchFailure(err));
                    } else {
                      finish(from, replyType, deadline, timeout, false, result);
                    }
                  });
        });
  }

  private RuntimeException watchFailure(Throwable err) {
    Throwable c = Futures.unwrap(err);
    if (c instanceof BackendException be && be.code() == BackendException.TOO_MANY_WATCHES) {
      return new DGenException(
          "cannot wait for the reply: the backend's limit of outstanding watches is reached (each"
              + " call in flight and each idle consumer holds one); raise the backend's max-watches"
              + " knob or send fewer calls at once. The call stays queued: "
              + context,
          c);
    }
    return c instanceof RuntimeException re
        ? re
        : new DGenException("waiting for a reply failed: " + context, c);
  }

  private <R> void finish(
      From from,
      @Nullable Class<R> replyType,
      long deadline,
      Duration timeout,
      boolean timedOut,
      CompletableFuture<R> result) {
    try {
      ReplySlots.Taken taken = slots.take(from, timedOut);
      List<KeyValue> rows = taken.rows();
      CompletableFuture<Void> again = taken.again();
      if (again != null) {
        awaitInto(from, again, replyType, deadline, timeout, result);
      } else if (rows.isEmpty()) {
        result.completeExceptionally(
            new ServerStoppedException(
                "the reply slot was removed before a reply arrived (the server was killed): "
                    + context));
      } else if (rows.get(0).value().length == 0) {
        result.completeExceptionally(
            new CallTimeoutException(
                "no reply within "
                    + timeout.toMillis()
                    + " ms; the call stays queued and will still execute: "
                    + context
                    + " from="
                    + from));
      } else {
        result.complete(slots.decode(rows, replyType));
      }
    } catch (RuntimeException e) {
      result.completeExceptionally(e);
    }
  }
}
