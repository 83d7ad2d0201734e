package io.dgen;

import io.dgen.backend.Transaction;
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
   * Enqueues {@code messages} in {@code tx}, in order.
   *
   * @param tx the caller's transaction
   * @param messages the messages, none null
   */
  void castAll(Transaction tx, List<? extends M> messages);
}
