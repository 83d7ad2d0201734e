package io.dgen.backend.memory;

import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Runs tasks one at a time, in the order they came, on a delegate executor, holding at most one of
 * its threads and none while there is nothing to run.
 *
 * <p>Commits that waited out injected latency finish here: they serialize on the store's lock
 * anyway, and a burst of them coming due at once would otherwise take one new thread each from a
 * growing pool, all blocked on that lock.
 */
final class SerialExecutor implements Executor {

  private final Executor delegate;
  private final ConcurrentLinkedQueue<Runnable> tasks = new ConcurrentLinkedQueue<>();
  private final AtomicBoolean draining = new AtomicBoolean();

  SerialExecutor(Executor delegate) {
    this.delegate = delegate;
  }

  @Override
  public void execute(Runnable task) {
    tasks.add(task);
    drainLater();
  }

  private void drainLater() {
    if (draining.compareAndSet(false, true)) {
      try {
        delegate.execute(this::drain);
      } catch (RejectedExecutionException e) {
        draining.set(false);
        throw e;
      }
    }
  }

  private void drain() {
    try {
      Runnable task;
      while ((task = tasks.poll()) != null) {
        task.run();
      }
    } finally {
      draining.set(false);
      if (!tasks.isEmpty()) {
        drainLater();
      }
    }
  }
}
