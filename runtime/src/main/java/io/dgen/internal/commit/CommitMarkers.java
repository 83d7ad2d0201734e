package io.dgen.internal.commit;

import io.dgen.backend.Futures;
import io.dgen.backend.RunIds;
import io.dgen.backend.Transaction;
import io.dgen.internal.keys.ServerKeys;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;

/**
 * One server's commit markers as its commit runner keeps them in this process: the slots its runs
 * write their markers to in turn, the markers of the runs that ended without knowing whether they
 * committed, the sweep of old markers (at most once a minute per process), and the encoding of a
 * marker's value.
 *
 * <p>Never runs a transaction of its own: it reads and writes in the transactions it is given.
 *
 * <p>Threading: thread-safe.
 */
public final class CommitMarkers {

  /** How long a commit marker is kept: far longer than any retry loop after 1021 lasts. */
  public static final Duration MARKER_TTL = Duration.ofMinutes(10);

  /**
   * How long after it was first taken a marker slot may be taken again: half of {@link
   * #MARKER_TTL}, so that the marker of a run that took the slot last, even one that then retried
   * for as long as a run may ({@code CommitRunner.RUN_LIMIT}), is kept for minutes after the run
   * ended.
   */
  static final Duration SLOT_REUSE = MARKER_TTL.dividedBy(2);

  /**
   * How many runs take one slot at most: a use's number is then at most two bytes of the marker's
   * value, so that a slot's key and value are never longer than a run-id-keyed marker's were.
   */
  static final int SLOT_USES = (1 << 14) - 1;

  /** How often one process sweeps its server's old commit markers (by its own ticker). */
  private static final long SWEEP_INTERVAL_NANOS = TimeUnit.MINUTES.toNanos(1);

  /**
   * A key that this server's runs write their commit markers to in turn, one run at a time; its
   * value names the use (which run) and the attempt. Reusing a few keys keeps a server's markers as
   * many as its runs in flight, rather than one per run for {@link #MARKER_TTL}.
   */
  static final class Slot {
    private final byte[] key;
    private final long takenFirstMillis;
    private int uses; // written by the run holding the slot; the free queue hands it over

    private Slot(byte[] key, long takenFirstMillis) {
      this.key = key;
      this.takenFirstMillis = takenFirstMillis;
    }
  }

  /**
   * The marker of one run: its slot's key, the use of the slot that is the run's, and when the slot
   * was first taken (by the run-id clock: the sweep clears it {@link #MARKER_TTL} later); and the
   * slot, to free when the run is done.
   */
  record Marker(byte[] key, int use, long takenFirstMillis, Slot slot) {}

  private final ServerKeys keys;
  private final LongSupplier nanoTime;
  private final AtomicLong lastSweep;

  /** Marker slots no run holds: a run takes one when it first writes, and returns it when done. */
  private final Queue<Slot> freeSlots = new ConcurrentLinkedQueue<>();

  /**
   * The markers of the runs that ended without knowing whether they committed, for {@link
   * #committedEarlier}, until the sweep may have cleared them; their slots are never taken again.
   */
  private final Map<UUID, Marker> unresolved = new ConcurrentHashMap<>();

  CommitMarkers(ServerKeys keys, LongSupplier nanoTime) {
    this.keys = keys;
    this.nanoTime = nanoTime;
    this.lastSweep = new AtomicLong(nanoTime.getAsLong() - SWEEP_INTERVAL_NANOS);
  }

  /**
   * Which of {@code runs} committed: the first whose marker {@code tx} finds, or null; see {@code
   * CommitRunner.committedEarlier}.
   */
  @Nullable UUID committedEarlier(Transaction tx, Collection<UUID> runs) {
    List<UUID> ids = new ArrayList<>(runs.size());
    List<Marker> markers = new ArrayList<>(runs.size());
    List<CompletableFuture<byte @Nullable []>> reads = new ArrayList<>(runs.size());
    for (UUID id : runs) {
      // A run not among the unresolved ones never wrote, or learned its outcome (it was this
      // runner's, which runs every write of its server in this process): nothing to look for.
      Marker m = unresolved.get(id);
      if (m != null) {
        ids.add(id);
        markers.add(m);
        reads.add(tx.getAsync(m.key()));
      }
    }
    for (int i = 0; i < ids.size(); i++) {
      byte[] found = Futures.join(reads.get(i));
      if (found != null && useOf(found) == markers.get(i).use()) {
        return ids.get(i);
      }
    }
    return null;
  }

