package io.dgen;

/**
 * A post-commit action: runs after the transaction that produced it has committed, with the state
 * as that transaction committed it (for a batch, the state at the end of the batch).
 *
 * <p>Actions of one result run in order on the thread that committed. If one throws, the rest of
 * that result's actions are skipped and the failure is logged; the commit stands. An action may
 * call {@link #halt()} to skip the remaining actions deliberately. Actions are where external side
 * effects belong: they run at most once per commit of this process, but a commit can itself be
 * retried after {@code commit_unknown_result}, so make them idempotent where that matters.
 *
 * <p>Read the committed state, do not keep it or change it: once the actions ran, the runtime may
 * hand that very object to the server's next callback (a state that is not deeply immutable goes to
 * one callback, which may change it in place).
 *
 * @param <S> the state type
 */
@FunctionalInterface
public interface Action<S> {

  /**
   * Performs the action.
   *
   * @param committedState the state as committed
   * @throws Exception any failure; it is logged and stops the remaining actions
   */
  void run(S committedState) throws Exception;

  /**
   * Stops the remaining actions of the current result without logging an error. Call it from inside
   * {@link #run}; it does not return.
   *
   * @throws HaltActions always
   */
  static void halt() {
    throw new HaltActions();
  }

  /** Thrown by {@link Action#halt()}; caught by the runtime. */
  final class HaltActions extends RuntimeException {
    private static final long serialVersionUID = 1L;

    HaltActions() {
      super("remaining actions halted", null, false, false);
    }
  }
}
