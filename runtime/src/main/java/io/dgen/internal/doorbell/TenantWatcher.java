package io.dgen.internal.doorbell;

import io.dgen.backend.Backend;
import io.dgen.backend.Transaction;
import io.dgen.internal.keys.TenantKeys;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledExecutorService;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;

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
 * {@link WakeLogReader#HELD_INTERVAL_NANOS}); otherwise the ring only marks it unread, and it is
 * read when a listener parks or within a second. An idle runtime does nothing; a bucket nobody here
 * uses any more is dropped, its watch cancelled.
 *
 * <p><b>Trimming.</b> Each bucket's log is trimmed as the tenant log was: an entry this watcher
 * read {@link #TRIM_AGE_NANOS} ago, and everything before it, is cleared, and that entry, now the
 * first, is marked; a watcher that finds its position trimmed rings every listener of the bucket
 * once, and tells its holder to rescan (see {@link WakeLogReader}).
 *
 * <p><b>No lost wake-up.</b> A listener compares a ring's commit version with the read version of
 * its own last look: a commit after that look is in the log after the cursor, or after the read
 * whose watch is armed. A bucket's first cycle starts at its log's end and then rings every
 * listener registered so far (and asks its holder to rescan); later listeners looked after it.
 *
 * <p>This class keeps the watch bookkeeping: which buckets are used here, by whom ({@link
 * WatchedBucket}); the cycles that read the logs, re-arm the watches and trim are {@link
 * WakeLogReader}'s.
 *
 * <p>Threading: thread-safe. Cycles never overlap (a work-in-progress counter); a bucket's cursor
 * and trim samples are touched only by cycles. A bucket's users are counted: the last one to leave
 * drops it, and one that arrives after that makes a new one.
 */
public final class TenantWatcher {

  /** How long an entry stays in a log after a watcher has read it. */
  static final long TRIM_AGE_NANOS = WakeLogReader.TRIM_AGE_NANOS;

  /** How often a cycle samples a bucket's position in its log, for the trims. */
  static final long SAMPLE_INTERVAL_NANOS = WakeLogReader.SAMPLE_INTERVAL_NANOS;

  private final TenantKeys keys;
  private final WakeLogReader reader;
  private final ConcurrentHashMap<Integer, WatchedBucket> buckets = new ConcurrentHashMap<>();

  public TenantWatcher(
      TenantKeys keys,
      Backend backend,
      Executor executor,
      ScheduledExecutorService scheduler,
      LongSupplier nanoTime,
      String context) {
    this.keys = keys;
    this.reader = new WakeLogReader(keys, backend, executor, scheduler, nanoTime, context);
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
  private WatchedBucket retain(int id) {
    while (true) {
      WatchedBucket b = buckets.computeIfAbsent(id, WatchedBucket::new);
      if (b.retain()) {
        return b;
      }
      buckets.remove(id, b); // dropped meanwhile: make a new one
    }
  }

  /** Reads {@code b} soon if it is not watched yet (a new bucket: its first cycle positions it). */
  private void lookIfUnwatched(WatchedBucket b) {
    if (b.unread || b.bell.get() == null) {
      reader.request(b);
    }
  }

  /** One user of {@code b} left; the last one drops it and cancels its watch. */
  private void release(WatchedBucket b) {
    if (b.users.decrementAndGet() == 0 && b.users.compareAndSet(0, -1)) {
      buckets.remove(b.id, b);
      b.cancelWatch();
    }
  }

  private @Nullable WatchedBucket live(int id) {
    WatchedBucket b = buckets.get(id);
    return b == null || b.dropped() ? null : b;
  }

  /**
   * Rings {@code listener} for every ring of {@code wakeId} in {@code bucket}, from now until it
   * unregisters.
   */
  public void register(int bucket, long wakeId, WakeListener listener) {
    WatchedBucket b = retain(bucket);
    b.add(wakeId, listener);
    lookIfUnwatched(b);
  }

  public void unregister(int bucket, long wakeId, WakeListener listener) {
    WatchedBucket b = live(bucket);
    if (b == null) {
      return;
    }
    if (b.remove(wakeId, listener)) {
      release(b);
    }
  }

  /**
   * Makes {@code holder} hear the activations of {@code bucket} (this runtime holds a lease there)
   * until {@link #unhold}; the bucket is read at once whenever it rings.
   */
  public void hold(int bucket, Activations holder) {
    WatchedBucket b = retain(bucket);
    b.holder = holder;
    lookIfUnwatched(b);
  }

  /** {@code holder} no longer holds {@code bucket}. */
  public void unhold(int bucket, Activations holder) {
    WatchedBucket b = live(bucket);
    if (b != null && b.holder == holder) {
      b.holder = null;
      release(b);
    }
  }

  /**
   * A listener of {@code bucket} waits for a ring now: the bucket is read eagerly while any does.
   */
  public void parked(int bucket) {
    WatchedBucket b = live(bucket);
    if (b == null) {
      return;
    }
    b.parked.incrementAndGet();
    if (b.unread || b.bell.get() == null) {
      reader.request(b);
    }
  }

  /** A parked listener of {@code bucket} was woken (or stopped). */
  public void unparked(int bucket) {
    WatchedBucket b = live(bucket);
    if (b != null) {
      b.parked.decrementAndGet();
    }
  }

  /** Every listener registered under {@code wakeId} in {@code bucket}. */
  public WakeListener[] listeners(int bucket, long wakeId) {
    WatchedBucket b = live(bucket);
    WakeListener[] ls = b == null ? null : b.listeners.get(wakeId);
    return ls == null ? new WakeListener[0] : ls;
  }

  /** The number of listeners registered (for tests). */
  int listenerCount() {
    int n = 0;
    for (WatchedBucket b : buckets.values()) {
      for (WakeListener[] ls : b.listeners.values()) {
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
    for (WatchedBucket b : buckets.values()) {
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
    reader.close();
    for (WatchedBucket b : buckets.values()) {
      b.cancelWatch();
      for (WakeListener[] ls : b.listeners.values()) {
        for (WakeListener l : ls) {
          l.closed();
        }
      }
    }
  }
}
