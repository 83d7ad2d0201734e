package io.dgen.internal.lock;

import io.dgen.Event;
import io.dgen.From;
import io.dgen.LockFencedException;
import io.dgen.backend.KeyValue;
import io.dgen.backend.Transaction;
import io.dgen.internal.base.Lifecycle;
import io.dgen.internal.behaviour.CallbackInvoker;
import io.dgen.internal.calls.ReplySlots;
import io.dgen.internal.codec.Envelope;
import io.dgen.internal.codec.LockRecord;
import io.dgen.internal.codec.Serde;
import io.dgen.internal.commit.CommitRunner;
import io.dgen.internal.keys.ServerKeys;
import io.dgen.internal.limits.ConcurrencyGate;
import io.dgen.internal.lock.LockRuns.Ending;
import io.dgen.internal.lock.LockRuns.Held;
import io.dgen.internal.lock.LockRuns.Pending;
import io.dgen.internal.lock.LockRuns.Run;
import io.dgen.internal.queue.ServerQueue;
import io.dgen.internal.state.StateStore;
import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
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
 * message that always fails there is dead-lettered at the threshold like any other. The holder's
 * side (running {@code handleLocked}, and committing or releasing under the fence) is {@link
 * LockHolder}'s; this class takes, meets, busts and recovers the lock, and tells tokens apart.
 *
 * <p>Never schedules the consume loop and never decides what a fence or a failure means for the
 * process: {@link #runLocked} reports how it ended (a fence also to the runtime's listener), and
 * the loop acts on it.
 *
 * @param <S> the state type
 * @param <M> the message type
 */
public final class LockCoordinator<S, M> {

  private static final Logger log = LoggerFactory.getLogger(LockCoordinator.class);

  /**
   * What a batch found on a locked server: the lock was busted (the batch goes on), or it is held
   * and, with a {@code lockTimeout}, expires at {@code expiresAt} (-1 without one), or it is this
   * process's own ({@code ours}: a batch of this process took it, and did not learn that it had),
   * to be handed to {@code handleLocked}. Every release rings the server's doorbell, so a waiting
   * consumer needs no watch of its own.
   */
  public record Meeting<M>(boolean busted, long expiresAt, @Nullable Held<M> ours) {
    Meeting(boolean busted, long expiresAt) {
      this(busted, expiresAt, null);
    }
  }

  /**
   * Who may hold a hosted server's lock: the members of its tenant's placement, whose liveness this
   * runtime observes (heartbeats). A lock taken by a hosted server's batch names its member in the
   * token, so that a successor can tell a holder whose runtime is gone without a {@code
   * lockTimeout}: that holder can neither release the lock nor commit its outcome (its batches are
   * fenced by the lease it lost), so waiting for it would wait forever.
   */
  public interface Holders {
    /** This runtime's member id, named by the locks it takes. */
    UUID self();

    /** Whether {@code member}'s runtime no longer lives (no record, or a heartbeat stalled). */
    boolean gone(UUID member);

    /** How soon a live holder's liveness is worth looking at again, in milliseconds. */
    long recheckMillis();
  }

  /** Tokens' runs remembered by {@link #take}: enough for every batch a backoff can follow. */
  private static final int REMEMBERED_RUNS = 64;

  private final ServerKeys keys;
  private final Serde serde;
  private final CommitRunner commits;
  private final ServerQueue<M> queue;
  private final Optional<Duration> lockTimeout;
  private final LongSupplier wallMillis;
  private final @Nullable ConcurrencyGate gate;
  private final String context;
  private final LockHolder<S, M> holder;

  /** The runs of this process's batches that took the lock, newest last (bounded). */
  private final Set<UUID> takenBy =
      Collections.newSetFromMap(
          Collections.synchronizedMap(
              new LinkedHashMap<>() {
                @Override
                protected boolean removeEldestEntry(Map.Entry<UUID, Boolean> eldest) {
                  return size() > REMEMBERED_RUNS;
                }
              }));

  private final @Nullable Holders holders;

  public LockCoordinator(
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
      @Nullable Holders holders,
      LongSupplier wallMillis,
      Consumer<LockFencedException> onFenced,
      @Nullable ConcurrencyGate gate,
      String context) {
    this.holders = holders;
    this.gate = gate;
    this.keys = keys;
    this.serde = serde;
    this.commits = commits;
    this.queue = queue;
    this.lockTimeout = lockTimeout;
    this.wallMillis = wallMillis;
    this.context = context;
    this.holder =
        new LockHolder<>(
            keys,
            serde,
            commits,
            states,
            queue,
            slots,
            invoker,
            deadLetters,
            deadLetterThreshold,
            lifecycle,
            onFenced,
            gate,
            context);
  }

  /**
   * Starts reading the lock record. The read is serializable, so a lock taken concurrently aborts
   * the reader.
   */
  public CompletableFuture<byte @Nullable []> read(Transaction tx) {
    return tx.getAsync(keys.lockKey());
  }

  /**
   * Whether the first item a batch peeked is an operator's pause marker ({@link
   * ServerKeys#pauseKey}): then the batch consumes nothing and waits, like one that met a lock with
   * no expiry, until a resume rings the server.
   */
  public boolean paused(List<KeyValue> peeked) {
    return !peeked.isEmpty() && keys.isPauseMarker(peeked.get(0).key());
  }

  /**
   * Takes the lock for the message {@code envelope} whose callback returned {@code Result.lock}.
   * The token names the batch's run and attempt ({@link #token}): a replay after {@code
   * commit_unknown_result} hands over exactly the lock the committed attempt wrote, and a lock
   * found later can be told to be this run's.
   */
  public Held<M> take(Transaction tx, byte[] envelope, Event<M> event) {
    String token = token(tx);
    takenBy.add(tx.runId());
    tx.set(keys.lockKey(), new LockRecord(token, wallMillis.getAsLong(), envelope).encode());
    return new Held<>(token, envelope, event);
  }

  /**
   * The token of a lock taken in {@code tx}: its run's id and its attempt's number, and for a
   * hosted server the member that took it ({@code run/attempt/member}).
   */
  private String token(Transaction tx) {
    String token = tx.runId() + "/" + tx.attempt();
    return holders == null ? token : token + "/" + holders.self();
  }

  /** The member a token of {@link #token} names, or null if it names none. */
  private static @Nullable UUID memberOf(String token) {
    int slash = token.lastIndexOf('/');
    if (slash < 0 || token.indexOf('/') == slash) {
      return null;
    }
    try {
      return UUID.fromString(token.substring(slash + 1));
    } catch (IllegalArgumentException e) {
      return null;
    }
  }

  /** The run a token of {@link #token} names, or null for another kind of token. */
  private static @Nullable UUID runOf(String token) {
    int slash = token.indexOf('/');
    try {
      return slash < 0 ? null : UUID.fromString(token.substring(0, slash));
    } catch (IllegalArgumentException e) {
      return null;
    }
  }

  /** Whether a batch of this process took the lock at some point (it may have left one). */
  public boolean tookAny() {
    return !takenBy.isEmpty();
  }

  /**
   * A lock that a batch of this process took and that is still stored, for a process that stopped
   * with no batch in flight ({@code ConsumeLoop}): one snapshot read of the lock record. Null if
   * the server is unlocked or locked by anyone else.
   */
  public @Nullable Held<M> orphan() {
    return commits.commit(
        tx -> {
          byte[] record = tx.snapshot().get(keys.lockKey());
          if (record == null) {
            return null;
          }
          LockRecord lock = decode(record);
          UUID run = runOf(lock.token());
          return run != null && takenBy.contains(run) ? recovered(tx, lock) : null;
        });
  }

  /**
   * The server is locked: bust the lock if it is older than {@code lockTimeout} (re-queueing the
   * message that took it at the head of the queue), else wait for its release or expiry.
   *
   * @param permits the concurrency limit's slots as the batch read them, or null without a limit
   */
  public Meeting<M> meet(Transaction tx, byte[] record, ConcurrencyGate.@Nullable Slots permits) {
    LockRecord lock = decode(record);
    UUID run = runOf(lock.token());
    if (run != null && takenBy.contains(run)) {
      if (gate != null
          && !Objects.requireNonNull(permits).holds(lock.token(), wallMillis.getAsLong())) {
        // Its permit expired (and may be another server's now): running handleLocked would run
        // it outside the limit, and its commit would be refused for the lost permit, again and
        // again. The message runs again under a permit of its own.
        takenBy.remove(run);
        tx.clear(keys.lockKey());
        queue.requeue(tx, ServerKeys.LANE_HEAD, lock.envelope());
        gate.releaseIfHeld(tx, permits, lock.token());
        log.warn(
            "found a lock that a batch of this process took without learning its outcome, whose"
                + " permit of the concurrency limit {} expired; its message is re-queued at the"
                + " head: {} token={}",
            gate.name(),
            context,
            lock.token());
        return new Meeting<>(true, -1);
      }
      Held<M> ours = recovered(tx, lock);
      if (ours != null) {
        return new Meeting<>(false, -1, ours);
      }
    }
    long now = wallMillis.getAsLong();
    UUID member = holders == null ? null : memberOf(lock.token());
    if (member != null && !member.equals(holders.self()) && holders.gone(member)) {
      bust(tx, lock, permits, "its holder's runtime is gone (member " + member + ")");
      return new Meeting<>(true, -1);
    }
    long expiresAt = -1;
    if (lockTimeout.isPresent()) {
      expiresAt = lock.acquiredAt() + lockTimeout.get().toMillis();
      if (now >= expiresAt) {
        bust(tx, lock, permits, "lockTimeout " + lockTimeout.get().toMillis() + " ms");
        return new Meeting<>(true, -1);
      }
    }
    if (member != null) {
      // a live holder releases with a ring; one that dies does not: look again a lease later (at
      // a boundary of that period, so pushes meanwhile keep one timer)
      long period = Math.max(1, holders.recheckMillis());
      long recheck = (now / period + 1) * period;
      expiresAt = expiresAt < 0 ? recheck : Math.min(expiresAt, recheck);
    }
    return new Meeting<>(false, expiresAt);
  }

  /**
   * Busts {@code lock}: clears it, re-queues the message that took it at the head and gives back
   * its concurrency permit.
   */
  private void bust(
      Transaction tx, LockRecord lock, ConcurrencyGate.@Nullable Slots permits, String why) {
    tx.clear(keys.lockKey());
    queue.requeue(tx, ServerKeys.LANE_HEAD, lock.envelope());
    if (gate != null) {
      // its permit goes with it: given back from the batch's own read of the slots
      gate.releaseIfHeld(tx, Objects.requireNonNull(permits), lock.token());
    }
    log.warn(
        "busting a lock held since {} ({}); its message is re-queued at the head: {} token={}",
        lock.acquiredAt(),
        why,
        context,
        lock.token());
  }

  /**
   * A lock that a batch of this process took although the batch did not learn that its commit had
   * applied (its outcome stayed unknown, or its commit landed after the batch gave up on it): the
   * lock is this process's, so its {@code handleLocked} runs now, on the state as stored. Null if
   * its message no longer decodes (the lock is then met like anyone's).
   */
  private @Nullable Held<M> recovered(Transaction tx, LockRecord lock) {
    try {
      Envelope env = queue.envelope(lock.envelope());
      M message = queue.message(tx, env);
      From from = env.isCall() ? new From(env.slotSeconds(), env.slotId()) : null;
      log.warn(
          "found a lock that a batch of this process took without learning its outcome; running"
              + " its handleLocked now: {} token={}",
          context,
          lock.token());
      return new Held<>(
          lock.token(),
          lock.envelope(),
          new Event<>(from != null ? Event.Type.CALL : Event.Type.CAST, message, from));
    } catch (RuntimeException e) {
      return null;
    }
  }

  /**
   * Runs {@code handleLocked} outside any transaction, then commits its result only while the lock
   * still carries this holder's token (fencing), then runs its actions and honours a stop.
   *
   * @param state the state the lock was taken with, or null to load it as stored
   */
  public Run runLocked(Held<M> lock, @Nullable S state) {
    return holder.run(new Pending<>(lock, state));
  }

  /**
   * Goes on with a run of {@code handleLocked} that ended {@link Ending#UNKNOWN}: until the holder
   * knows how its commit (or release) ended, it tries again, each try first looking for the markers
   * of the ones before. A holder never gives up with its lock still stored: it returns {@code
   * UNKNOWN} again, for its loop to call this after a backoff, for as long as the process lives.
   */
  public @SuppressWarnings("unchecked") Run resume(Pending<?, ?> pending) {
    return holder.run((Pending<S, M>) pending);
  }

  private LockRecord decode(byte[] bytes) {
    return LockHolder.decode(bytes, serde, context);
  }
}
