package io.dgen.admin;

import io.dgen.DGen;
import io.dgen.DeadLetter;
import io.dgen.OperationTimeoutException;
import io.dgen.ServerRef;
import io.dgen.ServerStoppedException;
import io.dgen.backend.Futures;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;

/**
 * What inspects or destroys one server, typed by its message type: its queue's length, its dead
 * letters (listed, re-queued, purged) and {@link #kill}. Kept apart from {@link ServerRef}, which
 * is what a client of the server needs; obtained for a ref of this JVM's runtime with {@link #of}.
 * For an operator's untyped view of any server, from any process, see {@link DGenAdmin}.
 *
 * <pre>{@code
 * ServerControl<AccountMsg> control = ServerControl.of(account);
 * for (DeadLetter<AccountMsg> d : control.deadLetters()) {
 *   control.requeueDeadLetter(d.id(), false);
 * }
 * }</pre>
 *
 * <p>Thread-safe. Every operation that waits for the store has a non-blocking twin ending in {@code
 * Async}, as {@link ServerRef}'s have, with the same failures.
 *
 * @param <M> the server's message type
 */
public interface ServerControl<M> {

  /**
   * The admin operations of the server {@code ref} addresses.
   *
   * @param ref a ref or process of a {@link DGen} of this JVM
   * @param <M> the server's message type
   * @return its control
   * @throws IllegalArgumentException if {@code ref} was not made by a {@link DGen}
   */
  @SuppressWarnings("unchecked")
  static <M> ServerControl<M> of(ServerRef<M> ref) {
    Objects.requireNonNull(ref, "ref must not be null");
    if (ref instanceof ServerControl<?> control) {
      return (ServerControl<M>) control;
    }
    throw new IllegalArgumentException("not a server ref of a DGen runtime: " + ref);
  }

  /**
   * Returns the number of queued messages (pushes minus pops, read as a snapshot).
   *
   * @return the queue length
   */
  default long queueLength() {
    return Futures.joinBounded(queueLengthAsync());
  }

  /**
   * {@link #queueLength} without blocking.
   *
   * @return a future of the queue length
   */
  CompletableFuture<Long> queueLengthAsync();

  /**
   * Lists the server's dead letters, oldest first.
   *
   * @return the dead letters
   */
  default List<DeadLetter<M>> deadLetters() {
    return Futures.joinBounded(deadLettersAsync());
  }

  /**
   * {@link #deadLetters} without blocking.
   *
   * @return a future of the dead letters, oldest first
   */
  CompletableFuture<List<DeadLetter<M>>> deadLettersAsync();

  /**
   * Moves a dead letter back into the queue, at its head (processed next) or at its tail, with a
   * fresh failure count. A call is re-queued without its original caller, whose reply is dropped.
   *
   * @param id the dead letter's id
   * @param head true to put it at the head of the queue
   * @return true if it existed
   */
  default boolean requeueDeadLetter(String id, boolean head) {
    return Futures.joinBounded(requeueDeadLetterAsync(id, head));
  }

  /**
   * {@link #requeueDeadLetter} without blocking.
   *
   * @param id the dead letter's id
   * @param head true to put it at the head of the queue
   * @return a future of whether it existed
   * @throws IllegalArgumentException if {@code id} is not a dead letter id at all
   */
  CompletableFuture<Boolean> requeueDeadLetterAsync(String id, boolean head);

  /**
   * Deletes one dead letter.
   *
   * @param id the dead letter's id
   * @return true if it existed
   */
  default boolean purgeDeadLetter(String id) {
    return Futures.joinBounded(purgeDeadLetterAsync(id));
  }

  /**
   * {@link #purgeDeadLetter} without blocking.
   *
   * @param id the dead letter's id
   * @return a future of whether it existed
   * @throws IllegalArgumentException if {@code id} is not a dead letter id at all
   */
  CompletableFuture<Boolean> purgeDeadLetterAsync(String id);

  /**
   * Deletes every dead letter of the server.
   *
   * @return how many there were
   */
  default int purgeDeadLetters() {
    return Futures.joinBounded(purgeDeadLettersAsync());
  }

  /**
   * {@link #purgeDeadLetters} without blocking: one transaction per page of dead letters, each
   * started when the one before committed.
   *
   * @return a future of how many there were
   */
  CompletableFuture<Integer> purgeDeadLettersAsync();

  /**
   * Deletes the server's durable state, queue, reply slots, dead letters and pending timers, then
   * stops its processes in this {@link DGen}. Waiting callers fail with {@link
   * ServerStoppedException}.
   *
   * @param reason why (logged)
   * @throws OperationTimeoutException if the cluster did not answer within the operation timeout
   *     ({@link DGen.Builder#operationTimeout}); the outcome is unknown
   */
  default void kill(Object reason) {
    Futures.joinBounded(killAsync(reason));
  }

  /**
   * {@link #kill} without blocking: the future completes once the server is deleted and this
   * runtime's processes of it have stopped.
   *
   * @param reason why (logged)
   * @return a future completing once the server is deleted
   */
  CompletableFuture<Void> killAsync(Object reason);
}
