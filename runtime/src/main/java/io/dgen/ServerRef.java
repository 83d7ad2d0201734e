package io.dgen;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.backend.Futures;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/**
 * What a client of a durable server holds: a handle to send it casts and calls, from any runtime.
 * {@link DGen#ref} makes one for a server addressed by id, {@link DGen#start} returns one ({@link
 * ProcessRef}) for a process it started. What inspects or destroys a server (its queue length, dead
 * letters, kill) is in {@link io.dgen.admin.ServerControl}. Thread-safe.
 *
 * <p>Queued messages ({@link #cast}, {@link #castAll}, {@link #call}) are stored durably before the
 * method returns and processed in FIFO order by the server's consumers, at least once each.
 * Priority messages ({@link #priorityCall}, {@link #priorityCast}, {@link #info}) bypass the queue
 * and the lock and run at once in the caller's thread, in a transaction of their own; a failure is
 * not retried.
 *
 * <p>Every operation that takes a message (the outbox's too) refuses, with {@link
 * IllegalArgumentException} and before anything is written, one that is not of the server's message
 * type: the {@link Kind}'s for a ref of a kind ({@link DGen#ref(Tenant, Kind, String)}), else the
 * type the behaviour declares. A null message fails at once with {@link NullPointerException}.
 *
 * <p>Once its server is killed ({@link io.dgen.admin.ServerControl#kill}), or the process a {@link
 * ProcessRef} names is stopped, every method but {@link #tuid}, {@link #tenant} and {@link #name}
 * throws {@link ServerStoppedException} (a future fails with it).
 *
 * <p>Every exception a method throws, or its future fails with, is a {@link DGenException}, except
 * argument errors ({@link IllegalArgumentException}, {@link NullPointerException}) and a fatal
 * {@link Error}. A failure of the backend is a {@link BackendFailureException} carrying the
 * backend's error. A message its handler refused ({@link TerminalException}) fails a call, priority
 * message or info with {@link CallRejectedException}; a refused cast is not reported to its sender
 * (see {@link DGenListener#castRefused}).
 *
 * <p>Every operation that waits for the store has a non-blocking twin ending in {@code Async}
 * ({@link #castAsync(Object)}, {@link #submitAsync}, {@link #callAsync(Call)}, ...): it returns a
 * future at once, holds no thread while the store works, and completes with what the blocking form
 * returns or fails with what it throws; the blocking form is that future, waited for. Bad arguments
 * throw at once in both forms; a stopped process fails the future. A future may be completed by the
 * caller's thread, a runtime thread or the backend's callback thread: keep what you chain to it
 * short and non-blocking, or use the {@code Async} variants of {@link CompletableFuture} with an
 * executor of yours (see {@code docs/async.md}).
 *
 * @param <M> the server's message type
 */
public interface ServerRef<M> {

  /**
   * Enqueues {@code message}; returns once it is durably queued.
   *
   * <p>Its handler may refuse it ({@link TerminalException}): the cast is then dropped, logged and
   * reported to {@link DGenListener#castRefused}, not to the sender.
   *
   * @param message the message, not null
   * @throws IllegalArgumentException if the message is a {@link Call}, whose reply a cast would
   *     drop (nothing is written; so for every cast form)
   * @throws ServerStoppedException if this process was stopped
   * @throws OperationTimeoutException if the cluster did not answer within the operation timeout
   *     ({@link DGen.Builder#operationTimeout}); the outcome is unknown
   * @throws BackendFailureException if the backend failed the push (the message says whether it may
   *     have committed)
   */
  default void cast(M message) {
    Futures.joinBounded(castAsync(message));
  }

  /**
   * Enqueues {@code message} without blocking: the future completes once it is durably queued.
   * Casts in flight together are concurrent: one whose commit is retried may be queued after a cast
   * sent later. Wait for the future before sending what must follow it.
   *
   * @param message the message, not null
   * @return a future completing once the message is queued, failing with the exceptions {@link
   *     #cast(Object)} throws
   */
  CompletableFuture<Void> castAsync(M message);

  /**
   * Enqueues {@code messages} in one transaction, in order: all are queued or none.
   *
   * @param messages the messages, none null
   * @throws ServerStoppedException if this process was stopped
   * @throws OperationTimeoutException if the cluster did not answer within the operation timeout
   *     ({@link DGen.Builder#operationTimeout}); the outcome is unknown
   */
  default void castAll(List<? extends M> messages) {
    Futures.joinBounded(castAllAsync(messages));
  }

