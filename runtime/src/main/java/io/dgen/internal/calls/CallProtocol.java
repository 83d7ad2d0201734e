package io.dgen.internal.calls;

import io.dgen.CallTimeoutException;
import io.dgen.From;
import io.dgen.ServerStoppedException;
import io.dgen.UnknownCallException;
import io.dgen.backend.Futures;
import io.dgen.backend.KeyValue;
import io.dgen.backend.Transaction;
import io.dgen.internal.base.OperationTimeouts;
import io.dgen.internal.base.RuntimeServices;
import io.dgen.internal.commit.CommitRunner;
import io.dgen.internal.doorbell.TenantWatcher;
import io.dgen.internal.doorbell.WakeListener;
import io.dgen.internal.keys.KeptReplies;
import io.dgen.internal.keys.ServerKeys;
import io.dgen.internal.queue.ServerQueue;
import java.lang.reflect.Type;
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
 * doorbell of the server's bucket for its slot's wake id, which the consumer rings when it writes
 * the reply, and its deadline races that ring: whichever comes first takes the slot.
 *
 * <p>The call's own timeout bounds the whole wait, whatever the cluster does: its push (or inline
 * transaction) is abandoned at the deadline if the operation timeout does not end it first, and the
 * final take of the slot, which starts a little before the deadline so that a cluster that answers
 * gets to decide, is waited for only until the deadline.
 *
 * <p>Never runs callbacks and never decides whether a call is queued or inline (the handle does);
 * never blocks a thread while it waits.
 */
public final class CallProtocol {

  private final RuntimeServices services;
  private final CommitRunner commits;
  private final ServerQueue<?> queue;
  private final ReplySlots slots;
  private final TenantWatcher doorbell;
  private final String context;

  public CallProtocol(
      RuntimeServices services,
      CommitRunner commits,
      ServerQueue<?> queue,
      ReplySlots slots,
      TenantWatcher doorbell,
      String context) {
    this.services = services;
    this.commits = commits;
    this.queue = queue;
    this.slots = slots;
    this.doorbell = doorbell;
    this.context = context;
  }

  /**
   * The reply of an inline or priority call ({@code how}) as its caller will get it, taken now
   * ({@link ReplySlots#snapshot}); refuses one that a queued call could not store.
   *
   * @throws io.dgen.ReplyTooLargeException if it is over the limit
   */
  public @Nullable Object replyAsOfNow(@Nullable Object reply, String how) {
    return slots.snapshot(reply, how);
  }

  /**
   * What the caller of a call (or priority message) that its server refused in this runtime gets.
   *
   * @param reason the handler's message
   * @param cause the handler's exception
   */
  public io.dgen.CallRejectedException rejection(String reason, Throwable cause) {
    return slots.rejection(reason, cause);
  }

  /** A call that may be queued: its reply, once it comes, completes {@link Waiting#result()}. */
  public <R> Waiting<R> waiting(From from, @Nullable Type replyType, Duration timeout) {
    return new Waiting<>(from, replyType, services.nanoTime() + timeout.toNanos(), timeout);
  }

