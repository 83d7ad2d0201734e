package io.dgen.internal;

import com.apple.foundationdb.subspace.Subspace;
import io.dgen.backend.Backend;
import io.dgen.backend.Futures;
import io.dgen.backend.KeyValue;
import io.dgen.backend.ReadTransaction;
import io.dgen.backend.Transaction;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One tenant's doorbell in this runtime: the one watch that stands in for a watch per idle consumer
 * and per waiting caller (FoundationDB allows 10,000 per client).
 *
 * <p><b>Ringing.</b> A transaction that pushes to a server, replies into a reply slot or releases a
 * lock also appends the wake id of that server or slot to the tenant's versionstamped wake log and
 * {@code ADD}s 1 to the tenant's bell ({@link #ring}): blind writes, so rings never conflict.
 *
 * <p><b>Watching.</b> Local consumers and waiting calls register under their wake id. One read at a
 * time (a <em>cycle</em>) reads the log from the last entry it saw and, in the same read-only
 * transaction, arms a watch on the bell; each entry rings the listeners registered under its id
 * with its commit version, and a commit after the read changes the bell and fires the watch. The
 * watcher reads eagerly while some listener is parked (an idle consumer, a waiting caller); while
 * none is, a fired bell only marks the log unread, and it is read at the next park or within a
 * second. So an idle runtime does nothing, and a busy one reads the log about once a second.
 *
 * <p><b>Trimming.</b> Each watcher remembers, about once a second, the last entry it had read; an
 * entry it read {@link #TRIM_AGE} ago, and everything before it, is trimmed (by whichever runtime's
 * watcher gets there first), and that entry, now the first, is marked. A watcher that finds the
 * entry it read last gone — it was stalled for longer than the trim age — or, having seen none,
 * finds a marked first entry, may have missed rings: it rings every listener once.
 *
 * <p><b>No lost wake-up.</b> A listener compares a ring's commit version with the read version of
 * its own last look (a consumer's last batch): a commit after that look is in the log after the
 * cursor, or after the read whose watch is armed. The first cycle starts at the log's end and then
 * rings every listener registered so far; later listeners looked after it.
 *
 * <p>A kill rings the server's wake id like a push: its consumers in every runtime wake, find the
 * queue empty and the server gone ({@link ServerEntry}), and stop. More per-tenant work can live
 * here: a cycle can read more tenant-level keys in its transaction and arm their watches beside the
 * bell's, and the log's entries can name more kinds of wake ids.
 *
 * <p>Threading: thread-safe. Cycles never overlap (a work-in-progress counter); the cursor and the
 * trim samples are touched only by cycles.
 */
final class TenantWatcher {

  private static final Logger log = LoggerFactory.getLogger(TenantWatcher.class);

  /** Something the doorbell wakes: a process's consume loop, or a call waiting for its reply. */
  interface Listener {
    /** A transaction that committed at {@code version} rang this listener's wake id. */
    void ring(long version);

    /** Rings may have been missed: behave as if every commit so far had rung. */
    void ringAll();

    /** The watcher closed (the runtime is closing): no ring will come any more. */
    default void closed() {}
  }

  /** Entries read per cycle; a full chunk is followed by another cycle at once. */
  static final int LOG_CHUNK = 1_000;

  /** How long an entry stays in the log after a watcher has read it. */
  static final long TRIM_AGE_NANOS = TimeUnit.SECONDS.toNanos(30);

  /** How often a busy watcher (no listener parked) reads a rung log anyway. */
  private static final long HEARTBEAT_NANOS = TimeUnit.SECONDS.toNanos(1);

  static final long SAMPLE_INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(1);
  private static final long RETRY_NANOS = TimeUnit.MILLISECONDS.toNanos(100);

  private record Sample(long nanos, byte[] key) {}

  /**
   * What a cycle read: the entries (or, for the first cycle, the last one), whether they filled a
   * chunk (more may follow at once), and the bell's watch if it armed one.
   */
  private record Read(List<KeyValue> rows, boolean full, @Nullable CompletableFuture<Void> bell) {}

  private final TenantKeys keys;
  private final Backend backend;
  private final Executor executor;
  private final ScheduledExecutorService scheduler;
  private final LongSupplier nanoTime;
  private final String context;

  private final ConcurrentHashMap<Long, Listener[]> listeners = new ConcurrentHashMap<>();
  private final AtomicInteger parked = new AtomicInteger();
  private final AtomicInteger cycleRequests = new AtomicInteger();
  private final AtomicReference<@Nullable CompletableFuture<Void>> bell = new AtomicReference<>();
  private final AtomicBoolean heartbeat = new AtomicBoolean();
  private final AtomicBoolean trimming = new AtomicBoolean();
  private final AtomicBoolean started = new AtomicBoolean();
  private volatile boolean unread = true;
  private volatile boolean closed;

  // touched by cycles only
  private boolean positioned;
  private byte @Nullable [] last;
  private final ArrayDeque<Sample> samples = new ArrayDeque<>();
  private boolean warnedWatch;

  TenantWatcher(
      Subspace tenant,
      Backend backend,
      Executor executor,
      ScheduledExecutorService scheduler,
      LongSupplier nanoTime,
      String context) {
    this.keys = new TenantKeys(tenant);
    this.backend = backend;
    this.executor = executor;
    this.scheduler = scheduler;
    this.nanoTime = nanoTime;
    this.context = context;
  }

  TenantKeys keys() {
    return keys;
  }

  // ---------------------------------------------------------------- ringing

  /**
   * Rings {@code wakeId} in {@code tx}: a wake log entry and a bell {@code ADD}, both blind writes,
   * once per id and transaction.
   */
  void ring(Transaction tx, long wakeId) {
    keys.ring(tx, wakeId);
  }

  // ---------------------------------------------------------------- listeners

  /** Rings {@code listener} for every ring of {@code wakeId}, from now until it unregisters. */
  void register(long wakeId, Listener listener) {
    listeners.merge(wakeId, new Listener[] {listener}, TenantWatcher::concat);
    if (started.compareAndSet(false, true)) {
      requestCycle();
    }
  }

  void unregister(long wakeId, Listener listener) {
    listeners.computeIfPresent(wakeId, (id, ls) -> without(ls, listener));
  }

  /** Whether this doorbell holds a watch now (for the metrics). */
  boolean holdsWatch() {
    CompletableFuture<Void> w = bell.get();
    return w != null && !w.isDone();
  }

  /** A listener waits for a ring now: the log is read eagerly while any does. */
  void parked() {
    parked.incrementAndGet();
    if (unread || bell.get() == null) {
      requestCycle();
    }
  }

  /** A parked listener was woken (or stopped). */
  void unparked() {
    parked.decrementAndGet();
  }

  /** The number of listeners registered (for tests). */
  int listenerCount() {
    int n = 0;
    for (Listener[] ls : listeners.values()) {
      n += ls.length;
    }
    return n;
  }

  /** Every listener registered under {@code wakeId}, for a caller that must find them. */
  Listener[] listeners(long wakeId) {
    Listener[] ls = listeners.get(wakeId);
    return ls == null ? new Listener[0] : ls;
  }

  /**
   * Stops watching: cancels the bell's watch, and tells the listeners still registered that no ring
   * will come.
   */
  void close() {
    closed = true;
    CompletableFuture<Void> w = bell.getAndSet(null);
    if (w != null) {
      w.cancel(false);
    }
    for (Listener[] ls : listeners.values()) {
      for (Listener l : ls) {
        l.closed();
      }
    }
  }

  private static Listener[] concat(Listener[] a, Listener[] b) {
    Listener[] out = Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }

  private static Listener @Nullable [] without(Listener[] ls, Listener l) {
    int i = Arrays.asList(ls).indexOf(l);
    if (i < 0) {
      return ls;
    }
    if (ls.length == 1) {
      return null;
    }
    Listener[] out = new Listener[ls.length - 1];
    System.arraycopy(ls, 0, out, 0, i);
    System.arraycopy(ls, i + 1, out, i, ls.length - i - 1);
    return out;
  }

  // ---------------------------------------------------------------- cycles

  private void requestCycle() {
    if (!closed && cycleRequests.getAndIncrement() == 0) {
      execute(() -> cycle(cycleRequests.get()));
    }
  }

  private void execute(Runnable r) {
    try {
      executor.execute(r);
    } catch (RejectedExecutionException e) {
      closed = true; // the runtime is closing
    }
  }

  private void schedule(Runnable r, long nanos) {
    try {
      scheduler.schedule(() -> execute(r), nanos, TimeUnit.NANOSECONDS);
    } catch (RejectedExecutionException e) {
      closed = true;
    }
  }

  /** One read of the log; {@code requests} is how many cycle requests it answers. */
  private void cycle(int requests) {
    if (closed) {
      return;
    }
    unread = false;
    boolean first = !positioned;
    byte[] from = last != null ? last : keys.log().range().begin;
    byte[] end = keys.log().range().end;
    backend
        .runAsync(
            tx -> {
              ReadTransaction snap = tx.snapshot();
              CompletableFuture<List<KeyValue>> rows =
                  first
                      ? snap.getRangeAsync(keys.log().range().begin, end, 1, true)
                      : snap.getRangeAsync(from, end, LOG_CHUNK, false);
              return rows.thenApply(
                  r -> {
                    boolean full = !first && r.size() >= LOG_CHUNK;
                    // A watch still armed (from an earlier read) fires for any later ring too.
                    boolean watch = first || (!full && bell.get() == null);
                    return new Read(r, full, watch ? tx.watch(keys.bell()) : null);
                  });
            })
        .whenComplete((read, err) -> execute(() -> afterCycle(requests, first, read, err)));
  }

  private void afterCycle(
      int requests, boolean first, @Nullable Read read, @Nullable Throwable err) {
    try {
      if (err != null || read == null) {
        unread = true;
        if (!closed) {
          log.warn("reading the wake log failed; retrying in 100 ms: {}", context, err);
          schedule(this::requestCycle, RETRY_NANOS);
        }
        return;
      }
      if (first) {
        positioned = true;
        last = read.rows().isEmpty() ? null : read.rows().get(0).key();
        arm(Objects.requireNonNull(read.bell()));
        ringAll(); // they may have looked before this position; later listeners look after it
        return;
      }
      List<KeyValue> rows = read.rows();
      int from = 0;
      boolean missed;
      if (last != null) {
        missed = rows.isEmpty() || !Arrays.equals(rows.get(0).key(), last);
        from = missed ? 0 : 1;
      } else {
        missed = !rows.isEmpty() && TenantKeys.isTrimmedHere(rows.get(0).value());
      }
      for (int i = from; i < rows.size(); i++) {
        KeyValue kv = rows.get(i);
        Listener[] ls = listeners.get(TenantKeys.wakeId(kv.value()));
        if (ls != null) {
          long version = keys.commitVersion(kv.key());
          for (Listener l : ls) {
            l.ring(version);
          }
        }
      }
      if (!rows.isEmpty()) {
        last = rows.get(rows.size() - 1).key();
      }
      if (missed) {
        if (rows.isEmpty()) {
          positioned = false; // take the log's end again, then ring everyone
          unread = true;
          requestCycle();
        } else {
          log.warn(
              "the wake log was trimmed past this runtime's position; waking all: {}", context);
          ringAll();
        }
      }
      if (read.full()) {
        unread = true;
        requestCycle(); // read on
      } else if (read.bell() != null) {
        arm(read.bell());
      }
      sampleAndTrim();
    } finally {
      if (cycleRequests.addAndGet(-requests) != 0) {
        execute(() -> cycle(cycleRequests.get()));
      }
    }
  }

  private void ringAll() {
    for (Listener[] ls : listeners.values()) {
      for (Listener l : ls) {
        l.ringAll();
      }
    }
  }

  private void arm(CompletableFuture<Void> watch) {
    CompletableFuture<Void> old = bell.getAndSet(watch);
    if (old != null) {
      old.cancel(false);
    }
    if (closed) {
      watch.cancel(false);
      return;
    }
    watch.whenComplete((v, err) -> onBell(watch, err));
  }

  private void onBell(CompletableFuture<Void> watch, @Nullable Throwable err) {
    if (Futures.unwrap(err) instanceof CancellationException) {
      return; // replaced or closed
    }
    bell.compareAndSet(watch, null);
    unread = true;
    if (closed) {
      return;
    }
    if (err != null) {
      if (!warnedWatch) {
        warnedWatch = true;
        log.warn(
            "cannot watch the tenant's bell; reading its wake log every 100 ms instead: {}",
            context,
            Futures.unwrap(err));
      }
      schedule(this::requestCycle, RETRY_NANOS);
    } else if (parked.get() > 0) {
      requestCycle();
    } else if (heartbeat.compareAndSet(false, true)) {
      schedule(
          () -> {
            heartbeat.set(false);
            if (unread) {
              requestCycle();
            }
          },
          HEARTBEAT_NANOS);
    }
  }

  // ---------------------------------------------------------------- trimming

  private void sampleAndTrim() {
    byte[] at = last;
    if (at == null) {
      return;
    }
    long now = nanoTime.getAsLong();
    Sample newest = samples.peekLast();
    if (newest == null || now - newest.nanos() >= SAMPLE_INTERVAL_NANOS) {
      samples.addLast(new Sample(now, at));
    }
    Sample due = null;
    while (!samples.isEmpty() && now - samples.peekFirst().nanos() >= TRIM_AGE_NANOS) {
      due = samples.pollFirst();
    }
    if (due != null && trimming.compareAndSet(false, true)) {
      trim(due.key());
    }
  }

  /** Removes the entries before {@code boundary} and marks it as the log's first entry. */
  private void trim(byte[] boundary) {
    byte[] begin = keys.log().range().begin;
    backend
        .runAsync(
            tx ->
                tx.getAsync(boundary)
                    .thenApply(
                        v -> {
                          if (v != null) { // else a later trim passed it already
                            tx.clearRange(begin, boundary);
                            if (!TenantKeys.isTrimmedHere(v)) {
                              tx.set(boundary, TenantKeys.trimmedHere(v));
                            }
                          }
                          return null;
                        }))
        .whenComplete(
            (v, err) -> {
              trimming.set(false);
              if (err != null && !closed) {
                log.warn("trimming the wake log failed; a later trim retries: {}", context, err);
              }
            });
  }
}
