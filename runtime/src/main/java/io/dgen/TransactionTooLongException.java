package io.dgen;

/**
 * Callbacks carried their transaction past FoundationDB's five-second limit. Callbacks run inside a
 * transaction and must be fast; move slow work to post-commit actions or to lock mode.
 */
public final class TransactionTooLongException extends DGenException {

  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message how long it ran, with context
   */
  public TransactionTooLongException(String message) {
    super(message);
  }
}
