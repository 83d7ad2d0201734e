package io.dgen.internal.base;

import io.dgen.backend.Backend;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Range clears that need not happen at once, batched: reply slots whose reply has been read (by a
 * read-only transaction, so that a caller does not wait for a commit to get its reply) are cleared
 * a few milliseconds later, many to a transaction. Blind clears: they never conflict.
 *
 * <p>A clear lost to a crash or a failed transaction is harmless: the sweep removes slots by age.
 *
 * <p>Threading: thread-safe; one flush at a time.
 */
public final class DeferredClears {

  private static final Logger log = LoggerFactory.getLogger(DeferredClears.class);

  /** How long a clear may wait for others to share its transaction. */
  private static final long DELAY_NANOS = TimeUnit.MILLISECONDS.toNanos(5);

  /** Clears per transaction: range clears cost only their bounds, far below any limit. */
  private static final int PER_TRANSACTION = 1_000;

  private record Range(byte[] begin, byte[] end) {}

  private final Backend backend;
  private final ScheduledExecutorService scheduler;
  private final ConcurrentLinkedQueue<Range> pending = new ConcurrentLinkedQueue<>();
  private final AtomicBoolean scheduled = new AtomicBoolean();

  public DeferredClears(Backend backend, ScheduledExecutorService scheduler) {
    this.backend = backend;
    this.scheduler = scheduler;
  }

  /** Clears {@code [begin, end)} soon, in a transaction shared with other clears. */
  public void clear(byte[] begin, byte[] end) {
    pending.add(new Range(begin, end));
    flushLater();
  }

  private void flushLater() {
    if (scheduled.compareAndSet(false, true)) {
      try {
        scheduler.schedule(this::flush, DELAY_NANOS, TimeUnit.NANOSECONDS);
      } catch (RejectedExecutionException e) {
        scheduled.set(false); // the runtime is closing: the sweep removes what is left
      }
    }
  }

  private void flush() {
    List<Range> batch = new ArrayList<>();
    Range r;
    while (batch.size() < PER_TRANSACTION && (r = pending.poll()) != null) {
      batch.add(r);
    }
    CompletableFuture<Void> done =
        batch.isEmpty()
            ? CompletableFuture.completedFuture(null)
            : backend.runAsync(
                tx -> {
                  for (Range c : batch) {
                    tx.clearRange(c.begin(), c.end());
                  }
                  return CompletableFuture.completedFuture(null);
                });
    done.whenComplete(
        (v, err) -> {
          if (err != null) {
            log.warn("clearing {} read reply slots failed; the sweep removes them", batch.size());
          }
          scheduled.set(false);
          if (!pending.isEmpty()) {
            flushLater();
          }
        });
  }
}
