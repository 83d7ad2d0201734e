package io.dgen;

import com.apple.foundationdb.tuple.Tuple;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/**
 * A handle on one process of a durable server, returned by {@link DGen#start}. Thread-safe.
 *
 * <p>Queued messages ({@link #cast}, {@link #castAll}, {@link #call}) are stored durably before the
 * method returns and processed in FIFO order by the server's consumers, at least once each.
 * Priority messages ({@link #priorityCall}, {@link #priorityCast}, {@link #info}) bypass the queue
 * and the lock and run at once in the caller's thread, in a transaction of their own; a failure is
 * not retried.
 *
 * <p>After {@link #stop} or {@link #kill}, every method but {@link #isAlive}, {@link #termination},
 * {@link #tuid}, {@link #tenant}, {@link #name} and {@link #stop} throws {@link
 * ServerStoppedException}.
 *
 * @param <M> the server's message type
 */
public interface ServerRef<M> {

  /**
   * Enqueues {@code message}; returns once it is durably queued.
   *
   * @param message the message, not null
   * @throws ServerStoppedException if this process was stopped
   */
  void cast(M message);

  /**
   * Enqueues {@code messages} in one transaction, in order: all are queued or none.
   *
   * @param messages the messages, none null
   * @throws ServerStoppedException if this process was stopped
   */
  void castAll(List<? extends M> messages);

  /**
   * Durably schedules a cast of {@code message} once {@code delay} has passed on the runtime's
   * clock; returns once the timer is stored. When due, the timer is moved into the server's queue
   * exactly once (by any runtime watching the tenant) and then processed like any cast. Timers
   * survive restarts; late ones fire at once, in due order. See {@code docs/timers.md}.
   *
   * @param message the message, not null
   * @param delay how long from now; zero or negative fires at once
   * @return the timer's id, for {@link #cancelTimer}
   * @throws IllegalArgumentException if the message's type is not allowed (nothing is stored)
   * @throws ServerStoppedException if this process was stopped
   */
  String castAfter(M message, Duration delay);

  /**
   * Like {@link #castAfter}, due at {@code when} on the runtime's clock.
   *
   * @param message the message, not null
   * @param when the due time; a past one fires at once
   * @return the timer's id, for {@link #cancelTimer}
   * @throws IllegalArgumentException if the message's type is not allowed (nothing is stored)
   */
  String castAt(M message, Instant when);

  /**
   * Cancels a pending timer of this server, from any runtime.
   *
   * @param timerId an id returned by {@code castAfter}/{@code castAt}
   * @return true if the timer was pending and is now cancelled; false if it fired already, was
   *     cancelled, or is not this server's
   * @throws IllegalArgumentException if {@code timerId} is not a timer id at all
   */
  boolean cancelTimer(String timerId);

  /**
   * Sends a call and waits for the reply, at most the process's default call timeout (5 s unless
   * {@link StartOptions.Builder#callTimeout} says otherwise).
   *
   * <p>With {@code consumeK == 1}, a call that finds the queue empty and the server unlocked runs
   * inline, in the caller's own transaction. Otherwise it is queued: a reply slot is written, a
   * consumer runs {@code handleCall} and writes the reply into the slot, and the caller, listening
   * on its tenant's doorbell (no watch of its own), gets the reply.
   *
   * @param request the request, not null
   * @param <R> the reply type
   * @return the reply
   * @throws CallTimeoutException if no reply came in time (the call still executes)
   * @throws CallbackException if an inline {@code handleCall} threw (the call is then queued and
   *     retried by consumers, its reply dropped)
   * @throws DeadLetterException if the call was dead-lettered
   * @throws ServerStoppedException if this process was stopped or the server was killed
   */
  <R> R call(M request);

  /**
   * Like {@link #call(Object)} with an explicit timeout.
   *
   * @param request the request, not null
   * @param timeout how long to wait, positive
   * @param <R> the reply type
   * @return the reply
   */
  <R> R call(M request, Duration timeout);

  /**
   * Like {@link #call(Object, Duration)}, decoding the reply as {@code replyType}.
   *
   * @param request the request, not null
   * @param replyType the reply's class
   * @param timeout how long to wait, positive
   * @param <R> the reply type
   * @return the reply
   */
  <R> R call(M request, Class<R> replyType, Duration timeout);

