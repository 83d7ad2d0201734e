package io.dgen.internal.doorbell;

/** Something a bucket's doorbell wakes: a consume loop, a waiting call, a timer scheduler. */
public interface WakeListener {
  /** A transaction that committed at {@code version} rang this listener's wake id. */
  void ring(long version);

  /** Rings may have been missed: behave as if every commit so far had rung. */
  void ringAll();

  /** The watcher closed (the runtime is closing): no ring will come any more. */
  default void closed() {}
}
