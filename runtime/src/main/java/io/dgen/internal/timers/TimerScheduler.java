package io.dgen.internal.timers;

import com.apple.foundationdb.subspace.Subspace;
import com.apple.foundationdb.tuple.Tuple;
import io.dgen.backend.Backend;
import io.dgen.backend.Futures;
import io.dgen.backend.KeyValue;
import io.dgen.backend.Transaction;
import io.dgen.internal.doorbell.TenantWatcher;
import io.dgen.internal.doorbell.WakeListener;
import io.dgen.internal.keys.ServerEntry;
import io.dgen.internal.keys.ServerKeys;
import io.dgen.internal.keys.TenantKeys;
import io.dgen.internal.keys.TimerEntry;
import io.dgen.internal.keys.TimerSchedule;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
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
 * Fires one bucket's due timers in this runtime: one per bucket that this runtime holds a lease in
 * or runs a started process in, holding no thread and no watch of its own, whatever the number of
 * timers.
 *
 * <p><b>A cycle</b> is one transaction: it reads the bucket's timers due by the runtime's clock (at
 * most {@link #BATCH}, in due order), and for each clears its two keys and pushes its envelope into
 * its server's queue through the publish step ({@link ServerEntry#publishFor}: versionstamped item,
 * push counter, a ring of the bucket, an activation for a hosted server). The read is not a
 * snapshot: runtimes firing the same timers conflict, and only one commits; a body re-run after
 * {@code commit_unknown_result} reads the timers its earlier attempt cleared as gone, so a timer
 * fires exactly once. A recurring timer is re-armed by the same transaction: its entry moves to its
 * next due time (the first occurrence after the clock's time, so a timer late by several
 * occurrences fires once), so each occurrence fires exactly once too. The same transaction reads
 * (as a snapshot) the earliest timer not yet due.
 *
 * <p><b>Sleeping.</b> After a cycle that fired nothing, the scheduler sleeps on the runtime's
 * scheduled executor until the earliest due time (at most {@link #MAX_SLEEP_MILLIS}, so that a wall
 * clock that jumps is noticed). It is a listener of its bucket's doorbell under the bucket's timer
 * wake id, which every transaction that schedules a timer in the bucket rings: a new, earlier timer
 * wakes it, with no polling and no watch besides the bucket's one. {@link #wake} starts a cycle at
 * once (a timer scheduled in this runtime, or the runtime's clock advanced by a test).
 *
 * <p>Threading: thread-safe; cycles never overlap (a work-in-progress counter).
 */
public final class TimerScheduler implements WakeListener {

  private static final Logger log = LoggerFactory.getLogger(TimerScheduler.class);

  /** Timers fired per transaction at most; a full batch is followed by another at once. */
  static final int BATCH = 200;

  /** The longest sleep, even until a later due time. */
  static final long MAX_SLEEP_MILLIS = 60_000;

  private static final long RETRY_MILLIS = 100;

  /** What a cycle did: how many timers it fired, and the next due time. */
  private record Cycle(int fired, long nextDue) {}

  private final Subspace tenant;
  private final TenantKeys keys;
  private final int bucket;
  private final TenantWatcher doorbell;
  private final Backend backend;
  private final Executor executor;
  private final ScheduledExecutorService scheduler;
  private final Clock clock;
  private final String context;

  private final AtomicInteger requests = new AtomicInteger();
  private final AtomicReference<@Nullable ScheduledFuture<?>> sleep = new AtomicReference<>();
  private volatile boolean closed;

  public TimerScheduler(
      Subspace tenant,
      int bucket,
      TenantWatcher doorbell,
      Backend backend,
      Executor executor,
      ScheduledExecutorService scheduler,
      Clock clock,
      String context) {
    this.tenant = tenant;
    this.keys = doorbell.keys();
    this.bucket = bucket;
    this.doorbell = doorbell;
    this.backend = backend;
    this.executor = executor;
    this.scheduler = scheduler;
    this.clock = clock;
    this.context = context + " bucket=" + bucket;
  }

  /** Starts listening to the bucket's timer rings and looks for due timers at once. */
  public void start() {
    doorbell.register(bucket, keys.timersWakeId(bucket), this);
    wake();
  }

  /** Looks for due timers now (and re-arms the sleep). */
  public void wake() {
    if (!closed && requests.getAndIncrement() == 0) {
      execute(() -> cycle(requests.get()));
    }
  }

  @Override
  public void ring(long version) {
    wake(); // a timer was scheduled in this bucket: it may be due before the current sleep ends
  }

  @Override
  public void ringAll() {
    wake();
  }

  /**
   * Fires every timer of the bucket due by the clock's time now, in the caller's thread, {@value
   * #BATCH} per transaction; a concurrent cycle that fires the same ones conflicts with it, so none
   * fires twice.
   *
   * @return how many it fired
   */
  public int fireDue() {
    int total = 0;
    while (true) {
      int n =
          backend.run(
              tx -> {
                List<KeyValue> rows =
                    tx.getRange(keys.timers(bucket).range().begin, dueEnd(), BATCH, false);
                Futures.join(fire(tx, rows));
                return rows.size();
              });
      total += n;
      if (n < BATCH) {
        return total;
      }
    }
  }

  /** Stops: no more cycles, and the bucket's doorbell no longer rings it. */
  public void close() {
    closed = true;
    doorbell.unregister(bucket, keys.timersWakeId(bucket), this);
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
    Subspace timers = keys.timers(bucket);
    backend
        .runAsync(
            tx -> {
              byte[] dueEnd = dueEnd();
              var due = tx.getRangeAsync(timers.range().begin, dueEnd, BATCH, false);
              var next = tx.snapshot().getRangeAsync(dueEnd, timers.range().end, 1, false);
              return due.thenCombine(next, (rows, later) -> Map.entry(rows, later))
                  .thenCompose(
                      found ->
                          fire(tx, found.getKey())
                              .thenApply(
                                  v ->
                                      new Cycle(
                                          found.getKey().size(),
                                          found.getValue().isEmpty()
                                              ? Long.MAX_VALUE
                                              : timers
                                                  .unpack(found.getValue().get(0).key())
                                                  .getLong(0))));
            })
        .whenComplete((c, err) -> execute(() -> afterCycle(answered, c, err)));
  }

  /** The end of the bucket's timers due by the clock's time now (exclusive). */
  private byte[] dueEnd() {
    return keys.timers(bucket).pack(Tuple.from(TimerSchedule.micros(clock.instant()) + 1));
  }

  /**
   * Moves due timers into their servers' queues, in due order; re-arms a recurring one at its next
   * due time, in the same transaction, under the same id.
   */
  private CompletableFuture<Void> fire(Transaction tx, List<KeyValue> rows) {
    List<CompletableFuture<?>> published = new ArrayList<>(rows.size());
    long now = TimerSchedule.micros(clock.instant());
    for (KeyValue kv : rows) {
      Tuple key = keys.timers(bucket).unpack(kv.key());
      UUID id = key.getUUID(1);
      TimerEntry entry = TimerEntry.decode(kv.value());
      ServerKeys server = new ServerKeys(tenant, keys.buckets(), Tuple.fromBytes(entry.tuid()));
      tx.clear(kv.key());
      long next =
          entry.schedule() == null ? Long.MAX_VALUE : entry.schedule().next(key.getLong(0), now);
      if (next == Long.MAX_VALUE) {
        tx.clear(server.timers().pack(Tuple.from(id)));
      } else {
        tx.set(keys.timers(bucket).pack(Tuple.from(next, id)), kv.value());
        tx.set(server.timers().pack(Tuple.from(id)), Tuple.from(next).pack());
      }
      server.push(tx, ServerKeys.LANE_NORMAL, entry.envelope());
      published.add(ServerEntry.publishFor(tx, keys, server));
    }
    return CompletableFuture.allOf(published.toArray(CompletableFuture[]::new));
  }

  private void afterCycle(int answered, @Nullable Cycle c, @Nullable Throwable err) {
    try {
      if (closed) {
        return;
      }
      if (err != null || c == null) {
        log.warn("firing timers failed; retrying in {} ms: {}", RETRY_MILLIS, context, err);
        sleepFor(TimeUnit.MILLISECONDS.toMicros(RETRY_MILLIS));
        return;
      }
      if (c.fired() > 0) {
        requests.incrementAndGet(); // look again at once: more may be due
      } else if (c.nextDue() != Long.MAX_VALUE) {
        long in = c.nextDue() - TimerSchedule.micros(clock.instant());
        sleepFor(Math.min(in, TimeUnit.MILLISECONDS.toMicros(MAX_SLEEP_MILLIS)));
      }
    } finally {
      if (requests.addAndGet(-answered) != 0) {
        execute(() -> cycle(requests.get()));
      }
    }
  }

  /**
   * Moves the timers of earlier versions, kept tenant-wide under {@code FF (3, due, id)}, into
   * their buckets' indexes and rings each bucket's timer wake id, {@value #BATCH} per transaction.
   * Runs once per tenant and runtime; cheap when there are none (one empty range read).
   */
  public static void migrateLegacy(Backend backend, Subspace tenant, TenantKeys keys) {
    Subspace legacy = keys.legacyTimers();
    while (true) {
      int n =
          backend.run(
              tx -> {
                List<KeyValue> rows =
                    tx.getRange(legacy.range().begin, legacy.range().end, BATCH, false);
                for (KeyValue kv : rows) {
                  Tuple key = legacy.unpack(kv.key());
                  int b = keys.buckets().of(TimerEntry.decode(kv.value()).tuid());
                  tx.set(keys.timers(b).pack(key), kv.value());
                  tx.clear(kv.key());
                  keys.ring(tx, b, keys.timersWakeId(b));
                }
                return rows.size();
              });
      if (n < BATCH) {
        return;
      }
    }
  }
}
