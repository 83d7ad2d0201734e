package io.dgen;

/**
 * A queued call failed {@code deadLetterThreshold} consecutive times and was moved to the server's
 * dead letters; {@link #attempts()} says how often it ran.
 */
public final class DeadLetterException extends DGenException {

  private static final long serialVersionUID = 1L;

  private final int attempts;

  /**
   * Creates the exception.
   *
   * @param message which message was dead-lettered, with context
   * @param attempts how many times it was attempted
   */
  public DeadLetterException(String message, int attempts) {
    super(message);
    this.attempts = attempts;
  }

  /** How many times the message was attempted before it was dead-lettered. */
  public int attempts() {
    return attempts;
  }
}
