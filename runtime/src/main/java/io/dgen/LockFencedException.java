package io.dgen;

/**
 * A lock holder tried to commit after its lock was busted and taken over: the commit was refused
 * and changed nothing.
 */
public final class LockFencedException extends DGenException {

  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message which lock was fenced, with context
   */
  public LockFencedException(String message) {
    super(message);
  }
}
