package io.dgen.internal.base;

import java.util.concurrent.LinkedTransferQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;

/**
 * A pool of daemon threads for work that may block on the cluster, bounded in threads and in queued
 * tasks: on a cluster that stops answering, blocked work cannot grow the JVM's threads without
 * bound. A task goes to an idle thread if there is one, else to a new thread up to the bound, else
 * into the queue; threads are dropped after a minute idle. Past the queue's bound a task is refused
 * with a {@link RejectedExecutionException} that says so.
 *
 * <p>A plain {@link ThreadPoolExecutor} cannot do this: with a bounded queue it makes threads only
 * once the queue is full, and with as many core threads as the bound (what this pool did before) it
 * makes a new thread for every task until the bound, idle ones notwithstanding, so a runtime that
 * ran 256 blocking steps one after the other held 256 threads for a minute.
 *
 * <p>Never decides what runs on it; its users handle a refusal (a clear error to a caller, or a
 * retry after a backoff).
 */
public final class BoundedPool {

  private BoundedPool() {}

  /**
   * A bounded pool whose threads are named {@code prefix} and a number.
   *
   * @param what what the pool is for, in the refusal's message
   */
  public static ThreadPoolExecutor create(String prefix, int threads, int queued, String what) {
    AtomicInteger n = new AtomicInteger();
    HandOffQueue queue = new HandOffQueue(queued);
    ThreadPoolExecutor pool =
        new ThreadPoolExecutor(
            0,
            threads,
            1,
            TimeUnit.MINUTES,
            queue,
            r -> {
              Thread t = new Thread(r, prefix + n.incrementAndGet());
              t.setDaemon(true);
              return t;
            },
            (r, executor) -> {
              // no new thread could be made (the pool is at its bound, perhaps only since the
              // queue was offered the task): queue it if there is room
              if (executor.isShutdown() || !queue.enqueue(r)) {
                throw new RejectedExecutionException(
                    executor.isShutdown()
                        ? what + ": shut down"
                        : what
                            + ": all "
                            + threads
                            + " threads are busy and "
                            + queued
                            + " tasks wait already (the cluster is likely not answering);"
                            + " nothing was started");
              }
            });
    queue.pool = pool;
    return pool;
  }

  /**
   * The pool's queue: {@link #offer} hands a task to a thread waiting for one (an idle thread), or
   * refuses it while the pool may still grow, so that the executor makes a thread; at the bound it
   * queues the task if fewer than {@code capacity} wait.
   */
  private static final class HandOffQueue extends LinkedTransferQueue<Runnable> {

    private final int capacity;
    private volatile @Nullable ThreadPoolExecutor pool;

    HandOffQueue(int capacity) {
      this.capacity = capacity;
    }

    @Override
    public boolean offer(Runnable task) {
      if (tryTransfer(task)) {
        return true;
      }
      ThreadPoolExecutor p = pool;
      if (p != null && p.getPoolSize() < p.getMaximumPoolSize()) {
        return false;
      }
      return enqueue(task);
    }

    /**
     * Queues {@code task} if fewer than the capacity wait. Checked and added under this queue's
     * lock, so that concurrent submitters never queue past the bound; threads only take.
     */
    synchronized boolean enqueue(Runnable task) {
      return size() < capacity && super.offer(task);
    }
  }
}
