package io.dgen;

import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * Thrown by a handler to refuse its message: the message is dropped, not retried, and nothing the
 * handler did is committed. Use it for a message that can never succeed as it is (a withdraw beyond
 * the balance, an order for an item that does not exist), as opposed to a failure that a retry may
 * cure, which any other exception stands for.
 *
 * <pre>{@code
 * public Result<Account> handleCall(Msg msg, From from, Account account) {
 *   if (msg instanceof Withdraw w && w.amount() > account.balance()) {
 *     throw new TerminalException("insufficient funds: balance=" + account.balance());
 *   }
 *   ...
 * }
 * }</pre>
 *
 * <p>{@code handleCall}, {@code handleCast}, {@code handleInfo}, their {@code *Tx} variants and
 * {@code handleLocked} may throw it, and a hosted server's {@code init} ({@code DGen.host}), which
 * so declines to create the server for the message that addressed it. The refused message leaves
 * the queue without the handler's state change, post-commit actions or outbox casts, and without
 * the writes a {@code *Tx} handler made through its {@link TxContext}; the server goes on with its
 * next message. The caller of a call (queued, inline, keyed, submitted or priority), a priority
 * cast and an info gets {@link CallRejectedException} with this exception's message; a refused
 * cast, which has no caller to tell, is logged, counted ({@code dgen.casts.refused}) and reported
 * to {@link DGenListener#castRefused}. A refusal of {@code handleLocked} keeps the state committed
 * with the lock (it committed before {@code handleLocked} ran) and releases the lock. See {@code
 * docs/failure-model.md}.
 *
 * <p>Thrown directly: a {@code TerminalException} wrapped in another exception is an ordinary
 * failure, retried. Subclass it to carry more of the reason; only its message reaches the caller.
 */
public class TerminalException extends RuntimeException {

  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message why the message is refused, not null; the caller's {@link CallRejectedException}
   *     carries it
   */
  public TerminalException(String message) {
    super(Objects.requireNonNull(message, "message must not be null"));
  }

  /**
   * Creates the exception with a cause, which stays in the server's runtime (the caller gets the
   * message only).
   *
   * @param message why the message is refused, not null
   * @param cause what led to the refusal, if anything
   */
  public TerminalException(String message, @Nullable Throwable cause) {
    super(Objects.requireNonNull(message, "message must not be null"), cause);
  }
}
