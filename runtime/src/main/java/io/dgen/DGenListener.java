package io.dgen;

/**
 * Hears what a runtime's processes handle by themselves but an operator may want to see: events
 * that need no action from the caller of any operation, yet say something about the system's
 * health. Register one with {@link DGen.Builder#listener}; every method does nothing by default, so
 * implement only those you need.
 *
 * <pre>{@code
 * DGen dgen = DGen.builder(backend)
 *     .listener(new DGenListener() {
 *       @Override
 *       public void lockFenced(ServerRef<?> server, LockFencedException error) {
 *         fencedLocks.increment(); // e.g. a metric: a handleLocked ran longer than lockTimeout
 *       }
 *     })
 *     .build();
 * }</pre>
 *
 * <p>Threading: methods are called on the runtime's own threads (the one the event happened on),
 * possibly concurrently; they must be thread-safe and return quickly. An exception thrown by a
 * listener is logged and otherwise ignored.
 */
public interface DGenListener {

  /**
   * A lock holder's late result was refused: its lock was busted (it ran longer than {@code
   * lockTimeout}, see {@link ServerOptions.Builder#lockTimeout}) and another consumer took the
   * message over. The holder's {@code handleLocked} result, reply and actions were discarded;
   * nothing it would have committed was written. The process stays in service and goes on
   * consuming.
   *
   * <p>One such event now and then means a {@code handleLocked} that was slower than the timeout
   * (its message ran twice); many mean the timeout is too short for the work.
   *
   * @param server the process whose holder was fenced
   * @param error what was refused, with the server and the lock's token
   */
  default void lockFenced(ServerRef<?> server, LockFencedException error) {}

  /**
   * A server's stored state cannot be decoded into its declared state type (an incompatible change
   * without a migration, a type stored at a newer version, a missing alias): its consuming process
   * stopped, and only it; other servers go on. The state is kept as it is: {@code dgen inspect}
   * shows its tree, and {@code DGenAdmin}'s {@code ServerAdmin.replaceState} (or {@code dgen
   * state-replace}) repairs it. Start the process again once the code or the data is fixed; a
   * hosted server's holder loads it again by itself, at once after a repair, else after a backoff
   * of up to five minutes (called at each load that fails). See {@code docs/evolving-data.md}.
   *
   * @param server the process that stopped
   * @param error what could not be decoded: the server, the stored type and version, the key
   */
  default void stateUndecodable(ServerRef<?> server, UndecodableDataException error) {}

  /**
   * A cast was refused: its handler threw {@link TerminalException} (or a hosted server's {@code
   * init} declined to create the server for it). The cast left the queue with nothing of it
   * committed, and is not retried; a cast has no caller to tell, so this is where the refusal is
   * seen (it is also logged at {@code WARN} and counted as {@code dgen.casts.refused}). Called once
   * per refused cast, after the refusal committed. A refused call is not reported here: its caller
   * gets {@link CallRejectedException}.
   *
   * @param server the process that refused it
   * @param message the refused cast
   * @param reason what the handler threw
   */
  default void castRefused(ServerRef<?> server, Object message, TerminalException reason) {}

  /**
   * A hosted server expired: it received no message for its kind's {@link
   * HostOptions.Builder#expireAfter} and was deleted, with its state, queue, timers and kept
   * replies. Called once per expired server, after the deletion committed, in the runtime that
   * deleted it: its bucket's holder, either by the background collection or when a message found
   * the server expired (the message then went to a new server). Also counted as {@code
   * dgen.servers.expired}.
   *
   * @param tenant the server's tenant
   * @param tuid the server's tuid: its kind, then its id
   */
  default void serverExpired(Tenant tenant, com.apple.foundationdb.tuple.Tuple tuid) {}
}
