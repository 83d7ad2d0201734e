package io.dgen.internal.doorbell;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.backend.Backend;
import io.dgen.backend.Futures;
import io.dgen.backend.KeyValue;
import io.dgen.backend.ReadTransaction;
import io.dgen.backend.Transaction;
import io.dgen.internal.doorbell.WatchedBucket.Sample;
import io.dgen.internal.keys.TenantKeys;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The reading side of one tenant's doorbells, for its {@link TenantWatcher}: the <em>cycles</em>,
 * one read-only transaction at a time, that read the wake logs of the buckets whose bells rang and
 * re-arm their watches, ring the listeners and holders of what they read, and trim the logs.
 *
 * <p>A bucket is read at once when it rings while a listener of it is parked or a holder needs its
 * activations (at most every {@link #HELD_INTERVAL_NANOS}); otherwise the ring only marks it
 * unread, and it is read when a listener parks or within a second.
 *
 * <p><b>Trimming.</b> Each bucket's log is trimmed as the tenant log was: an entry this watcher
 * read {@link #TRIM_AGE_NANOS} ago, and everything before it, is cleared (by whichever runtime gets
 * there first, many buckets to a transaction), and that entry, now the first, is marked. A watcher
 * that finds the entry it read last gone, or, having seen none, a marked first entry, may have
 * missed rings: it rings every listener of the bucket once, and tells its holder to rescan.
 *
 * <p>Threading: thread-safe. Cycles never overlap (a work-in-progress counter); a bucket's cursor
 * and trim samples are touched only by cycles.
 */
final class WakeLogReader {

  private static final Logger log = LoggerFactory.getLogger(WakeLogReader.class);

  /** Entries read per bucket and cycle; a full chunk is followed by another cycle at once. */
  static final int LOG_CHUNK = 1_000;

  /** Buckets read per cycle at most. */
  static final int BUCKETS_PER_CYCLE = 256;

  /** How long an entry stays in a log after a watcher has read it. */
  static final long TRIM_AGE_NANOS = TimeUnit.SECONDS.toNanos(30);

  /** How often a bucket nobody waits on (no listener parked, no holder) is read when rung. */
  private static final long HEARTBEAT_NANOS = TimeUnit.SECONDS.toNanos(1);

  /** How often a held bucket with no listener parked is read at most while it keeps ringing. */
  static final long HELD_INTERVAL_NANOS = TimeUnit.MILLISECONDS.toNanos(10);

  /** How often a cycle samples a bucket's position in its log, for the trims. */
  static final long SAMPLE_INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(1);

  private static final long RETRY_NANOS = TimeUnit.MILLISECONDS.toNanos(100);

  /** Buckets trimmed per transaction at most. */
  private static final int TRIMS_PER_TRANSACTION = 100;

  /** What a cycle read of one bucket. */
  private record Read(
      WatchedBucket bucket,
      boolean first,
      List<KeyValue> rows,
      boolean full,
      @Nullable CompletableFuture<Void> bell) {}

  private final TenantKeys keys;
  private final Backend backend;
  private final Executor executor;
  private final ScheduledExecutorService scheduler;
  private final LongSupplier nanoTime;
  private final String context;

  private final ConcurrentLinkedQueue<WatchedBucket> pending = new ConcurrentLinkedQueue<>();
  private final AtomicInteger cycleRequests = new AtomicInteger();
  private final AtomicBoolean trimming = new AtomicBoolean();
  private volatile boolean closed;

  // touched by cycles only
  private boolean warnedWatch;

  WakeLogReader(
      TenantKeys keys,
      Backend backend,
      Executor executor,
      ScheduledExecutorService scheduler,
      LongSupplier nanoTime,
      String context) {
    this.keys = keys;
    this.backend = backend;
    this.executor = executor;
    this.scheduler = scheduler;
    this.nanoTime = nanoTime;
    this.context = context;
  }

  /** Stops: no cycle starts any more, and no watch is armed. */
  void close() {
    closed = true;
  }

  /** Reads {@code b} in the next cycle. */
  void request(WatchedBucket b) {
    if (!b.dropped() && b.queued.compareAndSet(false, true)) {
      pending.add(b);
      requestCycle();
    }
  }

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

  /** One read of the logs of the buckets pending; {@code requests} is how many it answers. */
  private void cycle(int requests) {
    if (closed) {
      return;
    }
    List<WatchedBucket> batch = new ArrayList<>();
    WatchedBucket b;
    while (batch.size() < BUCKETS_PER_CYCLE && (b = pending.poll()) != null) {
      b.queued.set(false);
      if (!b.dropped()) {
        b.unread = false;
        b.lastReadNanos = nanoTime.getAsLong();
        batch.add(b);
      }
    }
    if (batch.isEmpty()) {
      finishCycle(requests);
      return;
    }
    backend
        .runAsync(tx -> readAll(tx, batch))
        .whenComplete((reads, err) -> execute(() -> afterCycle(requests, batch, reads, err)));
  }

  private CompletableFuture<List<Read>> readAll(Transaction tx, List<WatchedBucket> batch) {
    ReadTransaction snap = tx.snapshot();
    List<CompletableFuture<Read>> reads = new ArrayList<>(batch.size());
    for (WatchedBucket b : batch) {
      var space = keys.log(b.id);
      boolean first = !b.positioned;
      byte[] from = b.last != null ? b.last : space.range().begin;
      CompletableFuture<List<KeyValue>> rows =
          first
              ? snap.getRangeAsync(space.range().begin, space.range().end, 1, true)
              : snap.getRangeAsync(from, space.range().end, LOG_CHUNK, false);
      reads.add(
          rows.thenApply(
              r -> {
                boolean full = !first && r.size() >= LOG_CHUNK;
                // A watch still armed (from an earlier read) fires for any later ring too.
                boolean watch = first || (!full && b.bell.get() == null);
                return new Read(b, first, r, full, watch ? tx.watch(keys.bell(b.id)) : null);
              }));
    }
    return CompletableFuture.allOf(reads.toArray(CompletableFuture[]::new))
        .thenApply(v -> reads.stream().map(CompletableFuture::join).toList());
  }

  private void afterCycle(
      int requests,
      List<WatchedBucket> batch,
      @Nullable List<Read> reads,
      @Nullable Throwable err) {
    try {
      if (err != null || reads == null) {
        for (WatchedBucket b : batch) {
          b.unread = true;
        }
        if (!closed) {
          log.warn("reading the wake logs failed; retrying in 100 ms: {}", context, err);
          schedule(
              () -> {
                for (WatchedBucket b : batch) {
                  request(b);
                }
              },
              RETRY_NANOS);
        }
        return;
      }
      List<Map.Entry<WatchedBucket, byte[]>> trims = new ArrayList<>();
      for (Read r : reads) {
        if (r.bucket().dropped()) {
          if (r.bell() != null) {
            r.bell().cancel(false);
          }
          continue;
        }
        byte[] trim = afterRead(r);
        if (trim != null) {
          trims.add(Map.entry(r.bucket(), trim));
        }
      }
      if (!trims.isEmpty() && trimming.compareAndSet(false, true)) {
        trim(trims);
      }
    } finally {
      finishCycle(requests);
    }
  }

  private void finishCycle(int requests) {
    if (cycleRequests.addAndGet(-requests) != 0) {
      execute(() -> cycle(cycleRequests.get()));
    } else if (!pending.isEmpty()) {
      requestCycle(); // buckets left over from a full cycle; exactly one caller starts it
    }
  }

  /** Acts on one bucket's read; returns the entry to trim up to, if a trim of it is due. */
  private byte @Nullable [] afterRead(Read read) {
    WatchedBucket b = read.bucket();
    if (read.first()) {
      b.positioned = true;
      b.last = read.rows().isEmpty() ? null : read.rows().get(0).key();
      arm(b, Objects.requireNonNull(read.bell()));
      b.ringAll(); // they may have looked before this position; later listeners look after it
      return null;
    }
    List<KeyValue> rows = read.rows();
    int from = 0;
    boolean missed;
    if (b.last != null) {
      missed = rows.isEmpty() || !Arrays.equals(rows.get(0).key(), b.last);
      from = missed ? 0 : 1;
    } else {
      missed = !rows.isEmpty() && TenantKeys.isTrimmedHere(rows.get(0).value());
    }
    Activations holder = b.holder;
    for (int i = from; i < rows.size(); i++) {
      KeyValue kv = rows.get(i);
      long version = -1;
      WakeListener[] ls = b.listeners.get(TenantKeys.wakeId(kv.value()));
      if (ls != null) {
        version = keys.commitVersion(b.id, kv.key());
        for (WakeListener l : ls) {
          l.ring(version);
        }
      }
      Tuple tuid = holder == null ? null : TenantKeys.activated(kv.value());
      if (tuid != null) {
        holder.activate(tuid, version >= 0 ? version : keys.commitVersion(b.id, kv.key()));
      }
    }
    if (!rows.isEmpty()) {
      b.last = rows.get(rows.size() - 1).key();
    }
    if (missed) {
      if (rows.isEmpty()) {
        b.positioned = false; // take the log's end again, then ring everyone
        b.unread = true;
        request(b);
      } else {
        log.warn(
            "the wake log of bucket {} was trimmed past this runtime's position; waking all: {}",
            b.id,
            context);
        b.ringAll();
      }
    }
    if (read.full()) {
      b.unread = true;
      request(b); // read on
    } else if (read.bell() != null) {
      arm(b, read.bell());
    }
    return sample(b);
  }

  private void arm(WatchedBucket b, CompletableFuture<Void> watch) {
    CompletableFuture<Void> old = b.bell.getAndSet(watch);
    if (old != null) {
      old.cancel(false);
    }
    if (closed || b.dropped()) {
      watch.cancel(false);
      return;
    }
    watch.whenComplete((v, err) -> onBell(b, watch, err));
  }

  private void onBell(WatchedBucket b, CompletableFuture<Void> watch, @Nullable Throwable err) {
    if (Futures.unwrap(err) instanceof CancellationException) {
      return; // replaced, dropped or closed
    }
    b.bell.compareAndSet(watch, null);
    b.unread = true;
    if (closed || b.dropped()) {
      return;
    }
    if (err != null) {
      if (!warnedWatch) {
        warnedWatch = true;
        log.warn(
            "cannot watch a bucket's bell; reading its wake log every 100 ms instead: {}",
            context,
            Futures.unwrap(err));
      }
      schedule(() -> request(b), RETRY_NANOS);
    } else if (b.parked.get() > 0) {
      request(b);
    } else if (b.holder != null) {
      long wait = b.lastReadNanos + HELD_INTERVAL_NANOS - nanoTime.getAsLong();
      if (wait <= 0) {
        request(b);
      } else {
        schedule(() -> request(b), wait);
      }
    } else if (b.heartbeat.compareAndSet(false, true)) {
      schedule(
          () -> {
            b.heartbeat.set(false);
            if (b.unread) {
              request(b);
            }
          },
          HEARTBEAT_NANOS);
    }
  }

  // ---------------------------------------------------------------- trimming

  /** Samples {@code b}'s position; returns the entry a trim may clear up to, if one is due. */
  private byte @Nullable [] sample(WatchedBucket b) {
    byte[] at = b.last;
    if (at == null) {
      return null;
    }
    long now = nanoTime.getAsLong();
    Sample newest = b.samples.peekLast();
    if (newest == null || now - newest.nanos() >= SAMPLE_INTERVAL_NANOS) {
      b.samples.addLast(new Sample(now, at));
    }
    Sample due = null;
    while (!b.samples.isEmpty() && now - b.samples.peekFirst().nanos() >= TRIM_AGE_NANOS) {
      due = b.samples.pollFirst();
    }
    return due == null ? null : due.key();
  }

  /**
   * Removes, in each bucket, the entries before its boundary and marks the boundary as its log's
   * first entry; many buckets to a transaction.
   */
  private void trim(List<Map.Entry<WatchedBucket, byte[]>> due) {
    List<CompletableFuture<?>> parts = new ArrayList<>();
    for (int i = 0; i < due.size(); i += TRIMS_PER_TRANSACTION) {
      List<Map.Entry<WatchedBucket, byte[]>> part =
          due.subList(i, Math.min(due.size(), i + TRIMS_PER_TRANSACTION));
      parts.add(backend.runAsync(tx -> trim(tx, part)));
    }
    CompletableFuture.allOf(parts.toArray(CompletableFuture[]::new))
        .whenComplete(
            (v, err) -> {
              trimming.set(false);
              if (err != null && !closed) {
                log.warn("trimming wake logs failed; a later trim retries: {}", context, err);
              }
            });
  }

  private CompletableFuture<@Nullable Void> trim(
      Transaction tx, List<Map.Entry<WatchedBucket, byte[]>> part) {
    Map<WatchedBucket, CompletableFuture<byte @Nullable []>> reads = new HashMap<>();
    for (var e : part) {
      reads.put(e.getKey(), tx.getAsync(e.getValue()));
    }
    return CompletableFuture.allOf(reads.values().toArray(CompletableFuture[]::new))
        .thenApply(
            ignored -> {
              for (var e : part) {
                byte[] v = reads.get(e.getKey()).join();
                if (v != null) { // else a later trim passed it already
                  tx.clearRange(keys.log(e.getKey().id).range().begin, e.getValue());
                  if (!TenantKeys.isTrimmedHere(v)) {
                    tx.set(e.getValue(), TenantKeys.trimmedHere(v));
                  }
                }
              }
              return null;
            });
  }
}
