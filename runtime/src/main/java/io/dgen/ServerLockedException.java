package io.dgen;

/**
 * A priority message ({@link ServerRef#priorityCall}, {@link ServerRef#priorityCast}, {@link
 * ServerRef#info}) would have changed the state of a server that is locked ({@code Result.lock}):
 * it was refused and nothing was committed.
 *
 * <p>While a server is locked, {@code handleLocked}'s result replaces the state when it commits, so
 * a change made meanwhile would be silently undone. Priority messages that only read the state (or
 * write other keys through {@link TxContext}) still run. Send state changes with {@link
 * ServerRef#cast} or {@link ServerRef#call}, which wait for the lock, or retry once it is released.
 */
public final class ServerLockedException extends DGenException {

  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message what was refused, with context
   */
  public ServerLockedException(String message) {
    super(message);
  }
}
