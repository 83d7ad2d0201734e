package io.dgen;

import com.apple.foundationdb.tuple.Tuple;

/**
 * An atomic transaction ({@link DGen#transact}) called a server that did not come free in time: its
 * queue held messages, an operator had paused it, or it was locked ({@code Result.lock}), for
 * longer than {@link Atomic#BUSY_WAIT}. Nothing was committed. Retryable: the same transaction may
 * succeed once the server's consumers have caught up.
 *
 * <p>A call in an atomic transaction runs in FIFO order with the server's queue, so it runs only
 * when the queue is empty and the server unlocked, as an inline call does. While it is not, the
 * transaction waits its turn (it is retried with the backend's backoff) rather than failing at
 * once: consumers usually empty a queue in milliseconds.
 */
public final class ServerBusyException extends DGenException {

  private static final long serialVersionUID = 1L;

  /** Why the server was busy. */
  public enum Reason {
    /** Messages were queued ahead of the call. */
    QUEUED,
    /** An operator paused the server's queue. */
    PAUSED,
    /** The server was locked: {@code handleLocked} was running. */
    LOCKED
  }

  private final transient Tuple server;
  private final Reason reason;

  /**
   * Creates the exception.
   *
   * @param message what happened, with context
   * @param server the busy server's tuid
   * @param reason why it was busy
   */
  public ServerBusyException(String message, Tuple server, Reason reason) {
    super(message);
    this.server = server;
    this.reason = reason;
  }

  /** The tuid of the server that was busy. */
  public Tuple server() {
    return server;
  }

  /** Why it was busy. */
  public Reason reason() {
    return reason;
  }
}
