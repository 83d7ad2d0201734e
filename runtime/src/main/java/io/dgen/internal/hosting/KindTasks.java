package io.dgen.internal.hosting;

import io.dgen.internal.base.RuntimeServices;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * Runs the work of a hosted kind off the caller's thread: on the runtime's executor, now or after a
 * delay. Work handed over while the runtime closes is dropped. Stateless; thread-safe.
 */
final class KindTasks {

  private KindTasks() {}

  /** Runs {@code r} on the runtime's executor, unless the runtime is closing. */
  static void execute(RuntimeServices services, Runnable r) {
    try {
      services.executor().execute(r);
    } catch (RejectedExecutionException closing) {
      // the runtime is closing
    }
  }

  /** Runs {@code r} on the runtime's executor after {@code delayNanos}, unless it is closing. */
  static void schedule(RuntimeServices services, Runnable r, long delayNanos) {
    try {
      services.scheduler().schedule(() -> execute(services, r), delayNanos, TimeUnit.NANOSECONDS);
    } catch (RejectedExecutionException closing) {
      // the runtime is closing
    }
  }
}
