package io.dgen.internal.limits;

import io.dgen.backend.Futures;
import io.dgen.backend.KeyValue;
import io.dgen.backend.Transaction;
import io.dgen.internal.base.RuntimeServices;
import io.dgen.internal.observe.Metrics;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One concurrency limit as this runtime enforces it: its permits are {@code limit} slot keys
 * ({@link LimitKeys#slot}). A batch whose callback takes the lock takes a free slot (empty, or
 * expired) in the same transaction, with the lock's token and the lock's expiry; the transaction
 * that commits or releases {@code handleLocked}'s outcome checks that the slot still carries the
 * token (fencing) and clears it. A server that finds no slot free waits here, first come first
 * served, holding no thread: this runtime holds one watch of the limit's release counter while it
 * has waiters, and one timer for the earliest expiry of a held permit.
 *
 * <p>Never decides what a lost permit means for the lock (the lock coordinator does) and never runs
 * a server's batch: a waiter is woken on the executor.
 *
 * <p>Threading: thread-safe; the waiters are guarded by {@code this}.
 */
public final class ConcurrencyGate {

  private static final Logger log = LoggerFactory.getLogger(ConcurrencyGate.class);

  private static final long RETRY_MILLIS = 100;
  private static final int REMEMBERED_TOKENS = 4_096;

  /** The limit and its slots as a batch read them (a snapshot read). */
  public record Slots(int limit, List<LimitKeys.@Nullable Permit> held) {

    /** The lowest free slot (empty or expired) below the limit, or -1. */
    public int free(long nowMillis) {
      for (int i = 0; i < limit; i++) {
        LimitKeys.Permit p = i < held.size() ? held.get(i) : null;
        if (p == null || p.expired(nowMillis)) {
          return i;
        }
      }
      return -1;
    }

    /** How many slots below the limit are free. */
    int freeCount(long nowMillis) {
      int n = 0;
      for (int i = 0; i < limit; i++) {
        LimitKeys.Permit p = i < held.size() ? held.get(i) : null;
        if (p == null || p.expired(nowMillis)) {
          n++;
        }
      }
      return n;
    }

    /** The earliest expiry of a held permit, or -1 if none is held. */
    long earliestExpiry() {
      long e = -1;
      for (LimitKeys.Permit p : held) {
        if (p != null && (e < 0 || p.expiresAtMillis() < e)) {
          e = p.expiresAtMillis();
        }
      }
      return e;
    }

    /** Whether a slot holds {@code token} and has not expired at {@code nowMillis}. */
    public boolean holds(String token, long nowMillis) {
      int slot = slotOf(token);
      return slot >= 0 && !Objects.requireNonNull(held.get(slot)).expired(nowMillis);
    }

    /** The slot holding {@code token}, or -1. */
    int slotOf(String token) {
      for (int i = 0; i < held.size(); i++) {
        LimitKeys.Permit p = held.get(i);
        if (p != null && p.token().equals(token)) {
          return i;
        }
      }
      return -1;
    }
  }

  /**
   * A batch found no permit free at the {@code index}-th item, whose callback took the lock: the
   * batch is abandoned (nothing commits). The items before it are committed by a batch that stops
   * short of it; then the server waits for a permit.
   */
  public static final class Wait extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final int index;

    public Wait(String name, int index) {
      super("no permit of the concurrency limit " + name + " is free", null, false, false);
      this.index = index;
    }

    /** The item's position in its batch. */
    public int index() {
      return index;
    }
  }

  /** The holder's permit expired and was taken by another server: its outcome is refused. */
  public static final class Lost extends RuntimeException {
    private static final long serialVersionUID = 1L;

    Lost(String message) {
      super(message, null, false, false);
    }
  }

  /** A server waiting for a permit: {@code wake} runs its loop again. */
  public static final class Waiter {
    private final Runnable wake;
    private final long since;

    private Waiter(Runnable wake, long since) {
      this.wake = wake;
      this.since = since;
    }
  }

  private final String name;
  private final LimitKeys keys;
  private final RuntimeServices services;
  private final Metrics.Limit meters;
  // The slot each token took here, so that its holder reads one slot, not all of them; bounded,
  // as attempts that took a slot and did not commit leave theirs (a holder not found here reads
  // every slot).
  private final Map<String, Integer> slotOfToken =
      Collections.synchronizedMap(
          new LinkedHashMap<>() {
            private static final long serialVersionUID = 1L;

            @Override
            protected boolean removeEldestEntry(Map.Entry<String, Integer> eldest) {
              return size() > REMEMBERED_TOKENS;
            }
          });

  // Guarded by this.
  private final ArrayDeque<Waiter> waiters = new ArrayDeque<>();
  private boolean checking;
  private boolean checkAgain;
  private @Nullable CompletableFuture<@Nullable Void> watch;
  private @Nullable ScheduledFuture<?> timer;
  private long timerAt = -1;
  private boolean closed;

  ConcurrencyGate(String name, LimitKeys keys, RuntimeServices services) {
    this.name = name;
    this.keys = keys;
    this.services = services;
    this.meters = services.hooks().metrics().limit(name, "concurrency", this::waiting);
  }

  /** The limit's name. */
  public String name() {
    return name;
  }

  /** Starts a snapshot read of the limit and its slots, for a batch that may take the lock. */
  public CompletableFuture<Slots> prefetch(Transaction tx) {
    return read(tx, true);
  }

  private CompletableFuture<Slots> read(Transaction tx, boolean snapshot) {
    var r = snapshot ? tx.snapshot() : tx;
    CompletableFuture<byte @Nullable []> config = r.getAsync(keys.concurrencyConfig(name));
    byte[][] range = keys.slots(name);
    CompletableFuture<List<KeyValue>> slots =
        r.getRangeAsync(range[0], range[1], Integer.MAX_VALUE, false);
    return config.thenCombine(
        slots,
        (c, kvs) -> {
          Integer limit = LimitKeys.decodeLimit(c);
          if (limit == null) {
            throw new IllegalStateException("the concurrency limit " + name + " is not stored");
          }
          List<LimitKeys.@Nullable Permit> held = new ArrayList<>();
          for (KeyValue kv : kvs) {
            int i = (int) keys.unpack(kv.key()).getLong(3);
            while (held.size() <= i) {
              held.add(null);
            }
            held.set(i, LimitKeys.Permit.decode(kv.value()));
          }
          return new Slots(limit, held);
        });
  }

  /**
   * Takes slot {@code slot} (free in {@code seen}) for the lock {@code token} in {@code tx}. The
   * slot key gets a read conflict, so two batches that take it concurrently conflict.
   */
  public void take(
      Transaction tx, int slot, String token, long nowMillis, long expiresAt, String holder) {
    byte[] key = keys.slot(name, slot);
    tx.addReadConflictKey(key);
    tx.set(key, new LimitKeys.Permit(token, nowMillis, expiresAt, holder).encode());
    slotOfToken.put(token, slot);
    meters.granted(1);
  }

  /**
   * In the holder's commit: throws {@link Lost} unless a slot still carries {@code token}, else
   * clears it (the permit comes back) and rings the waiters of every runtime.
   */
  public void release(Transaction tx, String token, String context) {
    int slot = find(tx, token);
    if (slot < 0) {
      throw new Lost(
          "the permit of the concurrency limit "
              + name
              + " expired and was taken by another server while handleLocked ran; its result is"
              + " refused: "
              + context
              + " token="
              + token);
    }
    clear(tx, slot, token);
  }

  /** Gives back the permit {@code token} holds, if it still holds one (a release or a bust). */
  public void releaseIfHeld(Transaction tx, String token) {
    int slot = find(tx, token);
    if (slot >= 0) {
      clear(tx, slot, token);
    }
  }

  /** As {@link #releaseIfHeld}, from slots a batch read already (busting a lock). */
  public void releaseIfHeld(Transaction tx, Slots seen, String token) {
    int slot = seen.slotOf(token);
    if (slot >= 0) {
      tx.addReadConflictKey(keys.slot(name, slot));
      clear(tx, slot, token);
    }
  }

  private int find(Transaction tx, String token) {
    Integer known = slotOfToken.get(token);
    if (known != null) {
      byte[] v = tx.get(keys.slot(name, known));
      return v != null && LimitKeys.Permit.decode(v).token().equals(token) ? known : -1;
    }
    return Futures.join(read(tx, false)).slotOf(token); // a lock found after a restart
  }

  private void clear(Transaction tx, int slot, String token) {
    tx.clear(keys.slot(name, slot));
    tx.add(keys.releases(name), 1);
    slotOfToken.remove(token);
  }

  /**
   * Waits for a permit: {@code wake} runs on the executor once one may be free (a release, or an
   * expiry), in the order servers started waiting. A woken server that then takes no permit calls
   * {@link #passed}, so that the next one is woken.
   */
  public Waiter await(Runnable wake) {
    Waiter w = new Waiter(wake, services.nanoTime());
    synchronized (this) {
      if (closed) {
        return w;
      }
      waiters.add(w);
    }
    check();
    return w;
  }

  /** Stops waiting; false if the waiter was woken already (its wake runs). */
  public synchronized boolean cancel(Waiter w) {
    return waiters.remove(w);
  }

  /** A woken server took no permit (or a batch ended): if servers wait, look at the slots again. */
  public void passed() {
    synchronized (this) {
      if (waiters.isEmpty()) {
        return;
      }
    }
    check();
  }

  /** Servers of this runtime waiting for a permit now. */
  synchronized int waiting() {
    return waiters.size();
  }

  /** Stops watching; waiters are dropped (their processes stop). */
  synchronized void close() {
    closed = true;
    waiters.clear();
    if (watch != null) {
      watch.cancel(false);
    }
    if (timer != null) {
      timer.cancel(false);
    }
  }

  /**
   * Reads the slots (and, if none is free, arms a watch of the release counter in the same
   * transaction, so that a release after that read rings it): wakes as many waiters as slots are
   * free, and otherwise waits for the watch or the earliest expiry.
   */
  private void check() {
    synchronized (this) {
      if (checking) {
        checkAgain = true;
        return;
      }
      if (closed || waiters.isEmpty()) {
        return;
      }
      checking = true;
      checkAgain = false;
    }
    LimitRuns.counted(
            services.backend(),
            meters,
            tx ->
                read(tx, true)
                    .thenApply(
                        slots -> {
                          int free = slots.freeCount(services.wallMillis());
                          return new Check(
                              slots, free, free > 0 ? null : tx.watch(keys.releases(name)));
                        }))
        .whenComplete(this::checked);
  }

  /**
   * What a check read: the slots, how many were free, and the watch of the release counter armed
   * when none was.
   */
  private record Check(Slots slots, int free, @Nullable CompletableFuture<@Nullable Void> watch) {}

  private void checked(@Nullable Check r, @Nullable Throwable err) {
    List<Runnable> woken = new ArrayList<>();
    long now = services.nanoTime();
    boolean again;
    synchronized (this) {
      checking = false;
      again = checkAgain;
      if (closed) {
        return;
      }
      if (err != null || r == null) {
        log.warn(
            "reading the permits of the concurrency limit {} failed; trying again in {} ms",
            name,
            RETRY_MILLIS,
            Futures.unwrap(err));
        wakeAt(services.wallMillis() + RETRY_MILLIS);
      } else {
        Slots s = r.slots();
        int free = r.free();
        CompletableFuture<@Nullable Void> w = r.watch();
        for (int i = 0; i < free && !waiters.isEmpty(); i++) {
          Waiter next = waiters.poll();
          woken.add(next.wake);
          meters.waited(now - next.since);
        }
        if (w != null) {
          if (watch != null) {
            watch.cancel(false);
          }
          watch = w;
          w.whenComplete(
              (v, e) -> {
                if (w.isCancelled()) {
                  return; // replaced by a newer watch, or closed
                }
                if (e == null) {
                  check();
                } else {
                  synchronized (this) {
                    wakeAt(services.wallMillis() + RETRY_MILLIS); // a failed watch: no busy loop
                  }
                }
              });
        }
        long expiry = s.earliestExpiry();
        if (free == 0 && expiry >= 0) {
          wakeAt(expiry + 1);
        }
      }
    }
    for (Runnable wake : woken) {
      try {
        services.executor().execute(wake);
      } catch (RejectedExecutionException e) {
        // the runtime is closing
      }
    }
    if (again) {
      check();
    }
  }

  /** Checks again at {@code atMillis} (wall clock), unless a check is due earlier. */
  private void wakeAt(long atMillis) {
    if (timer != null && timerAt <= atMillis) {
      return;
    }
    if (timer != null) {
      timer.cancel(false);
    }
    timerAt = atMillis;
    try {
      timer =
          services
              .scheduler()
              .schedule(
                  () -> {
                    synchronized (this) {
                      if (timerAt == atMillis) {
                        timer = null;
                      }
                    }
                    check();
                  },
                  Math.max(0, atMillis - services.wallMillis()),
                  TimeUnit.MILLISECONDS);
    } catch (RejectedExecutionException e) {
      timer = null; // the runtime is closing
    }
  }
}
