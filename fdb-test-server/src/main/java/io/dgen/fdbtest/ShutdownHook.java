package io.dgen.fdbtest;

/**
 * A shutdown hook that closes a throwaway server or cluster when the JVM exits, and that its owner
 * removes when it is closed first. Thread-safe.
 */
final class ShutdownHook {

  private final Thread thread;

  /** Registers {@code close} to run when the JVM exits, on a thread named {@code name}. */
  ShutdownHook(Runnable close, String name) {
    this.thread = new Thread(close, name);
    Runtime.getRuntime().addShutdownHook(thread);
  }

  /** Removes the hook, unless it is the one running or the JVM is already shutting down. */
  void remove() {
    if (Thread.currentThread() == thread) {
      return;
    }
    try {
      Runtime.getRuntime().removeShutdownHook(thread);
    } catch (IllegalStateException alreadyShuttingDown) {
      // the hook runs anyway and finds its owner closed
    }
  }
}
