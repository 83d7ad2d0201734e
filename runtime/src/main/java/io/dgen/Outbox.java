package io.dgen;

import io.dgen.backend.Transaction;
import java.time.Duration;
import java.util.List;

/**
 * Enqueues messages inside a transaction the caller already owns (a transactional outbox): the
 * messages are queued if and only if that transaction commits.
 *
 * <pre>{@code
 * Outbox<AccountMsg> out = ref.outbox();
 * backend.run(tx -> {
 *   tx.set(myKey, myValue);            // your own writes
 *   out.cast(tx, new Deposit(100));    // queued atomically with them
 *   return null;
 * });
 * }</pre>
 *
 * <p>This couples your code to the backend's transactions; prefer {@link ServerRef#cast} when you
 * do not need the atomicity. Pushes are blind writes and never conflict with other pushes or with
 * consumers. Thread-safe.
 *
 * @param <M> the message type
 */
public interface Outbox<M> {

  /**
   * Enqueues {@code message} in {@code tx}. Several casts in one transaction keep their order.
   *
   * @param tx the caller's transaction
   * @param message the message, not null
   * @throws IllegalArgumentException if the message's type is not allowed for this server
   */
  void cast(Transaction tx, M message);

  /**
   * Enqueues {@code message} in {@code tx} unless a message with the same {@code idempotencyKey}
   * was queued to this server within its retention window ({@link ServerRef#cast(Object, String)}).
   * Costs one read of the key in {@code tx}, which conflicts with a concurrent push of the same
   * key; safe when your body is re-run after {@code commit_unknown_result}.
   *
   * @param tx the caller's transaction
   * @param message the message, not null
   * @param idempotencyKey an opaque key, 1 to 256 bytes in UTF-8
   * @return true if {@code tx} queues it (once it commits), false if the key had queued it already
   * @throws IllegalArgumentException if the key is too long, or the message's type not allowed
   */
  boolean cast(Transaction tx, M message, String idempotencyKey);

  /**
   * Schedules {@code message} to be cast to this server once {@code delay} has passed on the
   * runtime's clock: the timer exists if and only if {@code tx} commits (see {@link
   * ServerRef#castAfter}). A body that the backend re-runs after {@code commit_unknown_result} gets
   * the same id back and schedules nothing twice.
   *
   * @param tx the caller's transaction
   * @param message the message, not null
   * @param delay how long from now; zero or negative fires at once
   * @return the timer's id, for {@link ServerRef#cancelTimer}
   * @throws IllegalArgumentException if the message's type is not allowed for this server
   */
  String castAfter(Transaction tx, M message, Duration delay);

  /**
   * Enqueues {@code messages} in {@code tx}, in order.
   *
   * @param tx the caller's transaction
   * @param messages the messages, none null
   */
  void castAll(Transaction tx, List<? extends M> messages);
}