  /**
   * Enqueues {@code messages} in one transaction, in order, without blocking.
   *
   * @param messages the messages, none null
   * @return a future completing once all are queued, failing with the exceptions {@link #castAll}
   *     throws
   */
  CompletableFuture<Void> castAllAsync(List<? extends M> messages);

  /**
   * Durably schedules a cast of {@code message} once {@code delay} has passed on the runtime's
   * clock; returns once the timer is stored. When due, the timer is moved into the server's queue
   * exactly once (by a runtime that fires its bucket's timers: the holder of a hosted server's
   * bucket, or a runtime with a started process in it) and then processed like any cast. Timers
   * survive restarts; late ones fire at once, in due order. See {@code docs/timers.md}.
   *
   * @param message the message, not null
   * @param delay how long from now; zero or negative fires at once
   * @return the timer's id, for {@link #cancelTimer}
   * @throws IllegalArgumentException if the message's type is not allowed (nothing is stored)
   * @throws ServerStoppedException if this process was stopped
   * @throws OperationTimeoutException if the cluster did not answer within the operation timeout
   *     ({@link DGen.Builder#operationTimeout}); the outcome is unknown
   */
  default String castAfter(M message, Duration delay) {
    return Futures.joinBounded(castAfterAsync(message, delay));
  }

  /**
   * {@link #castAfter} without blocking.
   *
   * @param message the message, not null
   * @param delay how long from now; zero or negative fires at once
   * @return a future of the timer's id, completing once the timer is stored, failing with the
   *     exceptions {@link #castAfter} throws
   */
  CompletableFuture<String> castAfterAsync(M message, Duration delay);

  /**
   * Like {@link #castAfter}, due at {@code when} on the runtime's clock.
   *
   * @param message the message, not null
   * @param when the due time; a past one fires at once
   * @return the timer's id, for {@link #cancelTimer}
   * @throws IllegalArgumentException if the message's type is not allowed (nothing is stored)
   * @throws OperationTimeoutException if the cluster did not answer within the operation timeout
   *     ({@link DGen.Builder#operationTimeout}); the outcome is unknown
   */
  default String castAt(M message, Instant when) {
    return Futures.joinBounded(castAtAsync(message, when));
  }

  /**
   * {@link #castAt} without blocking.
   *
   * @param message the message, not null
   * @param when the due time; a past one fires at once
   * @return a future of the timer's id, completing once the timer is stored
   */
  CompletableFuture<String> castAtAsync(M message, Instant when);

  /**
   * Durably schedules a cast of {@code message} every {@code period} on the runtime's clock, the
   * first once {@code period} has passed; returns once the timer is stored. Each firing moves the
   * message into the server's queue and re-arms the timer at its next due time in one transaction,
   * exactly once, as for {@link #castAfter}. It repeats until {@link #cancelTimer cancelled} or the
   * server is killed. Misfire: a timer late by more than one period (no runtime was up) fires once
   * and keeps its phase (the next firing is the first {@code first + k * period} after now). See
   * {@code docs/timers.md}.
   *
   * @param message the message, not null
   * @param period the time between firings, at least one microsecond
   * @return the timer's id, the same for every firing, for {@link #cancelTimer}
   * @throws IllegalArgumentException if {@code period} is zero or negative, or the message's type
   *     is not allowed (nothing is stored)
   * @throws ServerStoppedException if this process was stopped
   * @throws OperationTimeoutException if the cluster did not answer within the operation timeout
   *     ({@link DGen.Builder#operationTimeout}); the outcome is unknown
   */
  default String castEvery(M message, Duration period) {
    return Futures.joinBounded(castEveryAsync(message, period));
  }

  /**
   * {@link #castEvery} without blocking.
   *
   * @param message the message, not null
   * @param period the time between firings, at least one microsecond
   * @return a future of the timer's id, completing once the timer is stored
   * @throws IllegalArgumentException if {@code period} is zero or negative
   */
  CompletableFuture<String> castEveryAsync(M message, Duration period);

