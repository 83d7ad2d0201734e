package io.dgen.internal;

import io.dgen.CallTimeoutException;
import io.dgen.From;
import io.dgen.ServerStoppedException;
import io.dgen.UnknownCallException;
import io.dgen.backend.Futures;
import io.dgen.backend.KeyValue;
import io.dgen.backend.Transaction;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;

/**
 * The queued call, caller's side: pushing a call together with its reply slot (exactly once), and
 * waiting for the reply without a thread and without a watch of its own — the call listens on the
 * tenant's doorbell for its slot's wake id, which the consumer rings when it writes the reply, and
 * its deadline races that ring: whichever comes first takes the slot.
 *
 * <p>Never runs callbacks and never decides whether a call is queued or inline (the handle does);
 * never blocks a thread while it waits.
 */
final class CallProtocol {

  private final RuntimeCore core;
  private final CommitRunner commits;
  private final ServerQueue<?> queue;
  private final ReplySlots slots;
  private final TenantWatcher doorbell;
  private final String context;

  CallProtocol(
      RuntimeCore core,
      CommitRunner commits,
      ServerQueue<?> queue,
      ReplySlots slots,
      TenantWatcher doorbell,
      String context) {
    this.core = core;
    this.commits = commits;
    this.queue = queue;
    this.slots = slots;
    this.doorbell = doorbell;
    this.context = context;
  }

  /**
   * Refuses a reply of an inline or priority call ({@code how}) that a queued call could not store.
   *
   * @throws io.dgen.ReplyTooLargeException if it is over the limit
   */
  void checkReply(@Nullable Object reply, String how) {
    slots.checkSize(reply, how);
  }

  /** A call that may be queued: its reply, once it comes, completes {@link Waiting#result()}. */
  <R> Waiting<R> waiting(From from, @Nullable Class<R> replyType, Duration timeout) {
    return new Waiting<>(from, replyType, core.nanoTime() + timeout.toNanos(), timeout);
  }

  /**
   * Writes an empty reply slot and pushes the call; the call listens for its reply from now on
   * (before the push commits, so that no reply can ring unheard). The caller's transaction must
   * also publish ({@link ServerQueue#publishing}) or ring the server some other way (a read that a
   * kill conflicts with).
   */
  void push(Transaction tx, byte[] envelope, Waiting<?> call) {
    push(tx, ServerKeys.LANE_NORMAL, envelope, call);
  }

  private void push(Transaction tx, long lane, byte[] envelope, Waiting<?> call) {
    call.listen();
    slots.open(tx, call.from);
    queue.push(tx, lane, envelope);
  }

  /**
   * Pushes a call exactly once, without waiting for the commit on a thread; fails with {@link
   * io.dgen.OperationTimeoutException} if the push is not known to have committed within the
   * operation timeout.
   */
  CompletableFuture<@Nullable Void> pushOnce(byte[] envelope, Waiting<?> call) {
    return pushOnce(ServerKeys.LANE_NORMAL, envelope, call);
  }

  /**
   * Like {@link #pushOnce(byte[], Waiting)} into {@code lane}: a priority message sent to the
   * holder goes to the head.
   */
  CompletableFuture<@Nullable Void> pushOnce(long lane, byte[] envelope, Waiting<?> call) {
    return bounded(
        commits.commitAsync(
            tx -> {
              CompletableFuture<@Nullable Void> live = queue.publishing(tx);
              push(tx, lane, envelope, call);
              return live;
            },
            (tx, prior) -> prior,
            core.executor()));
  }

  /**
   * Sends a priority message to the runtime that runs the server, for a ref whose runtime does not
   * have its behaviour: queued at the head with a reply slot, run next by the holder and never
   * retried; the future completes with its reply (null for a cast or an info) or its failure.
   */
  <R> CompletableFuture<R> toHolder(byte[] envelope, From from, Duration timeout) {
    Waiting<R> waiting = waiting(from, null, timeout);
    return pushOnce(ServerKeys.LANE_HEAD, envelope, waiting)
        .handle(
            (pushed, err) -> {
              if (err != null) {
                waiting.abandon(Futures.unwrap(err));
                return waiting.result();
              }
              return waiting.await();
            })
        .thenCompose(f -> f);
  }

  /**
   * Bounds a call's transaction (its push, or an inline call) by the operation timeout: past it,
   * the future fails with {@link io.dgen.OperationTimeoutException} and the run is abandoned.
   */
  <T> CompletableFuture<T> bounded(CompletableFuture<T> transaction) {
    return commits.bounded(transaction, core.scheduler(), "call");
  }

  /**
   * One queued call waiting for its reply: a doorbell listener under its slot's wake id from the
   * push until the reply is taken or the deadline passes. A ring, or the deadline, takes the slot
   * (one take at a time; a ring during a take takes again after it). Until its push is known to
   * have committed, a ring only counts: the slot may not exist yet.
   */
  final class Waiting<R> implements TenantWatcher.Listener, ReplySlots.LocalCaller {
    private final From from;
    private final @Nullable Class<R> replyType;
    private final long deadline;
    private final Duration timeout;
    private final long wakeId;
    private final int bucket;
    private final CompletableFuture<R> result = new CompletableFuture<>();
    private final AtomicBoolean listening = new AtomicBoolean();

