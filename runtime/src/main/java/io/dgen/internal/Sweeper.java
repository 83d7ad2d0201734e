package io.dgen.internal;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.backend.RunIds;
import io.dgen.backend.Transaction;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * Removes what one server's dead runs and dead callers leave behind: commit markers older than
 * {@link #MARKER_TTL} and reply slots older than {@link ReplySlots#MAX_CALL_TIMEOUT}, now and then,
 * inside a consumer batch's transaction (blind range clears that cost only their bounds). Each is
 * aged by the clock that named it: markers by the backend's run-id clock, slots by the runtime's.
 *
 * <p>Never reads, never runs a transaction or a thread of its own, and never touches a live marker
 * or slot.
 *
 * <p>Threading: used by the consume loop only, which never runs concurrently with itself.
 */
final class Sweeper {

  /** How long a commit marker is kept: far longer than any retry loop after 1021 lasts. */
  static final Duration MARKER_TTL = Duration.ofMinutes(10);

  private static final Duration SWEEP_INTERVAL = Duration.ofMinutes(1);

  private final ServerKeys keys;
  private final LongSupplier wallMillis;
  private long lastSweep;

  Sweeper(ServerKeys keys, LongSupplier wallMillis) {
    this.keys = keys;
    this.wallMillis = wallMillis;
  }

  /** Clears old markers and abandoned slots in {@code tx}, at most once a minute. */
  void sweep(Transaction tx) {
    long now = wallMillis.getAsLong();
    if (now - lastSweep < SWEEP_INTERVAL.toMillis()) {
      return;
    }
    lastSweep = now;
    // Markers are keyed by run ids, which the backend makes with its own clock: the horizon comes
    // from this transaction's run id, made by that clock too. The runtime's clock (which may be
    // injected, or skewed) would sweep fresh markers at once when ahead, and none when behind.
    long runStarted = RunIds.startedAt(tx.runId());
    tx.clearRange(
        keys.markers().range().begin,
        keys.markers().pack(Tuple.from(RunIds.startingAt(runStarted - MARKER_TTL.toMillis()))));
    long oldestLiveSlot =
        TimeUnit.MILLISECONDS.toSeconds(now) - ReplySlots.MAX_CALL_TIMEOUT.toSeconds() - 60;
    tx.clearRange(keys.calls().range().begin, keys.calls().pack(Tuple.from(oldestLiveSlot)));
  }
}