  /**
   * Writes an empty reply slot and pushes the call; the call listens for its reply from now on
   * (before the push commits, so that no reply can ring unheard). The caller's transaction must
   * also publish ({@link ServerQueue#publishing}) or ring the server some other way (a read that a
   * kill conflicts with).
   */
  public void push(Transaction tx, byte[] envelope, Waiting<?> call) {
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
  public CompletableFuture<@Nullable Void> pushOnce(byte[] envelope, Waiting<?> call) {
    return pushOnce(ServerKeys.LANE_NORMAL, envelope, call);
  }

  /**
   * Like {@link #pushOnce(byte[], Waiting)} into {@code lane}: a priority message sent to the
   * holder goes to the head.
   */
  public CompletableFuture<@Nullable Void> pushOnce(long lane, byte[] envelope, Waiting<?> call) {
    return bounded(
        commits.commitAsync(
            tx -> {
              CompletableFuture<@Nullable Void> live = queue.publishing(tx);
              push(tx, lane, envelope, call);
              return live;
            },
            (tx, prior) -> prior,
            services.executor()),
        call);
  }

  /**
   * Sends a priority message to the runtime that runs the server, for a ref whose runtime does not
   * have its behaviour: queued at the head with a reply slot, run next by the holder and never
   * retried; the future completes with its reply (null for a cast or an info) or its failure.
   */
  public <R> CompletableFuture<R> toHolder(
      byte[] envelope, From from, @Nullable Type replyType, Duration timeout) {
    Waiting<R> waiting = waiting(from, replyType, timeout);
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
   * Bounds a call's transaction (its push, or an inline call) by the operation timeout and by the
   * call's own deadline, whichever comes first: past it, the future fails with {@link
   * io.dgen.OperationTimeoutException} or {@link CallTimeoutException}, and the run is abandoned
   * (an attempt already sent may still commit: the call may then still execute).
   */
  public <T> CompletableFuture<T> bounded(CompletableFuture<T> transaction, Waiting<?> call) {
    long left = call.deadline - services.nanoTime();
    if (left >= services.operations().timeout().toNanos()) {
      return commits.bounded(transaction, services.scheduler(), "call");
    }
    return OperationTimeouts.bound(
        transaction,
        services.scheduler(),
        left,
        () ->
            new CallTimeoutException(
                "no reply within "
                    + call.timeout.toMillis()
                    + " ms: the call's transaction did not complete in time (the cluster did not"
                    + " answer); it may still commit, and the call then still executes: "
                    + context));
  }

  /**
   * How long before its deadline a call takes its slot for the last time: long enough for a cluster
   * that answers to read and clear it by the deadline, at most a tenth of the timeout.
   */
  static final long FINAL_TAKE_LEAD_NANOS = TimeUnit.MILLISECONDS.toNanos(100);

  /**
   * One queued call waiting for its reply: a doorbell listener under its slot's wake id from the
   * push until the reply is taken or the deadline passes. A ring takes the slot (one such take at a
   * time; a ring during a take takes again after it). Until its push is known to have committed, a
   * ring only counts: the slot may not exist yet. A little before the deadline, the final take
   * reads and clears the slot, whatever takes are under way; at the deadline the call fails with
   * {@link CallTimeoutException} unless a take found the reply, even if the final take has not
   * answered (it goes on, best effort; a slot it does not clear is swept as abandoned).
   */
  public final class Waiting<R> implements WakeListener, ReplySlots.LocalCaller {
    private final From from;
    private final @Nullable Type replyType;
    private final long deadline;
    private final Duration timeout;
    private final long wakeId;
    private final int bucket;
    private final CompletableFuture<R> result = new CompletableFuture<>();
    private final AtomicBoolean listening = new AtomicBoolean();

    /** Takes asked for by rings, the one in flight included; the push counts until it commits. */
    private final AtomicInteger takes = new AtomicInteger(1);

    /**
     * The final take has started and clears the slot (a kept reply's is never cleared): takes after
     * it, and an empty slot one of them read, decide nothing.
     */
    private volatile boolean finalTake;

    private volatile @Nullable ScheduledFuture<?> timer;

    private Waiting(From from, @Nullable Type replyType, long deadline, Duration timeout) {
      this.from = from;
      this.replyType = replyType;
      this.deadline = deadline;
      this.timeout = timeout;
      this.wakeId = slots.wakeId(from);
      this.bucket = slots.bucket();
    }

    /** The reply, a timeout, or the failure of the wait. */
    public CompletableFuture<R> result() {
      return result;
    }

    /** Starts listening for the reply's ring; idempotent (a push may be attempted again). */
    void listen() {
      if (listening.compareAndSet(false, true)) {
        doorbell.register(bucket, wakeId, this);
        doorbell.parked(bucket);
        if (result.isDone()) {
          stopListening(); // completed while it registered: its bucket must not stay watched
        }
      }
    }

    /** The call was pushed: take the slot if a ring came meanwhile, and start the deadline. */
    public CompletableFuture<R> await() {
      if (takes.decrementAndGet() != 0) {
        takeOnce(takes.get());
      }
      if (result.isDone()) {
        return result; // a consumer of this runtime handed the reply over already
      }
      long lead = Math.min(FINAL_TAKE_LEAD_NANOS, timeout.toNanos() / 10);
      schedule(deadline - lead, this::takeFinally);
      return result;
    }

    /**
     * Waits for a reply that may be there already (a kept reply): listens, starts the deadline and
     * takes the slot at once.
     */
    public CompletableFuture<R> resume() {
      listen();
      await();
      take();
      return result;
    }

    /** The call was not queued after all (it ran inline), or its push failed. */
    public void abandon(@Nullable Throwable failure) {
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

    /** Runs {@code step} on the executor at {@code at} (nanos); fails the call if it cannot. */
    private void schedule(long at, Runnable step) {
      try {
        timer =
            services
                .scheduler()
                .schedule(
                    () -> services.executor().execute(step),
                    Math.max(0, at - services.nanoTime()),
                    TimeUnit.NANOSECONDS);
      } catch (RejectedExecutionException e) {
        fail(
            new ServerStoppedException("the runtime was closed while the call waited: " + context));
      }
    }

    /**
     * The final take, independent of any take under way (one may hang on a cluster that stopped
     * answering): reads and clears the slot; the call fails at the deadline if nothing decided it.
     */
    private void takeFinally() {
      if (result.isDone()) {
        return;
      }
      finalTake = !KeptReplies.isKept(from);
      CompletableFuture<ReplySlots.Taken> taken;
      try {
        taken = slots.take(from, true);
      } catch (RuntimeException e) {
        taken = CompletableFuture.failedFuture(e);
      }
      taken.whenComplete(
          (t, err) -> {
            try {
              services.executor().execute(() -> afterFinalTake(t, err));
            } catch (RejectedExecutionException e) {
              fail(new ServerStoppedException("the runtime was closed: " + context));
            }
          });
      if (!result.isDone()) {
        schedule(deadline, this::deadlinePassed);
      }
    }

    private void afterFinalTake(ReplySlots.@Nullable Taken taken, @Nullable Throwable err) {
      if (result.isDone()) {
        return; // the deadline passed first: this take was best effort
      }
      if (err != null || taken == null) {
        fail(Futures.unwrap(err));
        return;
      }
      List<KeyValue> rows = taken.rows();
      if (!rows.isEmpty() && rows.get(0).value().length == 0 && services.nanoTime() < deadline) {
        return; // no reply, and none can come now: the call times out at its deadline
      }
      finish(rows);
    }

    /** The deadline passed and no take decided the call: it timed out. */
    private void deadlinePassed() {
      if (!result.isDone()) {
        fail(timedOut());
      }
    }

    private CallTimeoutException timedOut() {
      return new CallTimeoutException(
          "no reply within "
              + timeout.toMillis()
              + " ms; the call stays queued and will still execute: "
              + context
              + " from="
              + from);
    }

    private void take() {
      if (!result.isDone() && !finalTake && takes.getAndIncrement() == 0) {
        takeOnce(takes.get());
      }
    }

    private void takeOnce(int requests) {
      CompletableFuture<ReplySlots.Taken> taken;
      try {
        taken = slots.take(from, false);
      } catch (RuntimeException e) {
        taken = CompletableFuture.failedFuture(e);
      }
      taken.whenComplete(
          (t, err) -> {
            try {
              services.executor().execute(() -> afterTake(requests, t, err));
            } catch (RejectedExecutionException e) {
              fail(new ServerStoppedException("the runtime was closed: " + context));
            }
          });
    }

    private void afterTake(
        int requests, ReplySlots.@Nullable Taken taken, @Nullable Throwable err) {
      if (result.isDone()) {
        return;
      }
      if (err != null || taken == null) {
        fail(Futures.unwrap(err));
        return;
      }
      if (!taken.waiting()) {
        if (finalTake && !replied(taken.rows())) {
          return; // the final take cleared the slot after this read; it decides the call
        }
        finish(taken.rows());
        return;
      }
      if (takes.addAndGet(-requests) != 0 && !finalTake) {
        takeOnce(takes.get()); // rung while this take was on its way
      }
    }

    private boolean replied(List<KeyValue> rows) {
      return !rows.isEmpty() && rows.get(0).value().length > 0;
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
          fail(timedOut());
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
