package io.dgen;

import org.jspecify.annotations.Nullable;

/**
 * A durable server's behaviour: its initial state and the operations on it.
 *
 * <p>The state type {@code S} and message type {@code M} are read from the implementing class's
 * type arguments, so implement this interface with concrete types ({@code class Counter implements
 * DGenServer<Counter.State, Counter.Msg>}). Messages and state are stored with Jackson (Smile):
 * records and plain Jackson-serializable classes work; a sealed message interface works without
 * annotations (the stored item names the concrete type, and only the interface's permitted subtypes
 * are ever decoded).
 *
 * <h2>How callbacks run</h2>
 *
 * Every {@code handle*} callback runs inside a database transaction together with the state read
 * and write, so a state change is atomic with the message's removal from the queue. Consequences:
 *
 * <ul>
 *   <li>A callback can run more than once for one message (the transaction is retried after a
 *       conflict, after a throw, or after {@code commit_unknown_result}): it must be deterministic
 *       and free of external side effects. Side effects go into {@link Action}s, which run after
 *       the commit, or into {@link #handleLocked}.
 *   <li>A callback must be fast: a transaction cannot outlive five seconds, and callbacks that
 *       carry theirs past four fail ({@link TransactionTooLongException}).
 *   <li>A throwing callback aborts its transaction; a queued message is retried with capped
 *       exponential backoff (and dead-lettered after {@code deadLetterThreshold} failures), a
 *       priority message fails its sender with {@link CallbackException}.
 *   <li>A callback that throws {@link TerminalException} <em>refuses</em> its message instead: the
 *       message leaves the queue with nothing of the callback committed (state, actions, outbox
 *       casts, its own writes), is not retried, and the server goes on; a caller gets {@link
 *       CallRejectedException}, a refused cast is logged and reported to {@link
 *       DGenListener#castRefused}.
 *   <li>A process's consume loop runs one batch at a time, but inline calls and priority messages
 *       run in their callers' threads, and other processes run their own loops: callbacks of one
 *       server may run concurrently, each in its own transaction. The database serializes their
 *       effects (two transactions that wrote the same state conflict, and one is retried), so keep
 *       callbacks free of shared mutable fields and rely on the state they are given.
 * </ul>
 *
 * <p>The default implementations of {@code handleCall}, {@code handleCast} and {@code handleInfo}
 * fail; the {@code handle*Tx} variants delegate to them. Override one of each pair you use.
 *
 * @param <S> the state type
 * @param <M> the message type (calls and casts)
 */
public interface DGenServer<S, M> {

  /**
   * Returns the initial state, and optionally the server's identity tuple. Runs in {@link
   * DGen#start} before any transaction. If durable state exists already, it wins over the state
   * returned here (unless the start option {@code reset} is set).
   *
   * <p>A hosted server's ({@link DGen#host(Kind, java.util.function.Supplier, HostOptions)}) runs
   * instead in the transaction of its first message, once, with the server's id as {@code arg}: a
   * {@code String} or {@code Long} for a server addressed by a string or an integer, else a {@code
   * Tuple}; {@link TxContext#id()} gives the same value to its callbacks. It may decline to create
   * the server by throwing {@link TerminalException} or returning {@link InitResult#error(Object)}
   * (the same): the message is refused (a call gets {@link CallRejectedException} carrying the
   * reason), nothing is stored for the server, and its next message runs {@code init} again. Any
   * other exception is a failure of the message, retried.
   *
   * @param arg the argument given to {@link DGen#start}, or a hosted server's id
   * @return {@link InitResult#ok(Object)}, {@link InitResult#ok(com.apple.foundationdb.tuple.Tuple,
   *     Object)} or {@link InitResult#error(Object)}
   * @throws TerminalException for a hosted server, to decline to create it (for {@link DGen#start},
   *     as any exception: the start fails)
   * @throws Exception to refuse the start
   */
  InitResult<S> init(@Nullable Object arg) throws Exception;

  /**
   * Handles a call: returns the reply and the new state. A request that is a {@link Call} is
   * answered with {@link Result#reply(Call, Object, Object)}, which checks the reply's type at
   * compile time; a reply of another type than the {@code Call} names fails the callback.
   *
   * @param request the request
   * @param from the caller
   * @param state the current state
   * @return the result, usually {@link Result#reply(Call, Object, Object)}
   * @throws TerminalException to refuse the call: its caller gets {@link CallRejectedException},
   *     nothing is committed, and it is not retried
   * @throws Exception to abort the transaction (see the class documentation)
   */
  default Result<S> handleCall(M request, From from, S state) throws Exception {
    throw new UnsupportedOperationException(
        getClass().getName() + " does not implement handleCall (request=" + request + ")");
  }

