package io.dgen.internal.base;

import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The bound on consumer batches in flight across one runtime: a batch holds a permit from the start
 * of its transaction until its commit is known. A loop that finds none free waits in line (first
 * come, first served), holding no thread; a released permit goes to the next in line.
 *
 * <p>Why a bound and not a pool size: a batch spends most of its time waiting for the database
 * (milliseconds on FoundationDB) and little on a thread, so the number of batches a runtime can
 * usefully overlap is throughput × latency (Little's law), far above its cores; the bound keeps the
 * memory and open transactions of that overlap finite.
 *
 * <p>Threading: lock-free; any thread may acquire, enqueue and release.
 */
public final class BatchPermits {

  private final int max;
  private final Executor executor;
  private final AtomicInteger used = new AtomicInteger();
  private final ConcurrentLinkedQueue<Runnable> waiting = new ConcurrentLinkedQueue<>();

  public BatchPermits(int max, Executor executor) {
    this.max = max;
    this.executor = executor;
  }

  /** Takes a permit if one is free and nobody waits for one. */
  public boolean tryAcquire() {
    for (; ; ) {
      int u = used.get();
      if (u >= max || !waiting.isEmpty()) {
        return false;
      }
      if (used.compareAndSet(u, u + 1)) {
        return true;
      }
    }
  }

  /** Runs {@code task} on the executor once it holds a permit (it must {@link #release} it). */
  public void enqueue(Runnable task) {
    waiting.add(task);
    handOut();
  }

  /** Gives a permit back; the next task in line, if any, gets it. */
  public void release() {
    used.decrementAndGet();
    handOut();
  }

  /** Batches in flight now. */
  int inFlight() {
    return used.get();
  }

  private void handOut() {
    while (!waiting.isEmpty()) {
      int u = used.get();
      if (u >= max) {
        return; // whoever releases next hands out
      }
      if (!used.compareAndSet(u, u + 1)) {
        continue;
      }
      Runnable next = waiting.poll();
      if (next == null) {
        used.decrementAndGet(); // taken by a concurrent hand-out; look again
        continue;
      }
      try {
        executor.execute(next);
      } catch (RejectedExecutionException e) {
        used.decrementAndGet(); // the runtime is closing
        return;
      }
    }
  }
}
