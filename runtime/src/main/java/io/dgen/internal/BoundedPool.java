package io.dgen.internal;

import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A pool of daemon threads for work that may block on the cluster, bounded in threads and in queued
 * tasks: on a cluster that stops answering, blocked work cannot grow the JVM's threads without
 * bound. Threads are made on demand up to the bound (before anything queues) and dropped after a
 * minute idle; past the queue's bound a task is refused with a {@link RejectedExecutionException}
 * that says so.
 *
 * <p>Never decides what runs on it; its users handle a refusal (a clear error to a caller, or a
 * retry after a backoff).
 */
final class BoundedPool {

  private BoundedPool() {}

  /**
   * A bounded pool whose threads are named {@code prefix} and a number.
   *
   * @param what what the pool is for, in the refusal's message
   */
  static ThreadPoolExecutor create(String prefix, int threads, int queued, String what) {
    AtomicInteger n = new AtomicInteger();
    ThreadPoolExecutor pool =
        new ThreadPoolExecutor(
            threads,
            threads,
            1,
            TimeUnit.MINUTES,
            new LinkedBlockingQueue<>(queued),
            r -> {
              Thread t = new Thread(r, prefix + n.incrementAndGet());
              t.setDaemon(true);
              return t;
            },
            (r, executor) -> {
              throw new RejectedExecutionException(
                  what
                      + ": all "
                      + threads
                      + " threads are busy and "
                      + queued
                      + " tasks wait already (the cluster is likely not answering); nothing was"
                      + " started");
            });
    pool.allowCoreThreadTimeOut(true);
    return pool;
  }
}