  /**
   * The marker of the run {@code runId} starting now, in a slot: a free one not too old nor too
   * used, else a new one keyed by this run.
   */
  Marker take(UUID runId) {
    long now = RunIds.startedAt(runId);
    Slot slot;
    while ((slot = freeSlots.poll()) != null) {
      if (now - slot.takenFirstMillis < SLOT_REUSE.toMillis() && slot.uses < SLOT_USES) {
        break;
      }
    }
    if (slot == null) {
      slot = new Slot(keys.markerSlot(runId), now);
    }
    slot.uses++;
    return new Marker(slot.key, slot.uses, slot.takenFirstMillis, slot);
  }

  /**
   * The run {@code runId} that took {@code m} ended: its slot is free again if the run knows its
   * outcome ({@code known}); else the marker is kept for {@link #committedEarlier} and its slot is
   * never taken again.
   */
  void finish(@Nullable Marker m, boolean known, @Nullable UUID runId) {
    if (m == null) {
      return;
    }
    if (known) {
      freeSlots.add(m.slot());
    } else if (runId != null) {
      long swept = RunIds.startedAt(runId) - MARKER_TTL.toMillis();
      unresolved.values().removeIf(old -> old.takenFirstMillis() < swept);
      unresolved.put(runId, m);
    }
  }

  /** Sweeps the server's old markers in {@code tx}, at most once a minute per process. */
  void sweepIfDue(Transaction tx) {
    long now = nanoTime.getAsLong();
    long last = lastSweep.get();
    if (now - last >= SWEEP_INTERVAL_NANOS && lastSweep.compareAndSet(last, now)) {
      sweepMarkers(tx, keys);
    }
  }

  /**
   * A marker's value: the use of its slot (which run) and the number of the attempt that wrote it,
   * each unsigned LEB128.
   */
  static byte[] markerValue(int use, int attempt) {
    byte[] out = new byte[10];
    int n = leb128(out, 0, use);
    n = leb128(out, n, attempt);
    return Arrays.copyOf(out, n);
  }

  private static int leb128(byte[] out, int at, int value) {
    int n = at;
    int v = value;
    while ((v & ~0x7f) != 0) {
      out[n++] = (byte) ((v & 0x7f) | 0x80);
      v >>>= 7;
    }
    out[n++] = (byte) v;
    return n;
  }

  /** The use of the slot in a marker's value, or -1 if it names none. */
  static int useOf(byte[] marker) {
    return readLeb128(marker, 0, -1);
  }

  /** The attempt number in a marker's value, or 0 if it names none. */
  static int attemptOf(byte[] marker) {
    int at = 0;
    while (at < marker.length && (marker[at] & 0x80) != 0) {
      at++;
    }
    return readLeb128(marker, at + 1, 0);
  }

  private static int readLeb128(byte[] in, int at, int absent) {
    int v = 0;
    for (int i = at, shift = 0; i < in.length && shift < 32; i++, shift += 7) {
      v |= (in[i] & 0x7f) << shift;
      if ((in[i] & 0x80) == 0) {
        return v;
      }
    }
    return absent;
  }

  /**
   * Clears the commit markers of {@code keys}' server older than {@link #MARKER_TTL} in {@code tx}:
   * one blind range clear.
   */
  public static void sweepMarkers(Transaction tx, ServerKeys keys) {
    // Markers are keyed by run ids, which the backend makes with its own clock: the horizon comes
    // from this transaction's run id, made by that clock too. The runtime's clock (which may be
    // injected, or skewed) would sweep fresh markers at once when ahead, and none when behind.
    byte[][] old = keys.markersOlderThan(RunIds.startedAt(tx.runId()) - MARKER_TTL.toMillis());
    tx.clearRange(old[0], old[1]);
  }
}
