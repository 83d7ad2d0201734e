package io.dgen.internal.consume;

import io.dgen.Action;
import io.dgen.CallbackException;
import io.dgen.From;
import io.dgen.Result;
import io.dgen.ServerLockedException;
import io.dgen.backend.Futures;
import io.dgen.backend.KeyValue;
import io.dgen.backend.Transaction;
import io.dgen.internal.base.Async;
import io.dgen.internal.base.Lifecycle;
import io.dgen.internal.behaviour.CallbackInvoker;
import io.dgen.internal.calls.CallProtocol;
import io.dgen.internal.calls.ReplySlots;
import io.dgen.internal.codec.StoredState;
import io.dgen.internal.commit.CommitRunner;
import io.dgen.internal.commit.Fence;
import io.dgen.internal.keys.ServerEntry;
import io.dgen.internal.keys.ServerKeys;
import io.dgen.internal.queue.ServerQueue;
import io.dgen.internal.state.StateStore;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Callbacks that run outside the consume loop, each in a transaction of its own: the inline call
 * (with {@code consumeK == 1}, a call that finds the queue empty and the server unlocked; in the
 * caller's thread when its reads are in at once, else on the runtime's executor, never waiting on a
 * thread) and priority messages (which bypass the queue and the lock; in the caller's thread).
 * After the commit it runs the result's actions and honours a stop.
 *
 * <p>Never takes the lock (a call that would is queued instead; a priority message that asks for it
 * fails), never changes the state of a locked server (a priority message that would is refused) and
 * never retries a failed callback itself: an inline call's failure queues the call for the
 * consumers, a priority message's is the caller's error.
 *
 * @param <S> the state type
 * @param <M> the message type
 */
public final class InlineRunner<S, M> {

  private static final Logger log = LoggerFactory.getLogger(InlineRunner.class);

  /** What an inline call did: replied (with what to do after), or queued the call instead. */
  public record Outcome<S>(
      @Nullable Object reply,
      @Nullable S state,
      List<Action<S>> actions,
      @Nullable Object stopReason,
      boolean queued,
      @Nullable StoredState written)
      implements CommitRunner.WritesState {

    /** A call that was queued instead: its caller waits for the reply. */
    public static <S> Outcome<S> queuedInstead() {
      return new Outcome<>(null, null, List.of(), null, true, null);
    }
  }

  /** A callback through the invoker, given its transaction and when its work began. */
  private interface Invocation<S> {
    Result<S> run(Transaction tx, S state, long startNanos);
  }

  /**
   * An inline attempt that must not commit here, and whose call is queued instead: its callback
   * returned {@code Result.lock} (the lock is taken by the consume loop only), or, run by a
   * visiting runtime, it found a server to create or returned {@code Result.stop}, which only the
   * holder does.
   */
  public static final class QueueInstead extends RuntimeException {
    private static final long serialVersionUID = 1L;

    QueueInstead(String why) {
      super(why, null, false, false);
    }
  }

  /**
   * What an inline attempt read of its server in one round: when its work began (the read version's
   * arrival), the queue's head (a snapshot read), the lock, the version key's read if the cache is
   * on, the state's read if no cached state could save it, and, for a kind with an expiry, whether
   * the server is one its holder must judge first (unloaded since its last message: it may have
   * expired), so that nothing runs here on a state that may be gone.
   */
  public record Opened<S>(
      long start,
      List<KeyValue> head,
      byte @Nullable [] lock,
      @Nullable CompletableFuture<byte @Nullable []> version,
      @Nullable CompletableFuture<StateStore.Loaded<S>> early,
      boolean holderJudges) {
    /** Whether the call must wait its turn: messages are queued, or the server is locked. */
    public boolean busy() {
      return !head.isEmpty() || lock != null;
    }
  }

  private final ServerKeys keys;
  private final CommitRunner commits;
  private final StateStore<S> states;
  private final ServerQueue<M> queue;
  private final CallProtocol calls;
  private final CallbackInvoker<S, M> invoker;
  private final Lifecycle lifecycle;
  private final LongSupplier nanoTime;
  private final Executor executor;
  private final @Nullable Fence fence;
  private final boolean visiting;
  private final boolean expiring;
  private final String context;

  /**
   * A priority message to a server of a kind with an expiry that its holder has not loaded and
   * judged ({@code Expiry.inlineAllowed}): nothing ran; it is sent to the holder instead, which
   * runs it on a new server if the old one expired.
   */
  public static final class ToHolder extends RuntimeException {
    private static final long serialVersionUID = 1L;

    ToHolder() {
      super("the server may have expired: its holder runs it", null, false, false);
    }
  }

  /**
   * @param fence a hosted server's: an inline call reads its bucket's lease, and commits only while
   *     this runtime holds it
   * @param visiting whether this runs a hosted server's calls in a runtime that has its behaviour
   *     but does not run the server (a ref's, outside the holder's loaded process): a call runs on
   *     the durable state as at the holder, exact by the same conflicts, but one that would create
   *     the server or stop it is queued for the holder instead
   * @param expiring whether the server's kind has an expiry: a call runs inline only on a server
   *     its holder has loaded and judged ({@code Expiry.inlineAllowed}), else it is queued for the
   *     holder, and a priority message sent to it ({@link ToHolder}); costs one read
   */
  public InlineRunner(
      ServerKeys keys,
      CommitRunner commits,
      StateStore<S> states,
      ServerQueue<M> queue,
      CallProtocol calls,
      CallbackInvoker<S, M> invoker,
      Lifecycle lifecycle,
      LongSupplier nanoTime,
      Executor executor,
      @Nullable Fence fence,
      boolean visiting,
      boolean expiring,
      String context) {
    this.fence = fence;
    this.visiting = visiting;
    this.expiring = expiring;
    this.keys = keys;
    this.commits = commits;
    this.states = states;
    this.queue = queue;
    this.calls = calls;
    this.invoker = invoker;
    this.lifecycle = lifecycle;
    this.nanoTime = nanoTime;
    this.executor = executor;
    this.context = context;
  }

  /**
   * Runs a call in its own transaction if the queue is empty and the server unlocked; otherwise
   * queues it in the same transaction. No thread waits for the reads or the commit: the callback
   * runs in this thread if the reads are in at once, else on {@code executor}, and so do the
   * reply's actions after the commit. The outcome completes once they have run.
   *
   * @param envelope the call's envelope, made only if the call is queued
   * @param waiting the call's wait for a reply, should it be queued
   * @return the outcome; fails with {@link CallbackException} if {@code handleCall} failed (the
   *     call was queued for retry), with {@link io.dgen.CallRejectedException} if it refused the
   *     call (nothing was committed or queued)
   */
  public CompletableFuture<Outcome<S>> call(
      M request, From from, Supplier<byte[]> envelope, CallProtocol.Waiting<?> waiting) {
    // The callback, its actions and a fallback to the queue run in the caller's trace, on
    // whichever thread they run.
    Executor executor = queue.traces().inCallersContext(this.executor);
    CompletableFuture<@Nullable Outcome<S>> committed =
        calls.bounded(
            commits.commitAsync(
                tx ->
                    Async.then(
                        open(tx),
                        executor,
                        opened -> {
                          if (opened.busy()) {
                            // The server existed at this read version (a kill empties the queue
                            // and clears the lock, and no publish follows it), and the lock key's
                            // serializable read conflicts with a later kill. Unless the cached
                            // state vouches for it, the server's entry is read too: it may have
                            // been started again since this process started, with another type
                            // table.
                            CompletableFuture<@Nullable Void> ours =
                                states.validates(opened.version())
                                    ? CompletableFuture.completedFuture(null)
                                    : queue.entry().current(tx);
                            calls.push(tx, envelope.get(), waiting);
                            queue.wakeConsumers(tx); // it has work already: no activation needed
                            return ours.thenApply(v -> Outcome.<S>queuedInstead());
                          }
                          if (opened.holderJudges()) {
                            throw new QueueInstead(
                                "the server may have expired: its holder judges");
                          }
                          return Async.thenApply(
                              state(tx, opened),
                              executor,
                              loaded ->
                                  runOnState(
                                      tx,
                                      loaded,
                                      opened.start(),
                                      (t, state, st) ->
                                          invoker.handleCall(t, request, from, state, st),
                                      () -> new QueueInstead("inline call takes the lock"),
                                      "inline",
                                      true));
                        }),
                (tx, prior) -> prior,
                executor),
            waiting);
    return Async.whenDone(
        committed,
        executor,
        (outcome, err) -> {
          Throwable failure = err == null ? null : Futures.unwrap(err);
          if (failure != null && lifecycle.terminateIfFatal(failure)) {
            return CompletableFuture.failedFuture(failure);
          }
          if (failure instanceof QueueInstead) {
            // The lock is taken by the consume loop only, so that handleLocked runs where the lock
            // is fenced and recoverable; a visitor neither creates nor stops a server: queue the
            // call like any other. The attempt committed nothing.
            return calls
                .pushOnce(envelope.get(), waiting)
                .thenApply(v -> Outcome.<S>queuedInstead());
          }
          if (failure instanceof CallbackInvoker.Refused refused) {
            // The attempt committed nothing, and a refusal is not retried: the call ends here.
            return CompletableFuture.failedFuture(
                calls.rejection(refused.why(), refused.refusal()));
          }
          if (failure instanceof CallbackInvoker.CallbackFailure callback) {
            return queueForRetry(envelope.get(), callback, waiting);
          }
          if (failure instanceof Fence.Deposed deposed) {
            // This runtime lost the server's bucket since it loaded the server (a round has not
            // told it yet): the call is queued for the bucket's new holder, which replies into its
            // slot, and the process unloads, as its consume loop does when fenced.
            log.info("{}; the inline call is queued for the new holder", deposed.getMessage());
            return calls
                .pushOnce(envelope.get(), waiting)
                .thenApply(
                    v -> {
                      lifecycle.terminate(deposed);
                      return Outcome.<S>queuedInstead();
                    });
          }
          if (failure != null) {
            return CompletableFuture.failedFuture(failure);
          }
          Outcome<S> done = Objects.requireNonNull(outcome);
          if (!done.queued()) {
            waiting.abandon(null); // an earlier attempt may have queued it, and did not commit
            afterCommit(done);
          }
          return CompletableFuture.completedFuture(done);
        });
  }

  /** The server's state store, for atomic work's cache updates and read-only views. */
  public StateStore<S> states() {
    return states;
  }

  /**
   * Starts an inline attempt's reads of the server in {@code tx}, all in one round (and, for a
   * fenced process, the lease): the queue's head as a snapshot read, so that a concurrent push does
   * not abort the attempt (it serializes before that push, a legal order for concurrent
   * operations); the lock key and the version key serializably, as the holder's batches read them,
   * so that whichever of two overlapping transactions commits second conflicts; and, without a
   * cached state to validate, the state itself (a visiting ref's usual case): one round trip, not
   * two. For a kind with an expiry, also the server's entry serializably: a server its holder has
   * not judged since it was unloaded ({@link Opened#holderJudges}) may have expired.
   */
  public CompletableFuture<Opened<S>> open(Transaction tx) {
    CompletableFuture<Long> began = ConsumerBatch.startOf(tx, nanoTime);
    CompletableFuture<List<KeyValue>> head = queue.peek(tx, 1);
    CompletableFuture<byte @Nullable []> lock = tx.getAsync(keys.lockKey());
    CompletableFuture<byte @Nullable []> version = states.prefetchVersion(tx, false);
    CompletableFuture<byte @Nullable []> entry = readEntry(tx);
    CompletableFuture<StateStore.Loaded<S>> early =
        states.cold() ? states.loadAsync(tx, null, false) : null;
    return CompletableFuture.allOf(
            began,
            head,
            lock,
            entry,
            version != null ? version : CompletableFuture.completedFuture(null),
            fence != null ? fence.check(tx) : CompletableFuture.completedFuture(null))
        .thenApply(
            v ->
                new Opened<>(
                    began.join(),
                    head.join(),
                    lock.join(),
                    version,
                    early,
                    expiring && !ServerEntry.inlineAllowed(entry.join())));
  }

  /** The state {@code opened} read, or its load now (validated by the version key read). */
  public CompletableFuture<StateStore.Loaded<S>> state(Transaction tx, Opened<S> opened) {
    return opened.early() != null ? opened.early() : states.loadAsync(tx, opened.version(), false);
  }

  /**
   * {@code handleCall} on {@code loaded} in {@code tx} as one step of a larger transaction (atomic
   * work): as an inline call's, see {@link #runOnState}; the caller commits, then {@link
   * #afterCommit}.
   */
  public Outcome<S> callStep(
      Transaction tx,
      StateStore.Loaded<S> loaded,
      long start,
      M request,
      From from,
      Supplier<RuntimeException> onLock) {
    return runOnState(
        tx,
        loaded,
        start,
        (t, state, st) -> invoker.handleCall(t, request, from, state, st),
        onLock,
        "atomic",
        true);
  }

  /** {@code handleCast} as one step of a larger transaction, as {@link #callStep}. */
  public Outcome<S> castStep(
      Transaction tx,
      StateStore.Loaded<S> loaded,
      long start,
      M message,
      Supplier<RuntimeException> onLock) {
    return runOnState(
        tx,
        loaded,
        start,
        (t, state, st) -> invoker.handleCast(t, message, state, st),
        onLock,
        null,
        true);
  }

  /**
   * The failed attempt committed nothing; queue the call (without a reply slot: the caller gets the
   * error now) so that consumers retry it, as the seed does.
   */
  private CompletableFuture<Outcome<S>> queueForRetry(
      byte[] envelope, CallbackInvoker.CallbackFailure failure, CallProtocol.Waiting<?> waiting) {
    return calls
        .bounded(
            commits.commitAsync(
                tx -> {
                  CompletableFuture<@Nullable Void> live = queue.publishing(tx);
                  queue.push(tx, ServerKeys.LANE_NORMAL, envelope);
                  return live;
                },
                (tx, prior) -> prior,
                executor),
            waiting)
        .handle(
            (v, err) -> {
              CallbackException e =
                  new CallbackException(
                      err == null
                          ? "inline handleCall failed; the call was queued for retry: " + context
                          : "inline handleCall failed; queuing the call for retry failed or did"
                              + " not complete in time, so it may not be queued: "
                              + context,
                      failure.reason());
              if (err != null) {
                e.addSuppressed(Futures.unwrap(err));
              }
              throw e;
            });
  }

  /** A priority call; returns its reply (see {@link ReplySlots#local}). */
  public @Nullable Object priorityCall(M request, From from) {
    return priority(
            "handleCall",
            (tx, state, start) -> invoker.handleCall(tx, request, from, state, start),
            "priority")
        .reply();
  }

  /** A priority cast. */
  public void priorityCast(M message) {
    priority(
        "handleCast", (tx, state, start) -> invoker.handleCast(tx, message, state, start), null);
  }

  /** An info message. */
  public void info(Object info) {
    priority("handleInfo", (tx, state, start) -> invoker.handleInfo(tx, info, state, start), null);
  }

  /**
   * Runs a priority message: its callback at once in a transaction of its own, then its actions;
   * stops the process if the callback asked to.
   *
   * @throws ServerLockedException if the server is locked and the callback changed the state
   * @throws io.dgen.CallRejectedException if the callback refused the message (nothing committed)
   * @throws ToHolder if the server's kind has an expiry and its holder has not judged it
   */
  private Outcome<S> priority(String name, Invocation<S> callback, @Nullable String replies) {
    lifecycle.ensureAlive();
    Outcome<S> outcome;
    try {
      outcome =
          commits.commit(
              tx -> {
                tx.getReadVersion(); // the callback's time counts from the read version
                long start = nanoTime.getAsLong();
                // Read serializably, so that a lock taken concurrently aborts a state change.
                CompletableFuture<byte @Nullable []> lock = tx.getAsync(keys.lockKey());
                CompletableFuture<byte @Nullable []> entry = readEntry(tx);
                var loaded = states.load(tx, null, false);
                if (expiring && !ServerEntry.inlineAllowed(Futures.join(entry))) {
                  throw new ToHolder();
                }
                Outcome<S> o =
                    runOnState(
                        tx,
                        loaded,
                        start,
                        callback,
                        () ->
                            new CallbackInvoker.CallbackFailure(
                                new IllegalStateException(
                                    "a priority message cannot take the lock (Result.lock):"
                                        + " priority messages bypass the lock; send it with call"
                                        + " or cast")),
                        replies,
                        false);
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
    } catch (CallbackInvoker.Refused refused) {
      throw calls.rejection(refused.why(), refused.refusal());
    } catch (CallbackInvoker.CallbackFailure failure) {
      throw new CallbackException(
          "priority " + name + " failed; nothing was committed: " + context, failure.reason());
    } catch (Throwable t) {
      lifecycle.terminateIfFatal(t);
      throw t;
    }
    afterCommit(Objects.requireNonNull(outcome));
    return outcome;
  }

  /** Starts the serializable read of the server's entry if its kind has an expiry. */
  private CompletableFuture<byte @Nullable []> readEntry(Transaction tx) {
    return expiring ? tx.getAsync(queue.entry().key()) : CompletableFuture.completedFuture(null);
  }

  /** Runs the actions and honours a stop; a fatal error of an action stops the process. */
  public void afterCommit(Outcome<S> outcome) {
    try {
      invoker.runActions(outcome.actions(), outcome.state());
      if (outcome.written() != null) {
        outcome.written().lend(outcome.state());
      }
    } catch (Throwable t) {
      lifecycle.terminateIfFatal(t);
      throw t;
    }
    lifecycle.stopIfAsked(outcome.stopReason());
  }

  /** The loaded state, or a hosted server's initial one if it has none yet ({@code init}). */
  private S stateOf(StateStore.Loaded<S> loaded) {
    S state = loaded.state();
    return state != null ? state : invoker.initialState();
  }

  /**
   * Runs one callback on {@code loaded} in {@code tx} and writes the state it returns. A failing
   * callback aborts the attempt with its {@link CallbackInvoker.CallbackFailure}; a {@code
   * Result.lock} aborts it with {@code onLock}'s exception. A call's reply ({@code replies} says
   * how it was called) is taken as it is now, and checked as a queued reply would be: one too large
   * aborts the attempt, so nothing is committed, and the call is not queued for a retry (its reply
   * would be as large). With {@code queueable} (an inline call), a visitor's attempt that would
   * create or stop the server aborts with {@link QueueInstead}.
   */
  private Outcome<S> runOnState(
      Transaction tx,
      StateStore.Loaded<S> loaded,
      long start,
      Invocation<S> callback,
      Supplier<RuntimeException> onLock,
      @Nullable String replies,
      boolean queueable) {
    boolean visitor = visiting && queueable;
    if (visitor && loaded.state() == null) {
      throw new QueueInstead("a visitor does not create a server: its holder runs init");
    }
    Result<S> r = callback.run(tx, stateOf(loaded), start);
    if (r.kind() == Result.Kind.LOCK) {
      throw onLock.get();
    }
    if (visitor && r.kind() == Result.Kind.STOP) {
      throw new QueueInstead("a visitor does not stop a server: its holder deactivates it");
    }
    Object reply = replies == null ? null : calls.replyAsOfNow(r.reply(), replies);
    StoredState written = states.write(tx, loaded, r.state());
    return new Outcome<>(
        reply,
        r.state(),
        r.actions(),
        r.kind() == Result.Kind.STOP ? r.reason() : null,
        false,
        written);
  }
}