  /**
   * Durably schedules a cast of {@code message} at the times the cron expression {@code cron} names
   * in {@code zone}, as {@link #castEvery} does. The expression has the five fields of Unix cron:
   * minute, hour, day of month, month, day of week ({@code "30 2 * * *"}, {@code "0 9 * *
   * MON-FRI"}). Misfire: a firing late by more than one occurrence fires once, and the next is the
   * first occurrence after now. Daylight-saving changes: a local time that does not exist that day
   * does not fire; one that occurs twice fires once (see {@code docs/timers.md}).
   *
   * @param message the message, not null
   * @param cron a five-field cron expression
   * @param zone the zone its times are read in
   * @return the timer's id, the same for every firing, for {@link #cancelTimer}
   * @throws IllegalArgumentException if {@code cron} does not parse or never fires, or the
   *     message's type is not allowed (nothing is stored)
   * @throws ServerStoppedException if this process was stopped
   * @throws OperationTimeoutException if the cluster did not answer within the operation timeout
   *     ({@link DGen.Builder#operationTimeout}); the outcome is unknown
   */
  default String castCron(M message, String cron, ZoneId zone) {
    return Futures.joinBounded(castCronAsync(message, cron, zone));
  }

  /**
   * {@link #castCron} without blocking.
   *
   * @param message the message, not null
   * @param cron a five-field cron expression
   * @param zone the zone its times are read in
   * @return a future of the timer's id, completing once the timer is stored
   * @throws IllegalArgumentException if {@code cron} does not parse or never fires
   */
  CompletableFuture<String> castCronAsync(M message, String cron, ZoneId zone);

  /**
   * Cancels a pending timer of this server, from any runtime.
   *
   * @param timerId an id returned by {@code castAfter}, {@code castAt}, {@code castEvery} or {@code
   *     castCron}
   * @return true if the timer was pending and is now cancelled (a recurring one never fires again);
   *     false if it fired already, was cancelled, or is not this server's
   * @throws IllegalArgumentException if {@code timerId} is not a timer id at all
   */
  default boolean cancelTimer(String timerId) {
    return Futures.joinBounded(cancelTimerAsync(timerId));
  }

  /**
   * {@link #cancelTimer} without blocking.
   *
   * @param timerId an id returned by {@code castAfter}/{@code castAt}
   * @return a future of whether the timer was pending and is now cancelled
   * @throws IllegalArgumentException if {@code timerId} is not a timer id at all
   */
  CompletableFuture<Boolean> cancelTimerAsync(String timerId);

  /**
   * Sends a call and waits for the reply, at most the process's default call timeout (5 s unless
   * {@link ServerOptions.Builder#callTimeout} says otherwise). The reply's type is the one the
   * request's class names ({@code record Withdraw(long amount) implements AccountMsg,
   * Call<Withdrawn>}), so a wrong one does not compile.
   *
   * <p>With {@code consumeK == 1}, a call that finds the queue empty and the server unlocked runs
   * inline, in the caller's own transaction. Otherwise it is queued: a reply slot is written, a
   * consumer runs {@code handleCall} and writes the reply into the slot, and the caller, listening
   * on the doorbell of the server's bucket (no watch of its own), gets the reply. A hosted server's
   * call runs inline only in the runtime that holds it.
   *
   * @param request the request, not null; of this server's message type
   * @param <R> the reply type
   * @return the reply
   * @throws IllegalArgumentException if the request is not of this server's message type (nothing
   *     was written)
   * @throws CallTimeoutException if no reply came in time (the call still executes)
   * @throws CallRejectedException if {@code handleCall} refused the call ({@link
   *     TerminalException}): nothing of it was committed, and it is not retried
   * @throws CallbackException if an inline {@code handleCall} threw (the call is then queued and
   *     retried by consumers, its reply dropped)
   * @throws DeadLetterException if the call was dead-lettered
   * @throws ServerStoppedException if this process was stopped or the server was killed
   * @throws OperationTimeoutException if the cluster did not answer within the operation timeout
   *     ({@link DGen.Builder#operationTimeout}); the outcome is unknown
   * @throws BackendFailureException if the backend failed the call's transaction
   */
  default <R> R call(Call<R> request) {
    return awaitCall(callAsync(request));
  }

  /**
   * Like {@link #call(Call)} with an explicit timeout.
   *
   * @param request the request, not null
   * @param timeout how long to wait, positive
   * @param <R> the reply type
   * @return the reply
   * @throws CallRejectedException if {@code handleCall} refused the call
   */
  default <R> R call(Call<R> request, Duration timeout) {
    return awaitCall(callAsync(request, timeout));
  }

