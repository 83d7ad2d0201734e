package io.dgen.internal;

import io.dgen.Action;
import io.dgen.CallbackException;
import io.dgen.From;
import io.dgen.Result;
import io.dgen.ServerLockedException;
import io.dgen.backend.Futures;
import io.dgen.backend.KeyValue;
import io.dgen.backend.Transaction;
import io.dgen.internal.codec.StoredState;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * Callbacks that run in the caller's thread, each in a transaction of its own: the inline call
 * (with {@code consumeK == 1}, a call that finds the queue empty and the server unlocked) and
 * priority messages (which bypass the queue and the lock). After the commit it runs the result's
 * actions and honours a stop.
 *
 * <p>Never takes the lock (a call that would is queued instead; a priority message that asks for it
 * fails), never changes the state of a locked server (a priority message that would is refused) and
 * never retries a failed callback itself: an inline call's failure queues the call for the
 * consumers, a priority message's is the caller's error.
 *
 * @param <S> the state type
 * @param <M> the message type
 */
final class InlineRunner<S, M> {

  /** What an inline call did: replied (with what to do after), or queued the call instead. */
  record Outcome<S>(
      @Nullable Object reply,
      @Nullable S state,
      List<Action<S>> actions,
      @Nullable Object stopReason,
      @Nullable CompletableFuture<Void> watch,
      @Nullable StoredState written)
      implements CommitRunner.WritesState {

    /** A call that was queued instead: its caller waits on {@code watch}. */
    static <S> Outcome<S> queued(CompletableFuture<Void> watch) {
      return new Outcome<>(null, null, List.of(), null, watch, null);
    }
  }

  /** A callback through the invoker, given its transaction and when its work began. */
  private interface Invocation<S> {
    Result<S> run(Transaction tx, S state, long startNanos);
  }

  /** An inline callback returned {@code Result.lock}: abort, and queue the call instead. */
  private static final class TakesLock extends RuntimeException {
    private static final long serialVersionUID = 1L;

    TakesLock() {
      super("inline call takes the lock", null, false, false);
    }
  }

  private final ServerKeys keys;
  private final CommitRunner commits;
  private final StateStore<S> states;
  private final ServerQueue<M> queue;
  private final CallProtocol calls;
  private final ReplySlots slots;
  private final CallbackInvoker<S, M> invoker;
  private final Lifecycle lifecycle;
  private final LongSupplier nanoTime;
  private final String context;

  InlineRunner(
      ServerKeys keys,
      CommitRunner commits,
      StateStore<S> states,
      ServerQueue<M> queue,
      CallProtocol calls,
      ReplySlots slots,
      CallbackInvoker<S, M> invoker,
      Lifecycle lifecycle,
      LongSupplier nanoTime,
      String context) {
    this.keys = keys;
    this.commits = commits;
    this.states = states;
    this.queue = queue;
    this.calls = calls;
    this.slots = slots;
    this.invoker = invoker;
    this.lifecycle = lifecycle;
    this.nanoTime = nanoTime;
    this.context = context;
  }

  /**
   * Runs a call in the caller's transaction if the queue is empty and the server unlocked;
   * otherwise queues it in the same transaction. A reply's actions have run when this returns.
   *
   * @param envelope the call's envelope, made only if the call is queued
   * @throws CallbackException if {@code handleCall} failed; the call was queued for retry
   */
  Outcome<S> call(M request, From from, Supplier<byte[]> envelope) {
    Outcome<S> outcome;
    try {
      outcome =
          commits.commit(
              tx -> {
                long start = nanoTime.getAsLong();
                // A snapshot read: a concurrent push must not abort the inline call; the call then
                // serializes before that push, which is a legal order for concurrent operations.
                CompletableFuture<List<KeyValue>> head = queue.peek(tx, 1);
                CompletableFuture<byte @Nullable []> lock = tx.getAsync(keys.lockKey());
                CompletableFuture<byte @Nullable []> version = states.prefetchVersion(tx, false);
                if (!Futures.join(head).isEmpty() || Futures.join(lock) != null) {
                  return Outcome.queued(calls.push(tx, envelope.get(), from));
                }
                return runOnState(
                    tx,
                    states.load(tx, version, false),
                    start,
                    (t, state, st) -> invoker.handleCall(t, request, from, state, st),
                    TakesLock::new);
              },
              (tx, prior) ->
                  prior != null && prior.watch() != null
                      ? Outcome.<S>queued(slots.reopen(tx, from))
                      : prior);
    } catch (TakesLock lock) {
      // The lock is taken by the consume loop only, so that handleLocked runs where the lock is
      // fenced and recoverable: queue the call like any other. The attempt committed nothing.
      return Outcome.queued(calls.pushOnce(envelope.get(), from));
    } catch (CallbackInvoker.CallbackFailure failure) {
      // The failed attempt committed nothing; queue the call (without a reply slot: the caller
      // gets the error now) so that consumers retry it, as the seed does.
      byte[] env = envelope.get();
      commits.commit(
          tx -> {
            queue.push(tx, ServerKeys.LANE_NORMAL, env);
            return null;
          });
      throw new CallbackException(
          "inline handleCall failed; the call was queued for retry: " + context, failure.reason());
    }
    Objects.requireNonNull(outcome);
    if (outcome.watch() == null) {
      afterCommit(outcome);
    }
    return outcome;
  }

