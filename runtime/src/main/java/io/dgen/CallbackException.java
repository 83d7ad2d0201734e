package io.dgen;

/**
 * A server's callback threw; the cause is the callback's exception. The transaction that ran it was
 * aborted, so nothing the callback wrote was committed.
 */
public final class CallbackException extends DGenException {

  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message which callback failed, with context
   * @param cause the callback's exception
   */
  public CallbackException(String message, Throwable cause) {
    super(message, cause);
  }
}
