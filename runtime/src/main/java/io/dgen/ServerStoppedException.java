package io.dgen;

/**
 * The local process of a server was stopped (or the server was killed), so it accepts no more
 * messages through this reference. The durable state is kept unless the server was killed.
 */
public final class ServerStoppedException extends DGenException {

  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message what was refused, with context
   */
  public ServerStoppedException(String message) {
    super(message);
  }
}