  /**
   * A call whose reply type is picked at run time: the request need not be a {@link Call}, and the
   * reply is decoded as {@code replyType} and checked against it.
   *
   * @param request the request, not null
   * @param replyType the reply's class
   * @param timeout how long to wait, positive
   * @param <R> the reply type
   * @return the reply
   * @throws UndecodableDataException if the reply does not decode as {@code replyType}
   * @throws CallRejectedException if {@code handleCall} refused the call
   */
  default <R> R call(M request, Class<R> replyType, Duration timeout) {
    return awaitCall(callAsync(request, replyType, timeout));
  }

  /**
   * Sends a call and returns a future of its reply, with the default call timeout. Never blocks a
   * thread while waiting, neither for the push's commit nor for the reply: it may return before the
   * call is queued, so calls in flight together are concurrent (one whose push is retried may be
   * queued after a message sent later). Wait for the future before sending what must follow it.
   *
   * @param request the request, not null
   * @param <R> the reply type
   * @return a future of the reply, failing with the exceptions {@link #call(Call)} throws
   */
  <R> CompletableFuture<R> callAsync(Call<R> request);

  /**
   * Sends a call and returns a future of its reply.
   *
   * @param request the request, not null
   * @param timeout how long to wait, positive
   * @param <R> the reply type
   * @return a future of the reply, failing with the exceptions {@link #call(Call)} throws
   */
  <R> CompletableFuture<R> callAsync(Call<R> request, Duration timeout);

  /**
   * {@link #call(Object, Class, Duration)} without blocking.
   *
   * @param request the request, not null
   * @param replyType the reply's class
   * @param timeout how long to wait, positive
   * @param <R> the reply type
   * @return a future of the reply
   */
  <R> CompletableFuture<R> callAsync(M request, Class<R> replyType, Duration timeout);

  /**
   * Runs {@code handleCall} at once in its own transaction, bypassing the queue and any lock. It
   * gives up ordering with queued messages: use it for urgent, usually read-only work. While the
   * server is locked it may read the state but not change it.
   *
   * @param request the request, not null
   * @param <R> the reply type
   * @return the reply
   * @throws CallbackException if {@code handleCall} threw (nothing was committed)
   * @throws CallRejectedException if {@code handleCall} refused the call ({@link
   *     TerminalException}; nothing was committed)
   * @throws ServerLockedException if the server is locked and {@code handleCall} changed the state
   *     (nothing was committed)
   */
  <R> R priorityCall(Call<R> request);

  /**
   * Runs {@code handleCast} at once in its own transaction, bypassing the queue and any lock. While
   * the server is locked it may read the state but not change it.
   *
   * @param message the message, not null
   * @throws CallbackException if {@code handleCast} threw (nothing was committed)
   * @throws CallRejectedException if {@code handleCast} refused the message ({@link
   *     TerminalException}; nothing was committed)
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
   * @throws CallRejectedException if {@code handleInfo} refused the info ({@link
   *     TerminalException}; nothing was committed)
   * @throws ServerLockedException if the server is locked and {@code handleInfo} changed the state
   *     (nothing was committed)
   */
  void info(Object info);

  /**
   * Enqueues {@code message} unless a message with the same {@code idempotencyKey} was queued to
   * this server within its retention window ({@link ServerOptions.Builder#idempotencyRetention},
   * default 24 h); returns once the outcome is durable. The check is exact (one transactional read
   * of the key) and safe under {@code commit_unknown_result}: retry with the same key as often as
   * you like, the message is queued once.
   *
   * @param message the message, not null
   * @param idempotencyKey an opaque key, 1 to 256 bytes in UTF-8, unique per message to this server
   * @return true if this call queued the message, false if the key had queued it already
   * @throws IllegalArgumentException if the key is longer than 256 bytes (nothing is stored)
   * @throws ServerStoppedException if this process was stopped
   */
  default boolean cast(M message, String idempotencyKey) {
    return Futures.joinBounded(castAsync(message, idempotencyKey));
  }

  /**
   * The keyed {@link #cast(Object, String)} without blocking.
   *
   * @param message the message, not null
   * @param idempotencyKey an opaque key, 1 to 256 bytes in UTF-8, unique per message to this server
   * @return a future of whether this call queued the message (false: the key had queued it)
   * @throws IllegalArgumentException if the key is longer than 256 bytes (nothing is stored)
   */
  CompletableFuture<Boolean> castAsync(M message, String idempotencyKey);