  /**
   * Sends a call and returns a future of its reply, with the default call timeout. Never blocks a
   * thread while waiting, neither for the push's commit nor for the reply: it may return before the
   * call is queued, so calls in flight together are concurrent (one whose push is retried may be
   * queued after a message sent later). Wait for the future before sending what must follow it.
   *
   * @param request the request, not null
   * @param <R> the reply type
   * @return a future of the reply, failing with the exceptions {@link #call} throws
   */
  <R> CompletableFuture<R> callAsync(M request);

  /**
   * Sends a call and returns a future of its reply.
   *
   * @param request the request, not null
   * @param timeout how long to wait, positive
   * @param <R> the reply type
   * @return a future of the reply, failing with the exceptions {@link #call} throws
   */
  <R> CompletableFuture<R> callAsync(M request, Duration timeout);

  /**
   * Runs {@code handleCall} at once in its own transaction, bypassing the queue and any lock. It
   * gives up ordering with queued messages: use it for urgent, usually read-only work. While the
   * server is locked it may read the state but not change it.
   *
   * @param request the request, not null
   * @param <R> the reply type
   * @return the reply
   * @throws CallbackException if {@code handleCall} threw (nothing was committed)
   * @throws ServerLockedException if the server is locked and {@code handleCall} changed the state
   *     (nothing was committed)
   */
  <R> R priorityCall(M request);

  /**
   * Runs {@code handleCast} at once in its own transaction, bypassing the queue and any lock. While
   * the server is locked it may read the state but not change it.
   *
   * @param message the message, not null
   * @throws CallbackException if {@code handleCast} threw (nothing was committed)
   * @throws ServerLockedException if the server is locked and {@code handleCast} changed the state
   *     (nothing was committed)
   */
  void priorityCast(M message);

  /**
   * Runs {@code handleInfo} at once in its own transaction, bypassing the queue and any lock. The
   * info object is never stored, so it may be of any type. While the server is locked it may read
   * the state but not change it.
   *
   * @param info the info, not null
   * @throws CallbackException if {@code handleInfo} threw (nothing was committed)
   * @throws ServerLockedException if the server is locked and {@code handleInfo} changed the state
   *     (nothing was committed)
   */
  void info(Object info);

  /**
   * Returns an {@link Outbox} for enqueueing inside transactions of your own.
   *
   * @return the outbox
   */
  Outbox<M> outbox();

  /**
   * Returns the number of queued messages (pushes minus pops, read as a snapshot).
   *
   * @return the queue length
   */
  long queueLength();

  /** The server's identity tuple. */
  Tuple tuid();

  /** The server's tenant. */
  Tenant tenant();

  /** The name this process is registered under, if any. */
  Optional<String> name();

  /** True until this process is stopped or the server killed. */
  boolean isAlive();

  /**
   * Returns a future that completes when this process stops: after {@link #stop}, {@link #kill}, a
   * {@code Result.stop}, or once it finds its server killed. A lock holder whose lock was busted
   * does not stop: its late commit is refused with {@link LockFencedException}, which is logged and
   * reported to the {@link DGenListener}, and the process goes on consuming.
   *
   * @return the termination future
   */
  CompletableFuture<Void> termination();

  /**
   * Lists the server's dead letters, oldest first.
   *
   * @return the dead letters
   */
  List<DeadLetter<M>> deadLetters();

  /**
   * Moves a dead letter back into the queue, at its head (processed next) or at its tail, with a
   * fresh failure count. A call is re-queued without its original caller, whose reply is dropped.
   *
   * @param id the dead letter's id
   * @param head true to put it at the head of the queue
   * @return true if it existed
   */
  boolean requeueDeadLetter(String id, boolean head);

  /**
   * Deletes one dead letter.
   *
   * @param id the dead letter's id
   * @return true if it existed
   */
  boolean purgeDeadLetter(String id);

  /**
   * Deletes every dead letter of the server.
   *
   * @return how many there were
   */
  int purgeDeadLetters();

  /**
   * Stops this process. The durable state and queue are kept; another process (or a later {@link
   * DGen#start}) carries on. Idempotent.
   */
  void stop();

  /**
   * Deletes the server's durable state, queue, reply slots, dead letters and pending timers, then
   * stops its processes in this {@link DGen}. Waiting callers fail with {@link
   * ServerStoppedException}.
   *
   * @param reason why (logged)
   */
  void kill(Object reason);
}
