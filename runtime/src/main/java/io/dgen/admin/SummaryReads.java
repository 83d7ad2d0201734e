package io.dgen.admin;

import com.apple.foundationdb.subspace.Subspace;
import io.dgen.backend.Futures;
import io.dgen.backend.KeyValue;
import io.dgen.backend.ReadTransaction;
import io.dgen.internal.ServerKeys;
import io.dgen.internal.codec.LockRecord;
import io.dgen.internal.codec.Serde;
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
  private final CompletableFuture<List<KeyValue>> head;
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
    head = snap.getRangeAsync(items.range().begin, items.range().end, 1, false);
    dead = snap.getRangeAsync(deadLetters.range().begin, deadLetters.range().end, 1, false);
    lock = snap.getAsync(keys.lockKey());
  }

  TenantAdmin.ServerSummary summary(@Nullable String behaviour) {
    List<KeyValue> first = Futures.join(head);
    OptionalLong headVersion =
        first.isEmpty()
            ? OptionalLong.empty()
            : OptionalLong.of(
                ByteBuffer.wrap(
                        keys.items()
                            .unpack(first.get(0).key())
                            .getVersionstamp(1)
                            .getTransactionVersion())
                    .getLong());
    byte[] lockRecord = Futures.join(lock);
    Optional<Instant> lockedSince =
        lockRecord == null
            ? Optional.empty()
            : Optional.of(Instant.ofEpochMilli(LockRecord.decode(lockRecord, serde).acquiredAt()));
    return new TenantAdmin.ServerSummary(
        keys.tuid(),
        behaviour,
        ServerKeys.decodeCounter(Futures.join(pushed)),
        ServerKeys.decodeCounter(Futures.join(popped)),
        headVersion,
        !Futures.join(dead).isEmpty(),
        lockedSince,
        snap.getReadVersion());
  }
}
