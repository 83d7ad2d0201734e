package io.dgen.internal;

import io.dgen.Event;
import io.dgen.LockFencedException;
import io.dgen.Result;
import io.dgen.UndecodableDataException;
import io.dgen.backend.Transaction;
import io.dgen.internal.codec.LockRecord;
import io.dgen.internal.codec.Serde;
import io.dgen.internal.codec.StoredState;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One server's lock mode: taking the lock in a batch, meeting it (waiting for its release or
 * expiry, or busting it after {@code lockTimeout} and re-queueing the message that took it at the
 * head), running {@code handleLocked} outside any transaction, and committing or releasing its
 * outcome only while the lock still carries the holder's token (fencing). A failed run of {@code
 * handleLocked} counts as a failure of its message ({@link DeadLetters#countLockFailure}), so a
 * message that always fails there is dead-lettered at the threshold like any other.
 *
 * <p>Never schedules the consume loop and never decides what a fence or a failure means for the
 * process: {@link #runLocked} reports how it ended (a fence also to the runtime's listener), and
 * the loop acts on it.
 *
 * @param <S> the state type
 * @param <M> the message type
 */
final class LockCoordinator<S, M> {

  private static final Logger log = LoggerFactory.getLogger(LockCoordinator.class);

  /** The message that took the lock in a batch, handed to {@code handleLocked} after the commit. */
  record Held<M>(String token, byte[] envelope, Event<M> event) {}

  /**
   * What a batch found on a locked server: the lock was busted (the batch goes on), or it is held
   * and, with a {@code lockTimeout}, expires at {@code expiresAt} (-1 without one). Every release
   * rings the server's doorbell, so a waiting consumer needs no watch of its own.
   */
  record Meeting(boolean busted, long expiresAt) {}

  /** How a run of {@code handleLocked} ended. */
  enum Ending {
    /** Committed and released: consume on. */
    RELEASED,
    /** The callback or its commit failed; the lock was released and its message re-queued. */
    FAILED,
    /** The lock was busted and taken over meanwhile: the outcome was refused and reported. */
    FENCED,
    /** The result asked the process to stop, and it stopped. */
    STOPPED
  }

  /**
   * An {@link Ending} and, for {@code FAILED} and {@code FENCED}, why; a {@code FAILED} run whose
   * failure reached the dead-letter threshold moved its message to the dead letters.
   */
  record Run(Ending ending, @Nullable Throwable cause, boolean deadLettered) {
    Run(Ending ending, @Nullable Throwable cause) {
      this(ending, cause, false);
    }
  }

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
  private final Optional<Duration> lockTimeout;
  private final LongSupplier wallMillis;
  private final Consumer<LockFencedException> onFenced;
  private final String context;

  LockCoordinator(
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
      Optional<Duration> lockTimeout,
      LongSupplier wallMillis,
      Consumer<LockFencedException> onFenced,
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
    this.lockTimeout = lockTimeout;
    this.wallMillis = wallMillis;
    this.onFenced = onFenced;
    this.context = context;
  }

  /**
   * Starts reading the lock record. The read is serializable, so a lock taken concurrently aborts
   * the reader.
   */
  CompletableFuture<byte @Nullable []> read(Transaction tx) {
    return tx.getAsync(keys.lockKey());
  }

  /**
   * Takes the lock for the message {@code envelope} whose callback returned {@code Result.lock}.
   * The token names the batch's run and attempt ({@link #token}): a replay after {@code
   * commit_unknown_result} hands over exactly the lock the committed attempt wrote, and a lock
   * found later can be told to be this run's.
   */
  Held<M> take(Transaction tx, byte[] envelope, Event<M> event) {
    String token = token(tx);
    tx.set(keys.lockKey(), new LockRecord(token, wallMillis.getAsLong(), envelope).encode());
    return new Held<>(token, envelope, event);
  }

  /** The token of a lock taken in {@code tx}: its run's id and its attempt's number. */
  static String token(Transaction tx) {
    return tx.runId() + "/" + tx.attempt();
  }

  /**
   * The server is locked: bust the lock if it is older than {@code lockTimeout} (re-queueing the
   * message that took it at the head of the queue), else wait for its release or expiry.
   */
  Meeting meet(Transaction tx, byte[] record) {
    LockRecord lock = decode(record);
    if (lockTimeout.isPresent()) {
      long expiresAt = lock.acquiredAt() + lockTimeout.get().toMillis();
      if (wallMillis.getAsLong() >= expiresAt) {
        tx.clear(keys.lockKey());
        queue.requeue(tx, ServerKeys.LANE_HEAD, lock.envelope());
        log.warn(
            "busting a lock held since {} (lockTimeout {} ms); its message is re-queued at the"
                + " head: {} token={}",
            lock.acquiredAt(),
            lockTimeout.get().toMillis(),
            context,
            lock.token());
        return new Meeting(true, -1);
      }
      return new Meeting(false, expiresAt);
    }
    return new Meeting(false, -1);
  }

  /**
   * Runs {@code handleLocked} outside any transaction, then commits its result only while the lock
   * still carries this holder's token (fencing), then runs its actions and honours a stop.
   */
  Run runLocked(Held<M> lock, S state) {
    Result<S> r;
    try {
      r = invoker.handleLocked(lock.event(), state);
    } catch (CallbackInvoker.CallbackFailure failure) {
      return releaseAfterFailure(lock, failure.reason());
    }
    try {
      commits.commit(
          tx -> {
            ensureHeld(tx, lock);
            StateStore.Loaded<S> loaded = states.load(tx, null, false);
            StoredState written = states.write(tx, loaded, r.state());
            tx.clear(keys.lockKey());
            queue.wakeConsumers(tx);
            if (lock.event().from() != null) {
              slots.write(tx, lock.event().from(), slots.ok(r.reply()), null);
            }
            return new StateStore.Written(written);
          });
    } catch (LockFencedException fenced) {
      return fenced(fenced);
    } catch (RuntimeException e) {
      return releaseAfterFailure(lock, e);
    }
    invoker.runActions(r.actions(), r.state());
    if (r.kind() == Result.Kind.STOP) {
      lifecycle.stopIfAsked(r.reason());
      return new Run(Ending.STOPPED, null);
    }
    return new Run(Ending.RELEASED, null);
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
  private Run releaseAfterFailure(Held<M> lock, Throwable cause) {
    Integer attempts;
    try {
      attempts =
          commits.commit(
              tx -> {
                ensureHeld(tx, lock);
                tx.clear(keys.lockKey());
                queue.wakeConsumers(tx);
                return deadLetters.countLockFailure(
                    tx, lock.envelope(), cause, deadLetterThreshold);
              });
    } catch (LockFencedException fenced) {
      fenced.addSuppressed(cause);
      return fenced(fenced);
    } catch (RuntimeException e) {
      cause.addSuppressed(e);
      return new Run(Ending.FAILED, cause);
    }
    int n = attempts == null ? 0 : attempts;
    if (n >= deadLetterThreshold) {
      deadLetters.afterDeadLetter(lock.envelope(), n, null);
      return new Run(Ending.FAILED, cause, true);
    }
    return new Run(Ending.FAILED, cause);
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

  private LockRecord decode(byte[] bytes) {
    try {
      return LockRecord.decode(bytes, serde);
    } catch (RuntimeException e) {
      throw new UndecodableDataException("lock record is not valid: " + context, e);
    }
  }
}
