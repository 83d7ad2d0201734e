package io.dgen.internal.doorbell;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.backend.Backend;
import io.dgen.backend.Futures;
import io.dgen.backend.KeyValue;
import io.dgen.backend.ReadTransaction;
import io.dgen.backend.Transaction;
import io.dgen.internal.keys.TenantKeys;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
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
 * One tenant's doorbells in this runtime: one per bucket this runtime needs, each a single watch
 * that stands in for a watch per idle consumer and per waiting caller of the bucket (FoundationDB
 * allows 10,000 per client), and none for the buckets it does not need.
 *
 * <p><b>Ringing.</b> A transaction that pushes to a server, replies into a reply slot, releases a
 * lock or schedules a timer also appends the wake id of that server, slot or timer index to its
 * bucket's versionstamped wake log and {@code ADD}s 1 to the bucket's bell ({@link
 * TenantKeys#ring}): blind writes, so rings never conflict, and every message of a tenant touches
 * only its server's bucket. A push that makes a hosted server ready puts its tuid in the entry: an
 * activation.
 *
 * <p><b>Watching.</b> A bucket is watched while something here uses it: a listener (a consume loop,
 * a waiting call, a timer scheduler) registered under a wake id in it, or a lease holder ({@link
 * Activations}). One read-only transaction at a time (a <em>cycle</em>) reads the logs of the
 * buckets whose bells rang, each from the last entry it saw, and re-arms their watches; each entry
 * rings the listeners registered under its id with its commit version, and an activating entry
 * tells the bucket's holder. A bucket is read at once when it rings while a listener of it is
 * parked (an idle consumer, a waiting caller) or a holder needs its activations (at most every
 * {@link #HELD_INTERVAL_NANOS}); otherwise the ring only marks it unread, and it is read when a
 * listener parks or within a second. An idle runtime does nothing; a bucket nobody here uses any
 * more is dropped, its watch cancelled.
 *
 * <p><b>Trimming.</b> Each bucket's log is trimmed as the tenant log was: an entry this watcher
 * read {@link #TRIM_AGE_NANOS} ago, and everything before it, is cleared (by whichever runtime gets
 * there first, many buckets to a transaction), and that entry, now the first, is marked. A watcher
 * that finds the entry it read last gone, or, having seen none, a marked first entry, may have
 * missed rings: it rings every listener of the bucket once, and tells its holder to rescan.
 *
 * <p><b>No lost wake-up.</b> A listener compares a ring's commit version with the read version of
 * its own last look: a commit after that look is in the log after the cursor, or after the read
 * whose watch is armed. A bucket's first cycle starts at its log's end and then rings every
 * listener registered so far (and asks its holder to rescan); later listeners looked after it.
 *
 * <p>Threading: thread-safe. Cycles never overlap (a work-in-progress counter); a bucket's cursor
 * and trim samples are touched only by cycles. A bucket's users are counted: the last one to leave
 * drops it, and one that arrives after that makes a new one.
 */
public final class TenantWatcher {

  private static final Logger log = LoggerFactory.getLogger(TenantWatcher.class);

  /** Something a bucket's doorbell wakes: a consume loop, a waiting call, a timer scheduler. */
  public interface Listener {
    /** A transaction that committed at {@code version} rang this listener's wake id. */
    public void ring(long version);

    /** Rings may have been missed: behave as if every commit so far had rung. */
    void ringAll();

    /** The watcher closed (the runtime is closing): no ring will come any more. */
    default void closed() {}
  }

  /** The lease holder of a bucket: hears the servers that became ready there. */
  public interface Activations {
    /** A push that committed at {@code version} made hosted server {@code tuid} ready. */
    void activate(Tuple tuid, long version);

    /** Activations may have been missed: look at the bucket's ready index. */
    void rescan();
  }

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

  static final long SAMPLE_INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(1);
  private static final long RETRY_NANOS = TimeUnit.MILLISECONDS.toNanos(100);

  /** Buckets trimmed per transaction at most. */
  private static final int TRIMS_PER_TRANSACTION = 100;

  private record Sample(long nanos, byte[] key) {}

  /** What a cycle read of one bucket. */
  private record Read(
      Bucket bucket,
      boolean first,
      List<KeyValue> rows,
      boolean full,
      @Nullable CompletableFuture<Void> bell) {}

  /** One bucket's doorbell in this runtime. */
  private final class Bucket {
    final int id;
    final ConcurrentHashMap<Long, Listener[]> listeners = new ConcurrentHashMap<>();

    /** Users (listeners, a holder); -1 once dropped. */
    final AtomicInteger users = new AtomicInteger();

    final AtomicInteger parked = new AtomicInteger();
    final AtomicReference<@Nullable CompletableFuture<Void>> bell = new AtomicReference<>();
    final AtomicBoolean queued = new AtomicBoolean();
    final AtomicBoolean heartbeat = new AtomicBoolean();
    volatile @Nullable Activations holder;
    volatile boolean unread = true;
    volatile long lastReadNanos;

    // touched by cycles only
    boolean positioned;
    byte @Nullable [] last;
    final ArrayDeque<Sample> samples = new ArrayDeque<>();

    Bucket(int id) {
      this.id = id;
    }

    boolean retain() {
      int u;
      do {
        u = users.get();
        if (u < 0) {
          return false;
        }
      } while (!users.compareAndSet(u, u + 1));
      return true;
    }

    boolean dropped() {
      return users.get() < 0;
    }

    /** Whether a ring must be read at once: someone waits on this bucket. */
    boolean eager() {
      return parked.get() > 0 || holder != null;
    }
  }

  private final TenantKeys keys;
  private final Backend backend;
  private final Executor executor;
  private final ScheduledExecutorService scheduler;
  private final LongSupplier nanoTime;
  private final String context;

  private final ConcurrentHashMap<Integer, Bucket> buckets = new ConcurrentHashMap<>();
  private final ConcurrentLinkedQueue<Bucket> pending = new ConcurrentLinkedQueue<>();
  private final AtomicInteger cycleRequests = new AtomicInteger();
  private final AtomicBoolean trimming = new AtomicBoolean();
  private volatile boolean closed;

  // touched by cycles only
  private boolean warnedWatch;

  public TenantWatcher(
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

  public TenantKeys keys() {
    return keys;
  }

  // ---------------------------------------------------------------- ringing

  /**
   * Rings {@code wakeId} in {@code bucket} in {@code tx}: a wake log entry and a bell {@code ADD},
   * both blind writes, once per id and transaction.
   */
  public void ring(Transaction tx, int bucket, long wakeId) {
    keys.ring(tx, bucket, wakeId);
  }

  // ---------------------------------------------------------------- users

  /**
   * The bucket {@code id}, retained for one more user. The user adds itself, then calls {@link
   * #lookIfUnwatched}: a new bucket's first cycle must see it, to ring it after positioning.
   */
  private Bucket retain(int id) {
    while (true) {
      Bucket b = buckets.computeIfAbsent(id, Bucket::new);
      if (b.retain()) {
        return b;
      }
      buckets.remove(id, b); // dropped meanwhile: make a new one
    }
  }

  /** Reads {@code b} soon if it is not watched yet (a new bucket: its first cycle positions it). */
  private void lookIfUnwatched(Bucket b) {
    if (b.unread || b.bell.get() == null) {
      request(b);
    }
  }

  /** One user of {@code b} left; the last one drops it and cancels its watch. */
  private void release(Bucket b) {
    if (b.users.decrementAndGet() == 0 && b.users.compareAndSet(0, -1)) {
      buckets.remove(b.id, b);
      CompletableFuture<Void> w = b.bell.getAndSet(null);
      if (w != null) {
        w.cancel(false);
      }
    }
  }

  private @Nullable Bucket live(int id) {
    Bucket b = buckets.get(id);
    return b == null || b.dropped() ? null : b;
  }

  /**
   * Rings {@code listener} for every ring of {@code wakeId} in {@code bucket}, from now until it
   * unregisters.
   */
  public void register(int bucket, long wakeId, Listener listener) {
    Bucket b = retain(bucket);
    b.listeners.merge(wakeId, new Listener[] {listener}, TenantWatcher::concat);
    lookIfUnwatched(b);
  }

  public void unregister(int bucket, long wakeId, Listener listener) {
    Bucket b = live(bucket);
    if (b == null) {
      return;
    }
    boolean[] removed = new boolean[1];
    b.listeners.computeIfPresent(
        wakeId,
        (id, ls) -> {
          Listener[] rest = without(ls, listener);
          removed[0] = rest != ls;
          return rest;
        });
    if (removed[0]) {
      release(b);
    }
  }

  /**
   * Makes {@code holder} hear the activations of {@code bucket} (this runtime holds a lease there)
   * until {@link #unhold}; the bucket is read at once whenever it rings.
   */
  public void hold(int bucket, Activations holder) {
    Bucket b = retain(bucket);
    b.holder = holder;
    lookIfUnwatched(b);
  }

  /** {@code holder} no longer holds {@code bucket}. */
  public void unhold(int bucket, Activations holder) {
    Bucket b = live(bucket);
    if (b != null && b.holder == holder) {
      b.holder = null;
      release(b);
    }
  }

  /**
   * A listener of {@code bucket} waits for a ring now: the bucket is read eagerly while any does.
   */
  public void parked(int bucket) {
    Bucket b = live(bucket);
    if (b == null) {
      return;
    }
    b.parked.incrementAndGet();
    if (b.unread || b.bell.get() == null) {
      request(b);
    }
  }

  /** A parked listener of {@code bucket} was woken (or stopped). */
  public void unparked(int bucket) {
    Bucket b = live(bucket);
    if (b != null) {
      b.parked.decrementAndGet();
    }
  }

  /** Every listener registered under {@code wakeId} in {@code bucket}. */
  public Listener[] listeners(int bucket, long wakeId) {
    Bucket b = live(bucket);
    Listener[] ls = b == null ? null : b.listeners.get(wakeId);
    return ls == null ? new Listener[0] : ls;
  }

  /** The number of listeners registered (for tests). */
  int listenerCount() {
    int n = 0;
    for (Bucket b : buckets.values()) {
      for (Listener[] ls : b.listeners.values()) {
        n += ls.length;
      }
    }
    return n;
  }

  /** The buckets this runtime uses now. */
  int bucketsInUse() {
    return buckets.size();
  }

  /** The watches this doorbell holds now (for the metrics). */
  public int watches() {
    int n = 0;
    for (Bucket b : buckets.values()) {
      CompletableFuture<Void> w = b.bell.get();
      if (w != null && !w.isDone()) {
        n++;
      }
    }
    return n;
  }

  /**
   * Stops watching: cancels every bucket's watch, and tells the listeners still registered that no
   * ring will come.
   */
  public void close() {
    closed = true;
    for (Bucket b : buckets.values()) {
      CompletableFuture<Void> w = b.bell.getAndSet(null);
      if (w != null) {
        w.cancel(false);
      }
      for (Listener[] ls : b.listeners.values()) {
        for (Listener l : ls) {
          l.closed();
        }
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

  /** Reads {@code b} in the next cycle. */
  private void request(Bucket b) {
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
    List<Bucket> batch = new ArrayList<>();
    Bucket b;
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

  private CompletableFuture<List<Read>> readAll(Transaction tx, List<Bucket> batch) {
    ReadTransaction snap = tx.snapshot();
    List<CompletableFuture<Read>> reads = new ArrayList<>(batch.size());
    for (Bucket b : batch) {
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
      int requests, List<Bucket> batch, @Nullable List<Read> reads, @Nullable Throwable err) {
    try {
      if (err != null || reads == null) {
        for (Bucket b : batch) {
          b.unread = true;
        }
        if (!closed) {
          log.warn("reading the wake logs failed; retrying in 100 ms: {}", context, err);
          schedule(
              () -> {
                for (Bucket b : batch) {
                  request(b);
                }
              },
              RETRY_NANOS);
        }
        return;
      }
      List<Map.Entry<Bucket, byte[]>> trims = new ArrayList<>();
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
    Bucket b = read.bucket();
    if (read.first()) {
      b.positioned = true;
      b.last = read.rows().isEmpty() ? null : read.rows().get(0).key();
      arm(b, Objects.requireNonNull(read.bell()));
      ringAll(b); // they may have looked before this position; later listeners look after it
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
      Listener[] ls = b.listeners.get(TenantKeys.wakeId(kv.value()));
      if (ls != null) {
        version = keys.commitVersion(b.id, kv.key());
        for (Listener l : ls) {
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
        ringAll(b);
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

  private void ringAll(Bucket b) {
    for (Listener[] ls : b.listeners.values()) {
      for (Listener l : ls) {
        l.ringAll();
      }
    }
    Activations holder = b.holder;
    if (holder != null) {
      holder.rescan();
    }
  }

  private void arm(Bucket b, CompletableFuture<Void> watch) {
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

  private void onBell(Bucket b, CompletableFuture<Void> watch, @Nullable Throwable err) {
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
  private byte @Nullable [] sample(Bucket b) {
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
  private void trim(List<Map.Entry<Bucket, byte[]>> due) {
    List<CompletableFuture<?>> parts = new ArrayList<>();
    for (int i = 0; i < due.size(); i += TRIMS_PER_TRANSACTION) {
      List<Map.Entry<Bucket, byte[]>> part =
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
      Transaction tx, List<Map.Entry<Bucket, byte[]>> part) {
    Map<Bucket, CompletableFuture<byte @Nullable []>> reads = new HashMap<>();
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
