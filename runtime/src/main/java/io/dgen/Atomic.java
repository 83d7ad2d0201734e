package io.dgen;

import io.dgen.backend.Transaction;
import java.time.Duration;
import org.jspecify.annotations.Nullable;

/**
 * One atomic transaction across servers, as its {@link AtomicBody} sees it ({@link DGen#transact}):
 * each {@link #call} or {@link #cast} runs the server's callback now, in this transaction, against
 * its durable state, and everything commits together or nothing does: the servers' states, what
 * their callbacks wrote through {@link TxContext} (timers, outbox casts, your keys), and your own
 * writes through {@link #transaction()}. Post-commit actions run once, after the commit.
 *
 * <pre>{@code
 * long left = dgen.transact(bank, tx -> {
 *   tx.prefetch(alice, bob);                          // both read in one round trip
 *   long from = tx.call(alice, new Withdraw(100));   // refused (TerminalException): nothing commits
 *   tx.call(bob, new Deposit(100));
 *   return from;
 * });
 * }</pre>
 *
 * <p><b>Order.</b> A call or cast runs in FIFO order with the server's queue: only when its queue
 * is empty and it is unlocked, as an inline call does. While it is not, the transaction waits its
 * turn (the whole body is retried with the backend's backoff) for at most {@link #BUSY_WAIT}, then
 * fails with {@link ServerBusyException}. {@link #state} reads a server's state whatever its queue
 * holds.
 *
 * <p><b>Exactness.</b> The transaction reads each server's lock and state version serializably, as
 * the server's consumers do in every batch, and writes the version of each state it changes: a
 * consumer batch, an inline call or another atomic transaction that overlaps it conflicts, and the
 * body runs again on the new states. {@code commit_unknown_result} is resolved by a commit marker,
 * so an applied commit is never applied twice. Hosted servers need no lease: a server's bucket may
 * move meanwhile, and the conflicts still order the transaction against whichever runtime holds it.
 *
 * <p><b>What aborts it.</b> A {@link TerminalException} from any callback: {@link #call} throws
 * {@link CallRejectedException}, and {@link DGen#transact} throws it even if the body caught it. A
 * callback that throws anything else: {@link CallbackException}, not retried. A callback that asks
 * for the lock ({@code Result.lock}) or, for a hosted server, to stop ({@code Result.stop}): a
 * {@link DGenException}, since only the server's holder takes the lock or deactivates it. A server
 * that does not exist yet: a {@link DGenException}, since its holder creates it ({@code init}) with
 * its first queued message; so is an idle server of a kind with an expiry, which only its holder
 * judges.
 *
 * <p><b>Limits.</b> At most {@link #MAX_SERVERS} servers; callbacks and body together within 4 of
 * FoundationDB's 5 seconds ({@link TransactionTooLongException}); writes within its 10,000,000
 * bytes ({@link StateTooLargeException}, or {@link BackendFailureException} with {@code
 * transaction_too_large}). Beyond them it fails and nothing is committed.
 *
 * <p>Valid only while its body runs, in the body's thread.
 */
public interface Atomic {

  /**
   * How many servers one atomic transaction may call, cast to or read. Each costs a round of reads
   * (the first time it is named) and widens the window in which a consumer of any of them aborts
   * the whole transaction.
   */
  int MAX_SERVERS = 64;

  /** How long a transaction waits for a busy server's turn before {@link ServerBusyException}. */
  Duration BUSY_WAIT = Duration.ofSeconds(5);

  /**
   * Runs {@code request} on {@code server} now, in this transaction: its {@code handleCall} on its
   * current state (as this transaction has left it), typed as {@link ServerRef#call(Call)} is.
   *
   * @param server a server of this transaction's tenant whose behaviour this runtime has (a ref of
   *     a kind it hosts, or a process it started that consumes)
   * @param request the request, of the server's message type
   * @param <M> the server's message type
   * @param <R> the reply type
   * @return the reply
   * @throws CallRejectedException if {@code handleCall} refused (the whole transaction aborts)
   * @throws IllegalArgumentException if the server is another tenant's, its behaviour is not in
   *     this runtime, or the request is not of its message type
   */
  <M, R> R call(ServerRef<M> server, Call<R> request);

  /**
   * Runs {@code handleCast} of {@code message} on {@code server} now, in this transaction (not
   * queued). To queue a message atomically with this transaction instead, use the server's outbox:
   * {@code server.outbox().cast(tx.transaction(), message)}, once this transaction has named the
   * server (a call, a read, {@link #prefetch}) if it names it at all: its queue cannot be read
   * after a push in the same transaction, and the transaction fails with a {@link DGenException}
   * saying so.
   *
   * @param server as for {@link #call}
   * @param message the message, not a {@link Call}
   * @param <M> the server's message type
   * @throws CallRejectedException if {@code handleCast} refused (the whole transaction aborts)
   */
  <M> void cast(ServerRef<M> server, M message);

  /**
   * A copy of {@code server}'s state as this transaction sees it: the durable state, with the
   * changes of this transaction's earlier calls. Reading changes nothing and needs no turn (queued
   * messages and a lock do not delay it), but a change of the state by anyone else before this
   * transaction commits conflicts with it. The states read in one transaction are one consistent
   * snapshot.
   *
   * @param server as for {@link #call}
   * @param type the server's state type, or a supertype
   * @param <S> the state type
   * @return the state, or null if the server does not exist yet
   * @throws IllegalArgumentException if the state is not a {@code type}
   */
  <S> @Nullable S state(ServerRef<?> server, Class<S> type);

  /**
   * Starts reading {@code servers} now, all in one round trip, so that the calls, casts and reads
   * of them that follow do not each wait for a round of their own: a transfer that names both
   * accounts first costs one round of reads, not two. Optional: a server named for the first time
   * by {@link #call}, {@link #cast} or {@link #state} is read then. Counts toward {@link
   * #MAX_SERVERS}.
   *
   * @param servers servers, as for {@link #call}
   */
  void prefetch(ServerRef<?>... servers);

  /**
   * The transaction itself, for your own keys (under {@link Tenant#subspace()}, outside the
   * servers' own) and outboxes ({@link Outbox#cast(Transaction, Object)}): written atomically with
   * the rest.
   *
   * @return the transaction; do not keep it after the body returns
   */
  Transaction transaction();
}