  /**
   * Handles a cast: returns the new state.
   *
   * @param message the message
   * @param state the current state
   * @return the result, usually {@link Result#noReply}
   * @throws TerminalException to refuse the cast: it is dropped with nothing committed, logged,
   *     counted and reported to {@link DGenListener#castRefused} (a priority cast's sender gets
   *     {@link CallRejectedException})
   * @throws Exception to abort the transaction (see the class documentation)
   */
  default Result<S> handleCast(M message, S state) throws Exception {
    throw new UnsupportedOperationException(
        getClass().getName() + " does not implement handleCast (message=" + message + ")");
  }

  /**
   * Handles an info message sent with {@link ServerRef#info}: any object, never stored.
   *
   * @param info the info object
   * @param state the current state
   * @return the result, usually {@link Result#noReply}
   * @throws TerminalException to refuse the info: its sender gets {@link CallRejectedException}
   * @throws Exception to abort the transaction
   */
  default Result<S> handleInfo(Object info, S state) throws Exception {
    throw new UnsupportedOperationException(
        getClass().getName() + " does not implement handleInfo (info=" + info + ")");
  }

  /**
   * Handles a call with access to the transaction; delegates to {@link #handleCall} by default.
   *
   * @param tx the transaction context
   * @param request the request
   * @param from the caller
   * @param state the current state
   * @return the result
   * @throws TerminalException to refuse the call, as from {@link #handleCall}; what it wrote
   *     through {@code tx} is not committed
   * @throws Exception to abort the transaction
   */
  default Result<S> handleCallTx(TxContext tx, M request, From from, S state) throws Exception {
    return handleCall(request, from, state);
  }

  /**
   * Handles a cast with access to the transaction; delegates to {@link #handleCast} by default.
   *
   * @param tx the transaction context
   * @param message the message
   * @param state the current state
   * @return the result
   * @throws TerminalException to refuse the cast, as from {@link #handleCast}; what it wrote
   *     through {@code tx} is not committed
   * @throws Exception to abort the transaction
   */
  default Result<S> handleCastTx(TxContext tx, M message, S state) throws Exception {
    return handleCast(message, state);
  }

  /**
   * Handles an info with access to the transaction; delegates to {@link #handleInfo} by default.
   *
   * @param tx the transaction context
   * @param info the info object
   * @param state the current state
   * @return the result
   * @throws TerminalException to refuse the info, as from {@link #handleInfo}
   * @throws Exception to abort the transaction
   */
  default Result<S> handleInfoTx(TxContext tx, Object info, S state) throws Exception {
    return handleInfo(info, state);
  }

  /**
   * Continues the work of a message whose callback returned {@link Result#lock}: runs outside any
   * transaction (external side effects allowed) while the server is locked. Its result commits only
   * while this holder's lock is current. It may run twice for one message (after a busted lock), so
   * it must be safe to repeat. Its state replaces the server's: nothing else may change the state
   * while the lock is held (queued messages wait, and a priority message that would change the
   * state is refused with {@link ServerLockedException}), so no change is silently undone.
   *
   * @param db the backend, tenant and identity
   * @param event the message that took the lock
   * @param state the state committed with the lock
   * @return the result; a reply answers the call that took the lock
   * @throws TerminalException to refuse the message: the lock is released, the state committed with
   *     it stays, the result is discarded, and the message is not retried (a call gets {@link
   *     CallRejectedException}, a cast is reported to {@link DGenListener#castRefused}); what it
   *     did outside the runtime's transactions stays done
   * @throws Exception to release the lock without committing and retry the message
   */
  default Result<S> handleLocked(DbContext db, Event<M> event, S state) throws Exception {
    throw new UnsupportedOperationException(
        getClass().getName() + " returned Result.lock but does not implement handleLocked");
  }

  /**
   * Called once after a message was moved to the dead letters. Its return is ignored and a failure
   * is logged. Runs outside any transaction.
   *
   * @param message the dead-lettered message
   * @param attempts how many times it was attempted
   */
  default void handleDeadLetter(M message, int attempts) {}
}
