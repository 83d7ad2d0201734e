package io.dgen.internal;

import com.apple.foundationdb.subspace.Subspace;
import com.apple.foundationdb.tuple.Tuple;
import io.dgen.backend.Backend;
import io.dgen.backend.Futures;
import io.dgen.backend.KeyValue;
import io.dgen.backend.Transaction;
import java.nio.ByteBuffer;
import java.time.Clock;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Fires one tenant's due timers in this runtime: one per tenant and runtime, holding no thread and
 * one watch, whatever the number of timers.
 *
 * <p><b>A cycle</b> is one transaction: it reads the timers due by the runtime's clock (at most
 * {@link #BATCH}, in due order), and for each clears its two keys and pushes its envelope into its
 * server's queue through the normal push (versionstamped item, push counter, doorbell ring). The
 * read is not a snapshot: runtimes firing the same timers conflict, and only one commits; a body
 * re-run after {@code commit_unknown_result} reads the timers its earlier attempt cleared as gone,
 * so a timer fires exactly once. The same transaction reads (as a snapshot) the earliest timer not
 * yet due; when it fired nothing, it also arms a watch on the tenant's alarm.
 *
 * <p><b>Sleeping.</b> After a cycle that fired nothing, the scheduler sleeps on the runtime's
 * scheduled executor until the earliest due time (at most {@link #MAX_SLEEP_MILLIS}, so that a wall
 * clock that jumps is noticed), and on the alarm's watch, which every transaction that schedules a
 * timer changes: a new, earlier timer re-arms it, with no polling. {@link #wake} starts a cycle at
 * once (a timer scheduled in this runtime, or the runtime's clock advanced by a test).
 *
 * <p>Threading: thread-safe; cycles never overlap (a work-in-progress counter).
 */
final class TimerScheduler {

  private static final Logger log = LoggerFactory.getLogger(TimerScheduler.class);

  /** Timers fired per transaction at most; a full batch is followed by another at once. */
  static final int BATCH = 200;

  /** The longest sleep, even until a later due time. */
  static final long MAX_SLEEP_MILLIS = 60_000;

  private static final long RETRY_MILLIS = 100;

  /** What a cycle did: how many timers it fired, the next due time, the alarm's watch if armed. */
  private record Cycle(int fired, long nextDue, @Nullable CompletableFuture<Void> alarm) {}

  private final Subspace tenant;
  private final TenantKeys keys;
  private final TenantWatcher doorbell;
  private final Backend backend;
  private final Executor executor;
  private final ScheduledExecutorService scheduler;
  private final Clock clock;
  private final String context;

  private final AtomicInteger requests = new AtomicInteger();
  private final AtomicReference<@Nullable CompletableFuture<Void>> alarm = new AtomicReference<>();
  private final AtomicReference<@Nullable ScheduledFuture<?>> sleep = new AtomicReference<>();
  private volatile boolean closed;

  TimerScheduler(
      Subspace tenant,
      TenantWatcher doorbell,
      Backend backend,
      Executor executor,
      ScheduledExecutorService scheduler,
      Clock clock,
      String context) {
    this.tenant = tenant;
    this.keys = doorbell.keys();
    this.doorbell = doorbell;
    this.backend = backend;
    this.executor = executor;
    this.scheduler = scheduler;
    this.clock = clock;
    this.context = context;
  }

  TenantKeys keys() {
    return keys;
  }

  /** Looks for due timers now (and re-arms the sleep). */
  void wake() {
    if (!closed && requests.getAndIncrement() == 0) {
      execute(() -> cycle(requests.get()));
    }
  }

  /** Whether this scheduler holds the alarm's watch now (for the metrics). */
  boolean holdsWatch() {
    CompletableFuture<Void> w = alarm.get();
    return w != null && !w.isDone();
  }

  /**
   * Fires every timer due by the clock's time now, in the caller's thread, {@value #BATCH} per
   * transaction; a concurrent cycle that fires the same ones conflicts with it, so none fires
   * twice.
   *
   * @return how many it fired
   */
  int fireDue() {
    Subspace timers = keys.timers();
    int total = 0;
    while (true) {
      int n =
          backend.run(
              tx -> {
                byte[] dueEnd = dueEnd();
                List<KeyValue> rows = tx.getRange(timers.range().begin, dueEnd, BATCH, false);
                fire(tx, rows);
                return rows.size();
              });
      total += n;
      if (n < BATCH) {
        return total;
      }
    }
  }

  void close() {
    closed = true;
    CompletableFuture<Void> w = alarm.getAndSet(null);
    if (w != null) {
      w.cancel(false);
    }
    ScheduledFuture<?> s = sleep.getAndSet(null);
    if (s != null) {
      s.cancel(false);
    }
  }

  private void execute(Runnable r) {
    try {
      executor.execute(r);
    } catch (RejectedExecutionException e) {
      closed = true; // the runtime is closing
    }
  }

  private void sleepFor(long micros) {
    try {
      ScheduledFuture<?> next =
          scheduler.schedule(() -> wake(), Math.max(micros, 0), TimeUnit.MICROSECONDS);
      ScheduledFuture<?> old = sleep.getAndSet(next);
      if (old != null) {
        old.cancel(false);
      }
      if (closed) {
        next.cancel(false);
      }
    } catch (RejectedExecutionException e) {
      closed = true;
    }
  }

  private void cycle(int answered) {
    if (closed) {
      return;
    }
    Subspace timers = keys.timers();
    backend
        .runAsync(
            tx -> {
              byte[] dueEnd = dueEnd();
              var due = tx.getRangeAsync(timers.range().begin, dueEnd, BATCH, false);
              var next = tx.snapshot().getRangeAsync(dueEnd, timers.range().end, 1, false);
              return due.thenCombine(
                  next,
                  (rows, later) -> {
                    fire(tx, rows);
                    long nextDue =
                        later.isEmpty()
                            ? Long.MAX_VALUE
                            : timers.unpack(later.get(0).key()).getLong(0);
                    boolean watch = rows.isEmpty() && alarm.get() == null;
                    return new Cycle(rows.size(), nextDue, watch ? tx.watch(keys.alarm()) : null);
                  });
            })
        .whenComplete((c, err) -> execute(() -> afterCycle(answered, c, err)));
  }

  /** The end of the timers due by the clock's time now (exclusive). */
  private byte[] dueEnd() {
    return keys.timers().pack(Tuple.from(Timers.micros(clock.instant()) + 1));
  }

  /** Moves due timers into their servers' queues, in due order. */
  private void fire(Transaction tx, List<KeyValue> rows) {
    for (KeyValue kv : rows) {
      Tuple key = keys.timers().unpack(kv.key());
      ByteBuffer value = ByteBuffer.wrap(kv.value());
      byte[] tuid = new byte[value.getInt()];
      value.get(tuid);
      byte[] envelope = Arrays.copyOfRange(kv.value(), value.position(), kv.value().length);
      ServerKeys server = new ServerKeys(tenant, Tuple.fromBytes(tuid));
      tx.clear(kv.key());
      tx.clear(server.timers().pack(Tuple.from(key.getUUID(1))));
      ServerQueue.push(tx, server, doorbell, ServerKeys.LANE_NORMAL, envelope);
    }
  }

  private void afterCycle(int answered, @Nullable Cycle c, @Nullable Throwable err) {
    try {
      if (closed) {
        if (c != null && c.alarm() != null) {
          c.alarm().cancel(false); // armed by a cycle that ended after close: free its slot
        }
        return;
      }
      if (err != null || c == null) {
        log.warn("firing timers failed; retrying in {} ms: {}", RETRY_MILLIS, context, err);
        sleepFor(TimeUnit.MILLISECONDS.toMicros(RETRY_MILLIS));
        return;
      }
      if (c.alarm() != null) {
        arm(c.alarm());
      }
      if (c.fired() > 0) {
        requests.incrementAndGet(); // look again at once: more may be due
      } else if (c.nextDue() != Long.MAX_VALUE) {
        long in = c.nextDue() - Timers.micros(clock.instant());
        sleepFor(Math.min(in, TimeUnit.MILLISECONDS.toMicros(MAX_SLEEP_MILLIS)));
      }
    } finally {
      if (requests.addAndGet(-answered) != 0) {
        execute(() -> cycle(requests.get()));
      }
    }
  }

  private void arm(CompletableFuture<Void> watch) {
    CompletableFuture<Void> old = alarm.getAndSet(watch);
    if (old != null) {
      old.cancel(false);
    }
    if (closed) {
      watch.cancel(false);
      return;
    }
    watch.whenComplete(
        (v, err) -> {
          if (Futures.unwrap(err) instanceof CancellationException) {
            return; // replaced or closed
          }
          alarm.compareAndSet(watch, null);
          if (err != null && !closed) {
            log.warn("cannot watch the timers' alarm; looking again in 1 s: {}", context, err);
            sleepFor(TimeUnit.SECONDS.toMicros(1));
          } else {
            wake();
          }
        });
  }
}
