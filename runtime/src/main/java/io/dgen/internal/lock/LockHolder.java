package io.dgen.internal.lock;

import io.dgen.From;
import io.dgen.LockFencedException;
import io.dgen.Result;
import io.dgen.UndecodableDataException;
import io.dgen.backend.BackendException;
import io.dgen.backend.Transaction;
import io.dgen.internal.base.Lifecycle;
import io.dgen.internal.behaviour.CallbackInvoker;
import io.dgen.internal.calls.ReplySlots;
import io.dgen.internal.codec.Envelope;
import io.dgen.internal.codec.LockRecord;
import io.dgen.internal.codec.Serde;
import io.dgen.internal.codec.StoredState;
import io.dgen.internal.commit.CommitRunner;
import io.dgen.internal.keys.ServerKeys;
import io.dgen.internal.limits.ConcurrencyGate;
import io.dgen.internal.lock.LockRuns.Ending;
import io.dgen.internal.lock.LockRuns.Held;
import io.dgen.internal.lock.LockRuns.Pending;
import io.dgen.internal.lock.LockRuns.Run;
import io.dgen.internal.observe.Tracing;
import io.dgen.internal.queue.ServerQueue;
import io.dgen.internal.state.StateStore;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.CancellationException;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The holder's side of one server's lock, for its {@link LockCoordinator}: runs {@code
 * handleLocked} outside any transaction, and commits or releases its outcome only while the lock
 * still carries the holder's token (fencing). A failed run of {@code handleLocked} counts as a
 * failure of its message ({@link DeadLetters#countLockFailure}), so a message that always fails
 * there is dead-lettered at the threshold like any other.
 *
 * <p>Never decides what a fence or a failure means for the process: a run reports how it ended (a
 * fence also to the runtime's listener), and the consume loop acts on it.
 *
 * @param <S> the state type
 * @param <M> the message type
 */
final class LockHolder<S, M> {

  private static final Logger log = LoggerFactory.getLogger(LockHolder.class);

  private final ServerKeys keys;
  private final Serde serde;
  private final CommitRunner commits;
  private final StateStore<S> states;
  private final ServerQueue<M> queue;
  private final ReplySlots slots;
  private final CallbackInvoker<S, M> invoker;
  private final DeadLetters<M> deadLetters;
  private final int deadLetterThreshold;
  private final Lifecycle lifecycle;
  private final Consumer<LockFencedException> onFenced;
  private final @Nullable ConcurrencyGate gate;
  private final String context;

  LockHolder(
      ServerKeys keys,
      Serde serde,
      CommitRunner commits,
      StateStore<S> states,
      ServerQueue<M> queue,
      ReplySlots slots,
      CallbackInvoker<S, M> invoker,
      DeadLetters<M> deadLetters,
      int deadLetterThreshold,
      Lifecycle lifecycle,
      Consumer<LockFencedException> onFenced,
      @Nullable ConcurrencyGate gate,
      String context) {
    this.keys = keys;
    this.serde = serde;
    this.commits = commits;
    this.states = states;
    this.queue = queue;
    this.slots = slots;
    this.invoker = invoker;
    this.deadLetters = deadLetters;
    this.deadLetterThreshold = deadLetterThreshold;
    this.lifecycle = lifecycle;
    this.onFenced = onFenced;
    this.gate = gate;
    this.context = context;
  }

  /**
   * Runs {@code p}, or goes on with it: see {@code LockCoordinator.runLocked} and {@code
   * LockCoordinator.resume}.
   */
  Run run(Pending<S, M> p) {
    // handleLocked and the actions of its result run in the trace of the message that locked
    try (Tracing.Span span =
        queue.traces().process("handleLocked", traceOf(p.lock), Tracing.Span.NONE, p.lock::token)) {
      return resume(p, span);
    }
  }

  /** The trace context of the message that took the lock; null if none (or it does not decode). */
  private Envelope.@Nullable Trace traceOf(Held<M> lock) {
    try {
      return queue.envelope(lock.envelope()).trace();
    } catch (RuntimeException e) {
      return null; // its failure is counted where the item is decoded, not here
    }
  }

  private Run resume(Pending<S, M> p, Tracing.Span span) {
    if (p.state == null) {
      try {
        p.state = commits.commit(tx -> states.load(tx, null, false).state());
      } catch (RuntimeException e) {
        return unknown(p, e);
      }
    }
    if (p.result == null && p.failure == null && p.refusal == null) {
      try {
        p.result = invoker.handleLocked(p.lock.event(), Objects.requireNonNull(p.state));
      } catch (CallbackInvoker.Refused refused) {
        p.refusal = refused.refusal(); // committed as a result is: only while the lock is ours
        span.failed(refused.refusal());
      } catch (CallbackInvoker.CallbackFailure failure) {
        p.failure = failure.reason();
        span.failed(failure.reason());
      }
    }
    return p.failure == null ? commitResult(p) : release(p);
  }

  /**
   * What a try of a commit or release of {@link Pending} found or did: an earlier try that had
   * committed (whether it was the release), or this one's failure count, or the state it wrote.
   */
  private record Tried(
      @Nullable Boolean earlierWasRelease, int attempts, @Nullable StoredState written)
      implements CommitRunner.WritesState {}

  /**
   * Commits handleLocked's result while the lock is still ours; or its refusal, which releases the
   * lock without a state change or actions (the state committed with the lock stays) and tells a
   * call's caller.
   */
  private Run commitResult(Pending<S, M> p) {
    io.dgen.TerminalException refusal = p.refusal;
    Result<S> r = refusal == null ? Objects.requireNonNull(p.result) : null;
    Held<M> lock = p.lock;
    From from = lock.event().from();
    Tried tried;
    try {
      tried =
          commits.commit(
              tx -> {
                Tried earlier = earlier(tx, p, false);
                if (earlier != null) {
                  return earlier;
                }
                ensureHeld(tx, lock);
                if (gate != null) {
                  gate.release(tx, lock.token(), context);
                }
                StoredState written = null;
                if (r != null) {
                  StateStore.Loaded<S> loaded = states.load(tx, null, false);
                  written = states.write(tx, loaded, r.state());
                }
                tx.clear(keys.lockKey());
                queue.wakeConsumers(tx);
                if (from != null) {
                  slots.write(
                      tx,
                      from,
                      r != null
                          ? slots.ok(r.reply())
                          : ReplySlots.rejected(String.valueOf(refusal.getMessage())),
                      null);
                }
                return new Tried(null, 0, written);
              });
    } catch (LockFencedException fenced) {
      return fenced(fenced);
    } catch (ConcurrencyGate.Lost lost) {
      return permitLost(lock, lost);
    } catch (RuntimeException e) {
      if (isClusterTrouble(e)) {
        return unknown(p, e);
      }
      p.failure = e; // the result cannot be committed: the message's failure
      return release(p);
    }
    if (tried != null && Boolean.TRUE.equals(tried.earlierWasRelease())) {
      return released(p, tried.attempts());
    }
    // A state write's stamp is not known when an earlier run committed it: the cache reloads.
    if (tried != null && tried.earlierWasRelease() != null) {
      states.invalidate();
    }
    if (r == null) {
      if (from == null) {
        invoker.castRefused(lock.event().message(), Objects.requireNonNull(refusal));
      }
      return new Run(Ending.RELEASED, null);
    }
    invoker.runActions(r.actions(), r.state());
    if (r.kind() == Result.Kind.STOP) {
      lifecycle.stopIfAsked(r.reason());
      return new Run(Ending.STOPPED, null);
    }
    return new Run(Ending.RELEASED, null);
  }

  /**
   * The earlier try of {@code p} that committed, if any: its markers are read serializably (a late
   * commit of one then conflicts with this try); else this try is recorded as one that may commit.
   */
  private @Nullable Tried earlier(Transaction tx, Pending<S, M> p, boolean release) {
    UUID committed = commits.committedEarlier(tx, p.tried.keySet());
    if (committed != null) {
      boolean wasRelease = p.tried.get(committed);
      return new Tried(wasRelease, wasRelease ? failureCount(p) : 0, null);
    }
    p.tried.put(tx.runId(), release);
    return null;
  }

  private int failureCount(Pending<S, M> p) {
    return queue.envelope(p.lock.envelope()).failures() + 1;
  }

  private void ensureHeld(Transaction tx, Held<M> lock) {
    byte[] current = tx.get(keys.lockKey());
    if (current == null || !decode(current).token().equals(lock.token())) {
      throw new LockFencedException(
          "lock was busted and taken over while handleLocked ran; its result is refused: "
              + context
              + " token="
              + lock.token());
    }
  }

  /**
   * handleLocked (or its commit) failed: if the lock is still ours, release it and count the
   * failure against its message, which is re-queued at the head, or dead-lettered at the threshold.
   */
  private Run release(Pending<S, M> p) {
    Held<M> lock = p.lock;
    Throwable cause = Objects.requireNonNull(p.failure);
    Tried tried;
    try {
      tried =
          commits.commit(
              tx -> {
                Tried earlier = earlier(tx, p, true);
                if (earlier != null) {
                  return earlier;
                }
                ensureHeld(tx, lock);
                tx.clear(keys.lockKey());
                if (gate != null) {
                  gate.releaseIfHeld(tx, lock.token());
                }
                queue.wakeConsumers(tx);
                return new Tried(
                    null,
                    deadLetters.countLockFailure(tx, lock.envelope(), cause, deadLetterThreshold),
                    null);
              });
    } catch (LockFencedException fenced) {
      fenced.addSuppressed(cause);
      return fenced(fenced);
    } catch (RuntimeException e) {
      cause.addSuppressed(e);
      return unknown(p, e);
    }
    if (tried != null && Boolean.FALSE.equals(tried.earlierWasRelease())) {
      // an earlier try of the result's (or the refusal's) commit had applied after all
      p.failure = null;
      states.invalidate();
      return commitResult(p);
    }
    return released(p, tried == null ? 0 : tried.attempts());
  }

  /** The lock was released after a failure counted {@code attempts} times. */
  private Run released(Pending<S, M> p, int attempts) {
    Throwable cause =
        p.failure != null
            ? p.failure
            : new IllegalStateException("handleLocked failed: " + context);
    if (attempts >= deadLetterThreshold) {
      deadLetters.afterDeadLetter(p.lock.envelope(), attempts, null);
      return new Run(Ending.FAILED, cause, true, null);
    }
    return new Run(Ending.FAILED, cause);
  }

  /** The holder could not learn how its try ended: the pending run goes on after a backoff. */
  private Run unknown(Pending<S, M> p, Throwable cause) {
    return new Run(Ending.UNKNOWN, cause, false, p);
  }

  /**
   * Whether {@code e}, which ended a commit of the holder, is the cluster's trouble (the holder
   * tries again, its lock held meanwhile) rather than its message's (a result that cannot be
   * committed: the message's failure, and the lock is released).
   */
  private static boolean isClusterTrouble(Throwable e) {
    if (e instanceof BackendException be) {
      return !CallbackInvoker.isLimitError(be);
    }
    return e instanceof CancellationException;
  }

  /**
   * The holder's concurrency permit expired and was taken by another server while its lock stayed
   * its own: the outcome is refused as for a busted lock, and the lock released with its message
   * re-queued at the head, to run again under a permit.
   */
  private Run permitLost(Held<M> lock, ConcurrencyGate.Lost lost) {
    LockFencedException fenced = new LockFencedException(lost.getMessage());
    try {
      commits.commit(
          tx -> {
            ensureHeld(tx, lock);
            tx.clear(keys.lockKey());
            queue.requeue(tx, ServerKeys.LANE_HEAD, lock.envelope());
            queue.wakeConsumers(tx);
            return null;
          });
    } catch (RuntimeException e) {
      // busted meanwhile, or the release failed: a batch of this process that meets the lock
      // re-queues its message (its permit is gone), or anyone busts it at its expiry
      fenced.addSuppressed(e);
    }
    return fenced(fenced);
  }

  /**
   * The holder's outcome was refused: whoever busted the lock runs the message again. The result is
   * discarded and the process stays in service; the fence is logged and reported.
   */
  private Run fenced(LockFencedException fenced) {
    log.warn(
        "{}; this process goes on consuming (handleLocked outlived lockTimeout, and the consumer"
            + " that busted the lock runs its message again)",
        fenced.getMessage());
    onFenced.accept(fenced);
    return new Run(Ending.FENCED, fenced);
  }

  /** Decodes a lock record of the server {@code context} names. */
  static LockRecord decode(byte[] bytes, Serde serde, String context) {
    try {
      return LockRecord.decode(bytes, serde);
    } catch (RuntimeException e) {
      throw new UndecodableDataException("lock record is not valid: " + context, e);
    }
  }

  private LockRecord decode(byte[] bytes) {
    return decode(bytes, serde, context);
  }
}
