package io.dgen;

/**
 * A call's reply did not arrive in time. The caller's reply slot has been removed; the call itself
 * stays queued and still executes, as with {@code gen_server}.
 */
public final class CallTimeoutException extends DGenException {

  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message what timed out, with context
   */
  public CallTimeoutException(String message) {
    super(message);
  }
}