    /** Takes asked for, the one in flight included; the push counts as one until it commits. */
    private final AtomicInteger takes = new AtomicInteger(1);

    private volatile boolean timedOut;
    private volatile @Nullable ScheduledFuture<?> timer;

    private Waiting(From from, @Nullable Class<R> replyType, long deadline, Duration timeout) {
      this.from = from;
      this.replyType = replyType;
      this.deadline = deadline;
      this.timeout = timeout;
      this.wakeId = slots.wakeId(from);
      this.bucket = slots.bucket();
    }

    /** The reply, a timeout, or the failure of the wait. */
    CompletableFuture<R> result() {
      return result;
    }

    /** Starts listening for the reply's ring; idempotent (a push may be attempted again). */
    void listen() {
      if (listening.compareAndSet(false, true)) {
        doorbell.register(bucket, wakeId, this);
        doorbell.parked(bucket);
      }
    }

    /** The call was pushed: take the slot if a ring came meanwhile, and start the deadline. */
    CompletableFuture<R> await() {
      if (takes.decrementAndGet() != 0) {
        takeOnce(takes.get());
      }
      if (result.isDone()) {
        return result; // a consumer of this runtime handed the reply over already
      }
      try {
        timer =
            core.scheduler()
                .schedule(
                    () -> core.executor().execute(this::deadlinePassed),
                    Math.max(0, deadline - core.nanoTime()),
                    TimeUnit.NANOSECONDS);
      } catch (RejectedExecutionException e) {
        fail(
            new ServerStoppedException("the runtime was closed while the call waited: " + context));
      }
      return result;
    }

    /**
     * Waits for a reply that may be there already (a kept reply): listens, starts the deadline and
     * takes the slot at once.
     */
    CompletableFuture<R> resume() {
      listen();
      await();
      take();
      return result;
    }

    /** The call was not queued after all (it ran inline), or its push failed. */
    void abandon(@Nullable Throwable failure) {
      stopListening();
      if (failure != null) {
        result.completeExceptionally(failure);
      }
    }

    @Override
    public boolean waitsFor(From from) {
      return this.from.equals(from);
    }

    @Override
    public void replied(@Nullable Object reply) {
      try {
        R value = slots.local(reply, replyType);
        stopListening();
        slots.clearLater(from);
        result.complete(value);
      } catch (RuntimeException e) {
        slots.clearLater(from);
        fail(e);
      }
    }

    @Override
    public void ring(long version) {
      take();
    }

    @Override
    public void closed() {
      fail(
          new ServerStoppedException(
              "the runtime was closed while the call waited; it stays queued: " + context));
    }

    @Override
    public void ringAll() {
      take();
    }

    private void deadlinePassed() {
      timedOut = true;
      take();
    }

    private void take() {
      if (!result.isDone() && takes.getAndIncrement() == 0) {
        takeOnce(takes.get());
      }
    }

    private void takeOnce(int requests) {
      slots
          .take(from, timedOut)
          .whenComplete(
              (taken, err) -> {
                try {
                  core.executor().execute(() -> afterTake(requests, taken, err));
                } catch (RejectedExecutionException e) {
                  fail(new ServerStoppedException("the runtime was closed: " + context));
                }
              });
    }

    private void afterTake(
        int requests, ReplySlots.@Nullable Taken taken, @Nullable Throwable err) {
      if (err != null || taken == null) {
        fail(Futures.unwrap(err));
        return;
      }
      if (!taken.waiting()) {
        finish(taken.rows());
        return;
      }
      if (takes.addAndGet(-requests) != 0) {
        takeOnce(takes.get()); // rung (or timed out) while this take was on its way
      }
    }

    private void finish(List<KeyValue> rows) {
      try {
        if (rows.isEmpty() && KeptReplies.isKept(from)) {
          fail(
              new UnknownCallException(
                  "no such call, or its retention window ended: callId="
                      + KeptReplies.callId(from)
                      + " "
                      + context));
        } else if (rows.isEmpty()) {
          fail(
              new ServerStoppedException(
                  "the reply slot was removed before a reply arrived (the server was killed): "
                      + context));
        } else if (rows.get(0).value().length == 0) {
          fail(
              new CallTimeoutException(
                  "no reply within "
                      + timeout.toMillis()
                      + " ms; the call stays queued and will still execute: "
                      + context
                      + " from="
                      + from));
        } else {
          R reply = slots.decode(rows, replyType);
          stopListening();
          result.complete(reply);
        }
      } catch (RuntimeException e) {
        fail(e);
      }
    }

    private void fail(@Nullable Throwable t) {
      stopListening();
      result.completeExceptionally(
          t != null ? t : new IllegalStateException("waiting for a reply failed: " + context));
    }

    private void stopListening() {
      ScheduledFuture<?> t = timer;
      if (t != null) {
        t.cancel(false);
      }
      if (listening.compareAndSet(true, false)) {
        doorbell.unparked(bucket);
        doorbell.unregister(bucket, wakeId, this);
      }
    }
  }
}
