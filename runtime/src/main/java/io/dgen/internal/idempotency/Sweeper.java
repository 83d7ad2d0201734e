package io.dgen.internal.idempotency;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.backend.KeyValue;
import io.dgen.backend.Transaction;
import io.dgen.internal.calls.ReplySlots;
import io.dgen.internal.commit.CommitMarkers;
import io.dgen.internal.keys.ServerKeys;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;

/**
 * Removes what one server's dead runs, dead callers and ended retention windows leave behind:
 * commit markers older than {@link CommitMarkers#MARKER_TTL} ({@link CommitMarkers#sweepMarkers},
 * which the commit runner calls from any writing transaction, at most once a minute per process),
 * and, now and then inside a consumer batch's transaction, reply slots older than {@link
 * ReplySlots#MAX_CALL_TIMEOUT} and idempotency keys and kept replies whose window ended ({@link
 * IdempotencyKeys}). Each is aged by the clock that named it: markers by the backend's run-id
 * clock, slots, keys and kept replies by the runtime's.
 *
 * <p>Markers, slots and kept replies go by blind range clears that cost only their bounds. Expired
 * keys need one snapshot read of their index, {@link #prefetch started} with the batch's other
 * reads and at most {@link IdempotencyKeys#TRIM_LIMIT} entries long; while a trim finds that many,
 * the next batch trims again, so trimming keeps up with any rate of keyed pushes in bounded work
 * per batch. Never blocks on a read, never runs a transaction or a thread of its own, and never
 * touches a live marker, slot, key or kept reply.
 *
 * <p>Threading: used by the consume loop only, which never runs concurrently with itself.
 */
public final class Sweeper {

  private static final Duration SWEEP_INTERVAL = Duration.ofMinutes(1);

  /**
   * How much longer than a call can wait a reply slot is kept before it is swept as abandoned: a
   * slot is named by its caller's clock and swept by the consumer's, so this is the skew between
   * their clocks that the sweep tolerates (a runtime logs a skew over a minute, see {@code
   * RuntimeCore.MAX_CLOCK_SKEW_MILLIS}). An abandoned slot costs only its storage meanwhile.
   */
  static final Duration SLOT_SKEW_MARGIN = Duration.ofMinutes(10);

  private static final CompletableFuture<List<KeyValue>> NOTHING =
      CompletableFuture.completedFuture(List.of());

  private final ServerKeys keys;
  private final IdempotencyKeys idempotency;
  private final LongSupplier wallMillis;
  private long lastSweep;
  private boolean trimBehind;
  private @Nullable CompletableFuture<List<KeyValue>> expired;

  public Sweeper(ServerKeys keys, LongSupplier wallMillis) {
    this.keys = keys;
    this.idempotency = new IdempotencyKeys(keys);
    this.wallMillis = wallMillis;
  }

  /**
   * Starts, when a trim is due, the read of expired idempotency keys that {@link #sweep} in the
   * same transaction uses; the batch waits for it with its other reads.
   */
  public CompletableFuture<List<KeyValue>> prefetch(Transaction tx) {
    long now = wallMillis.getAsLong();
    expired = trimBehind || due(now) ? idempotency.expired(tx, now) : null;
    return expired != null ? expired : NOTHING;
  }

  private boolean due(long now) {
    return now - lastSweep >= SWEEP_INTERVAL.toMillis();
  }

  /** Clears abandoned slots and expired keys in {@code tx}, now and then. */
  public void sweep(Transaction tx) {
    long now = wallMillis.getAsLong();
    CompletableFuture<List<KeyValue>> keysRead = expired;
    expired = null;
    if (keysRead != null && keysRead.isDone() && !keysRead.isCompletedExceptionally()) {
      List<KeyValue> rows = keysRead.join();
      idempotency.trim(tx, rows, now);
      trimBehind = rows.size() >= IdempotencyKeys.TRIM_LIMIT;
    }
    if (!due(now)) {
      return;
    }
    lastSweep = now;
    long oldestLiveSlot =
        TimeUnit.MILLISECONDS.toSeconds(now)
            - ReplySlots.MAX_CALL_TIMEOUT.toSeconds()
            - SLOT_SKEW_MARGIN.toSeconds();
    tx.clearRange(keys.calls().range().begin, keys.calls().pack(Tuple.from(oldestLiveSlot)));
  }
}