  /** A priority call; returns its reply. */
  @Nullable Object priorityCall(M request, From from) {
    return priority(
            "handleCall", (tx, state, start) -> invoker.handleCall(tx, request, from, state, start))
        .reply();
  }

  /** A priority cast. */
  void priorityCast(M message) {
    priority("handleCast", (tx, state, start) -> invoker.handleCast(tx, message, state, start));
  }

  /** An info message. */
  void info(Object info) {
    priority("handleInfo", (tx, state, start) -> invoker.handleInfo(tx, info, state, start));
  }

  /**
   * Runs a priority message: its callback at once in a transaction of its own, then its actions;
   * stops the process if the callback asked to.
   *
   * @throws ServerLockedException if the server is locked and the callback changed the state
   */
  private Outcome<S> priority(String name, Invocation<S> callback) {
    lifecycle.ensureAlive();
    Outcome<S> outcome;
    try {
      outcome =
          commits.commit(
              tx -> {
                long start = nanoTime.getAsLong();
                // Read serializably, so that a lock taken concurrently aborts a state change.
                CompletableFuture<byte @Nullable []> lock = tx.getAsync(keys.lockKey());
                Outcome<S> o =
                    runOnState(
                        tx,
                        states.load(tx, null, false),
                        start,
                        callback,
                        () ->
                            new CallbackInvoker.CallbackFailure(
                                new IllegalStateException(
                                    "a priority message cannot take the lock (Result.lock):"
                                        + " priority messages bypass the lock; send it with call"
                                        + " or cast")));
                if (o.written() != null && Futures.join(lock) != null) {
                  // handleLocked's result replaces the state when it commits: this change would
                  // be silently undone, so it is refused instead.
                  throw new ServerLockedException(
                      "priority "
                          + name
                          + " changed the state of a locked server; refused, nothing was"
                          + " committed (handleLocked's result will replace the state). Send state"
                          + " changes with cast or call, which wait for the lock: "
                          + context);
                }
                return o;
              });
    } catch (CallbackInvoker.CallbackFailure failure) {
      throw new CallbackException(
          "priority " + name + " failed; nothing was committed: " + context, failure.reason());
    }
    afterCommit(Objects.requireNonNull(outcome));
    return outcome;
  }

  private void afterCommit(Outcome<S> outcome) {
    invoker.runActions(outcome.actions(), outcome.state());
    lifecycle.stopIfAsked(outcome.stopReason());
  }

  /**
   * Runs one callback on {@code loaded} in {@code tx} and writes the state it returns. A failing
   * callback aborts the attempt with its {@link CallbackInvoker.CallbackFailure}; a {@code
   * Result.lock} aborts it with {@code onLock}'s exception.
   */
  private Outcome<S> runOnState(
      Transaction tx,
      StateStore.Loaded<S> loaded,
      long start,
      Invocation<S> callback,
      Supplier<RuntimeException> onLock) {
    Result<S> r = callback.run(tx, loaded.state(), start);
    if (r.kind() == Result.Kind.LOCK) {
      throw onLock.get();
    }
    StoredState written = states.write(tx, loaded, r.state());
    return new Outcome<>(
        r.reply(),
        r.state(),
        r.actions(),
        r.kind() == Result.Kind.STOP ? r.reason() : null,
        null,
        written);
  }
}