  /**
   * Sends a call that runs once per {@code idempotencyKey} within the retention window: the first
   * call with the key is queued (never inline) and its reply kept; a later call with the same key,
   * from any process or runtime, before or after the first finished, does not run again and returns
   * the first call's reply, waiting for it if needed.
   *
   * @param request the request, not null
   * @param idempotencyKey an opaque key, 1 to 256 bytes in UTF-8
   * @param timeout how long to wait for the reply, positive, at most one hour
   * @param <R> the reply type
   * @return the first call's reply
   * @throws CallTimeoutException if no reply came in time (the call still executes; call again with
   *     the same key to get its reply)
   * @throws DeadLetterException if the first call was dead-lettered
   * @throws CallRejectedException if the first call was refused ({@link TerminalException}): kept
   *     for the retention window, so every call with the key throws it, without running the handler
   * @throws IllegalArgumentException if the key is too long, or was used by a keyed cast
   * @throws ServerStoppedException if this process was stopped
   */
  default <R> R call(Call<R> request, String idempotencyKey, Duration timeout) {
    return awaitCall(callAsync(request, idempotencyKey, timeout));
  }

  /**
   * The keyed {@link #call(Call, String, Duration)} without blocking or holding a thread.
   *
   * @param request the request, not null
   * @param idempotencyKey an opaque key, 1 to 256 bytes in UTF-8
   * @param timeout how long to wait for the reply, positive, at most one hour
   * @param <R> the reply type
   * @return a future of the first call's reply, failing with the exceptions the blocking form
   *     throws
   */
  <R> CompletableFuture<R> callAsync(Call<R> request, String idempotencyKey, Duration timeout);

  /**
   * Queues {@code request} as a call whose reply is kept for the retention window, and returns its
   * call id at once (once it is durably queued). Any process or runtime may {@link #awaitReply} it,
   * any number of times, until the window ends.
   *
   * @param request the request, not null
   * @return the call id, an opaque string
   * @throws ServerStoppedException if this process was stopped
   */
  default String submit(M request) {
    return Futures.joinBounded(submitAsync(request));
  }

  /**
   * {@link #submit} without blocking.
   *
   * @param request the request, not null
   * @return a future of the call id, completing once the call is durably queued
   */
  CompletableFuture<String> submitAsync(M request);

  /**
   * Waits for the kept reply of a {@link #submit}ted call; see {@link #awaitReplyAsync}.
   *
   * @param callId the id {@link #submit} returned
   * @param timeout how long to wait, positive, at most one hour
   * @param <R> the reply type
   * @return the reply
   * @throws UnknownCallException if this server does not know the id, or its window ended
   * @throws DeadLetterException if the call was dead-lettered
   * @throws CallRejectedException if the call was refused ({@link TerminalException}), at every
   *     wait until its window ends
   * @throws CallTimeoutException if no reply came in time (the call still executes)
   */
  default <R> R awaitReply(String callId, Duration timeout) {
    return awaitCall(this.<R>awaitReplyAsync(callId, timeout));
  }

  /**
   * Waits, without a thread and without a watch, for the kept reply of a {@link #submit}ted call:
   * from any process or runtime, any number of times, until the retention window ends.
   *
   * @param callId the id {@link #submit} returned
   * @param timeout how long to wait, positive, at most one hour
   * @param <R> the reply type
   * @return a future of the reply; it fails with {@link UnknownCallException} if the id is unknown
   *     or its window ended, {@link DeadLetterException} if the call was dead-lettered, {@link
   *     CallRejectedException} if it was refused, {@link CallTimeoutException} if no reply came in
   *     time
   */
  <R> CompletableFuture<R> awaitReplyAsync(String callId, Duration timeout);

  /**
   * Returns an {@link Outbox} for enqueueing inside transactions of your own.
   *
   * @return the outbox
   */
  Outbox<M> outbox();

  /** The server's identity tuple. */
  Tuple tuid();

  /** The server's tenant. */
  Tenant tenant();

  /** The name this process is registered under, if any. */
  Optional<String> name();

  /**
   * Waits for a call's reply. An interrupt ends the wait with a {@link DGenException}, the
   * interrupt flag set: the call may still execute.
   */
  private <R> R awaitCall(CompletableFuture<R> reply) {
    try {
      return Futures.join(reply);
    } catch (java.util.concurrent.CancellationException interrupted) {
      throw new DGenException(
          "a call to "
              + tuid()
              + " was interrupted while it waited; its outcome is unknown (the interrupt flag is"
              + " set)",
          interrupted);
    }
  }
}
