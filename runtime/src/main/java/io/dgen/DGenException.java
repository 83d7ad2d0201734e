package io.dgen;

import org.jspecify.annotations.Nullable;

/**
 * The root of the runtime's exceptions; every one is unchecked and says which server it concerns.
 */
public class DGenException extends RuntimeException {

  private static final long serialVersionUID = 1L;

  /**
   * Creates an exception with a message.
   *
   * @param message what happened, with {@code key=value} context
   */
  public DGenException(String message) {
    super(message);
  }

  /**
   * Creates an exception with a message and a cause.
   *
   * @param message what happened, with {@code key=value} context
   * @param cause the underlying failure
   */
  public DGenException(String message, @Nullable Throwable cause) {
    super(message, cause);
  }
}
