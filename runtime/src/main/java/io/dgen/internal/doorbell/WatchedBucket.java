package io.dgen.internal.doorbell;

import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.jspecify.annotations.Nullable;

/**
 * One bucket's doorbell in this runtime, for its tenant's {@link TenantWatcher}: who uses it (the
 * listeners registered under their wake ids, a lease holder, the listeners parked), its watch, and
 * the cycles' position in its wake log.
 *
 * <p>Threading: thread-safe, except for the cursor and the trim samples, which only the cycles of
 * {@link WakeLogReader} touch (never two at once). Its users are counted: the last one to leave
 * drops it, and one that arrives after that makes a new one.
 */
final class WatchedBucket {

  /** A position a cycle read up to in the bucket's log, and when. */
  record Sample(long nanos, byte[] key) {}

  final int id;
  final ConcurrentHashMap<Long, WakeListener[]> listeners = new ConcurrentHashMap<>();

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

  WatchedBucket(int id) {
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

  /** Adds {@code listener} under {@code wakeId}. */
  void add(long wakeId, WakeListener listener) {
    listeners.merge(wakeId, new WakeListener[] {listener}, WatchedBucket::concat);
  }

  /** Removes {@code listener} from under {@code wakeId}; false if it was not there. */
  boolean remove(long wakeId, WakeListener listener) {
    boolean[] removed = new boolean[1];
    listeners.computeIfPresent(
        wakeId,
        (wake, ls) -> {
          WakeListener[] rest = without(ls, listener);
          removed[0] = rest != ls;
          return rest;
        });
    return removed[0];
  }

  /** Rings may have been missed: rings every listener once, and tells the holder to rescan. */
  void ringAll() {
    for (WakeListener[] ls : listeners.values()) {
      for (WakeListener l : ls) {
        l.ringAll();
      }
    }
    Activations holder = this.holder;
    if (holder != null) {
      holder.rescan();
    }
  }

  /** Cancels the bucket's watch, if one is armed. */
  void cancelWatch() {
    CompletableFuture<Void> w = bell.getAndSet(null);
    if (w != null) {
      w.cancel(false);
    }
  }

  private static WakeListener[] concat(WakeListener[] a, WakeListener[] b) {
    WakeListener[] out = Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }

  private static WakeListener @Nullable [] without(WakeListener[] ls, WakeListener l) {
    int i = Arrays.asList(ls).indexOf(l);
    if (i < 0) {
      return ls;
    }
    if (ls.length == 1) {
      return null;
    }
    WakeListener[] out = new WakeListener[ls.length - 1];
    System.arraycopy(ls, 0, out, 0, i);
    System.arraycopy(ls, i + 1, out, i, ls.length - i - 1);
    return out;
  }
}
