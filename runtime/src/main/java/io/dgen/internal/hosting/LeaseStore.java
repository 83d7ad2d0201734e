package io.dgen.internal.hosting;

import io.dgen.backend.Backend;
import io.dgen.backend.Futures;
import io.dgen.backend.KeyValue;
import io.dgen.backend.ReadTransaction;
import io.dgen.backend.Transaction;
import io.dgen.internal.codec.PlacementRecords.Lease;
import io.dgen.internal.codec.PlacementRecords.Member;
import io.dgen.internal.keys.TenantKeys;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The transactions of one tenant's placement rounds on the lease records ({@code Placement}): the
 * snapshot a round reads, the takes, the hand-off writes and the releases of a member leaving. Each
 * write is conditional on what its own transaction reads, so that a lease that moved meanwhile is
 * left alone. Never decides what to take or hand off, and holds no state of its own; its callers
 * run it on the placement's thread.
 */
final class LeaseStore {

  private static final Logger log = LoggerFactory.getLogger(LeaseStore.class);

  /** What a round read. */
  record Snapshot(Map<UUID, Member> members, Map<String, Map<Integer, Lease>> leases) {}

  /** A hand-off under way: the bucket, the epoch this member holds it at, and its new owner. */
  record HandOff(KindBucket kb, long epoch, UUID to) {}

  private final Backend backend;
  private final TenantKeys keys;
  private final UUID me;
  private final String context;

  LeaseStore(Backend backend, TenantKeys keys, UUID me, String context) {
    this.backend = backend;
    this.keys = keys;
    this.me = me;
    this.context = context;
  }

  /** Reads the members and the leases of {@code kinds} (snapshot reads): a round's view. */
  Snapshot read(Transaction tx, Set<String> kinds) {
    ReadTransaction snap = tx.snapshot();
    var members =
        snap.getRangeAsync(
            keys.members().range().begin,
            keys.members().range().end,
            ReadTransaction.UNLIMITED,
            false);
    Map<String, CompletableFuture<List<KeyValue>>> leaseReads = new HashMap<>();
    for (String kind : kinds) {
      var space = keys.leases(kind);
      leaseReads.put(
          kind,
          snap.getRangeAsync(
              space.range().begin, space.range().end, ReadTransaction.UNLIMITED, false));
    }
    Map<UUID, Member> ms = new HashMap<>();
    for (KeyValue kv : Futures.join(members)) {
      UUID id = keys.members().unpack(kv.key()).getUUID(0);
      try {
        ms.put(id, Member.decode(id, kv.value()));
      } catch (RuntimeException bad) {
        log.warn("ignoring a member record that does not decode: {} member={}", context, id, bad);
      }
    }
    Map<String, Map<Integer, Lease>> leases = new HashMap<>();
    for (var e : leaseReads.entrySet()) {
      Map<Integer, Lease> byBucket = new HashMap<>();
      for (KeyValue kv : Futures.join(e.getValue())) {
        int bucket = (int) keys.leases(e.getKey()).unpack(kv.key()).getLong(0);
        byBucket.put(bucket, Objects.requireNonNull(Lease.decode(kv.value())));
      }
      leases.put(e.getKey(), byBucket);
    }
    return new Snapshot(ms, leases);
  }

  /**
   * Takes the leases of {@code buckets} in one transaction, each only if neither it nor its dead
   * holder's record changed since the round read them (both read serializably: a holder that renews
   * meanwhile makes the take conflict, and its retry sees the renewal and backs off).
   *
   * @return the epoch of each bucket taken; none if the transaction failed (logged)
   */
  Map<Integer, Long> take(
      String kind,
      List<Integer> bucketsToTake,
      Map<Integer, Lease> seenLeases,
      Map<UUID, Member> all) {
    Map<Integer, Long> taken;
    try {
      taken =
          backend.run(
              tx -> {
                Map<Integer, CompletableFuture<byte @Nullable []>> reads = new HashMap<>();
                Map<UUID, CompletableFuture<byte @Nullable []>> holders = new HashMap<>();
                for (int b : bucketsToTake) {
                  reads.put(b, tx.getAsync(keys.lease(kind, b)));
                  Lease l = seenLeases.get(b);
                  if (l != null && l.owner() != null) {
                    holders.computeIfAbsent(l.owner(), o -> tx.getAsync(keys.member(o)));
                  }
                }
                Map<Integer, Long> out = new HashMap<>();
                for (int b : bucketsToTake) {
                  Lease now = Lease.decode(Futures.join(reads.get(b)));
                  Lease expected = seenLeases.get(b);
                  if (!Objects.equals(now, expected)) {
                    continue; // moved since the round read it
                  }
                  if (now != null && now.owner() != null) {
                    byte[] record = Futures.join(holders.get(now.owner()));
                    Member then = all.get(now.owner());
                    if (record != null
                        && (then == null
                            || Member.decode(now.owner(), record).heartbeat()
                                != then.heartbeat())) {
                      continue; // its holder beat since: alive after all
                    }
                  }
                  long epoch = now == null ? 1 : now.epoch() + 1;
                  tx.set(keys.lease(kind, b), new Lease(me, epoch).encode());
                  out.put(b, epoch);
                }
                return out;
              });
    } catch (RuntimeException e) {
      log.warn(
          "taking {} leases of kind {} failed; the next round tries again: {}",
          bucketsToTake.size(),
          kind,
          context,
          e);
      return Map.of();
    }
    return taken;
  }

  /** Writes {@code (to, epoch + 1)} for every lease of {@code part} still this member's. */
  @Nullable Void writeHandOffs(Transaction tx, List<HandOff> part) {
    Map<HandOff, CompletableFuture<byte @Nullable []>> reads = new HashMap<>();
    for (HandOff m : part) {
      reads.put(m, tx.getAsync(keys.lease(m.kb().kind(), m.kb().bucket())));
    }
    for (HandOff m : part) {
      Lease now = Lease.decode(Futures.join(reads.get(m)));
      if (now != null && me.equals(now.owner()) && now.epoch() == m.epoch()) {
        tx.set(
            keys.lease(m.kb().kind(), m.kb().bucket()), new Lease(m.to(), m.epoch() + 1).encode());
      }
    }
    return null;
  }

  /**
   * Frees the leases of {@code part} still this member's at the epoch {@code held} says (a member
   * leaving the placement): {@code (no owner, epoch + 1)}.
   */
  @Nullable Void release(Transaction tx, List<KindBucket> part, Map<KindBucket, Long> held) {
    Map<KindBucket, CompletableFuture<byte @Nullable []>> reads = new HashMap<>();
    for (KindBucket kb : part) {
      reads.put(kb, tx.getAsync(keys.lease(kb.kind(), kb.bucket())));
    }
    for (KindBucket kb : part) {
      Lease now = Lease.decode(Futures.join(reads.get(kb)));
      Long mine = held.get(kb);
      if (now != null && me.equals(now.owner()) && mine != null && now.epoch() == mine) {
        tx.set(keys.lease(kb.kind(), kb.bucket()), new Lease(null, now.epoch() + 1).encode());
      }
    }
    return null;
  }
}
