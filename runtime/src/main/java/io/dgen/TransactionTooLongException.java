package io.dgen;

/**
 * Callbacks carried their transaction past four seconds: the margin DGen keeps under FoundationDB's
 * five-second limit, so that the state write and the commit still fit. Callbacks run inside a
 * transaction and must be fast; move slow work to post-commit actions or to lock mode. For a queued
 * message this is a failure of that message (retried, and dead-lettered at the threshold).
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
