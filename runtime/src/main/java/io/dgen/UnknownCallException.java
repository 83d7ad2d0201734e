package io.dgen;

/**
 * {@link ServerRef#awaitReply} was given a call id this server does not know: it was never returned
 * by {@link ServerRef#submit} (or a keyed {@link ServerRef#call(Call, String,
 * java.time.Duration)}), its retention window ({@link ServerOptions#idempotencyRetention()}) has
 * ended, or the server was killed. Retrying does not help.
 */
public final class UnknownCallException extends DGenException {

  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message what was unknown, and why
   */
  public UnknownCallException(String message) {
    super(message);
  }
}
