package io.dgen.admin;

import com.apple.foundationdb.subspace.Subspace;
import com.apple.foundationdb.tuple.Tuple;
import io.dgen.backend.Futures;
import io.dgen.backend.KeyValue;
import io.dgen.backend.ReadTransaction;
import io.dgen.internal.codec.LockRecord;
import io.dgen.internal.codec.Serde;
import io.dgen.internal.keys.ServerKeys;
import java.nio.ByteBuffer;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import org.jspecify.annotations.Nullable;

/**
 * The reads of one server's {@link TenantAdmin.ServerSummary}, issued together in a snapshot
 * transaction when constructed and joined by {@link #summary}.
 */
final class SummaryReads {
  private final ReadTransaction snap;
  private final Serde serde;
  private final ServerKeys keys;
  private final CompletableFuture<byte @Nullable []> pushed;
  private final CompletableFuture<byte @Nullable []> popped;
  private final CompletableFuture<List<KeyValue>> headLane;
  private final CompletableFuture<List<KeyValue>> normalLane;
  private final CompletableFuture<List<KeyValue>> dead;
  private final CompletableFuture<byte @Nullable []> lock;

  SummaryReads(ReadTransaction snap, ServerKeys keys, Serde serde) {
    this.snap = snap;
    this.serde = serde;
    this.keys = keys;
    Subspace items = keys.items();
    Subspace deadLetters = keys.dead();
    pushed = snap.getAsync(keys.pushCounter());
    popped = snap.getAsync(keys.popCounter());
    headLane = first(snap, items, ServerKeys.LANE_HEAD);
    normalLane = first(snap, items, ServerKeys.LANE_NORMAL);
    dead = snap.getRangeAsync(deadLetters.range().begin, deadLetters.range().end, 1, false);
    lock = snap.getAsync(keys.lockKey());
  }

  /** The first item of one lane: each lane is in push order, so its first is its oldest. */
  private static CompletableFuture<List<KeyValue>> first(
      ReadTransaction snap, Subspace items, long lane) {
    Subspace l = items.subspace(Tuple.from(lane));
    return snap.getRangeAsync(l.range().begin, l.range().end, 1, false);
  }

  private OptionalLong version(CompletableFuture<List<KeyValue>> lane) {
    List<KeyValue> first = Futures.join(lane);
    if (first.isEmpty()) {
      return OptionalLong.empty();
    }
    byte[] stamp =
        keys.items().unpack(first.get(0).key()).getVersionstamp(1).getTransactionVersion();
    return OptionalLong.of(ByteBuffer.wrap(stamp).getLong());
  }

  TenantAdmin.ServerSummary summary(@Nullable String behaviour) {
    // an item re-queued at the head was queued again later than the normal lane's first
    OptionalLong head = version(headLane);
    OptionalLong normal = version(normalLane);
    OptionalLong oldestVersion =
        head.isPresent() && (normal.isEmpty() || head.getAsLong() < normal.getAsLong())
            ? head
            : normal;
    byte[] lockRecord = Futures.join(lock);
    Optional<Instant> lockedSince;
    if (lockRecord == null) {
      lockedSince = Optional.empty();
    } else {
      Instant at;
      try {
        at = Instant.ofEpochMilli(LockRecord.decode(lockRecord, serde).acquiredAt());
      } catch (RuntimeException e) {
        at = Instant.EPOCH; // locked, by a record that does not decode: the server page says why
      }
      lockedSince = Optional.of(at);
    }
    return new TenantAdmin.ServerSummary(
        keys.tuid(),
        behaviour,
        ServerKeys.decodeCounter(Futures.join(pushed)),
        ServerKeys.decodeCounter(Futures.join(popped)),
        oldestVersion,
        !Futures.join(dead).isEmpty(),
        lockedSince,
        snap.getReadVersion());
  }
}
