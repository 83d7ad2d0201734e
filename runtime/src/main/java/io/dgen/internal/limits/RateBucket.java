package io.dgen.internal.limits;

import io.dgen.backend.KeyValue;
import io.dgen.backend.ReadTransaction;
import io.dgen.backend.Transaction;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;

/**
 * This runtime's token bucket of one rate limit, and the records that size it: its share, its
 * heartbeat and its bucket in the store, the rounds that adjust the share, and the reservations
 * that take permits from the bucket. Its rate limiter hands the permits out.
 *
 * <p><b>Shares.</b> Every runtime enforcing the limit keeps a heartbeat record ({@link
 * LimitKeys#rateMember}: a counter and its demand, see {@link RateShares}) and its share ({@link
 * LimitKeys#rateShare}). Every {@value #ROUND_MILLIS} ms a round snapshot-reads the heartbeats and
 * shares, takes the live runtimes (live while its counter changed within {@value #DEAD_MILLIS} ms
 * on this runtime's own clock; no two clocks are compared), computes this runtime's share, writes
 * it when it changed, and rewrites the heartbeat when the hunger changed or {@value #BEAT_MILLIS}
 * ms passed. A share shrinks at once (before the round commits); it grows only into the room the
 * other live runtimes' shares leave ({@code rate - Σ their shares}), in a round that adds a read
 * conflict on the shares' range, so two rounds growing at once conflict and the published shares
 * never add up to more than the rate. Heartbeats are never read serializably, so they never make a
 * round conflict. A runtime that has not committed a heartbeat for {@value #FENCE_MILLIS} ms stops
 * reserving before others may count it dead and take its share; they clear its keys, and a
 * reservation never writes a bucket key it finds cleared.
 *
 * <p><b>Reservations.</b> A reservation takes a slice of permits from this runtime's own bucket
 * (one read-modify-write of its bucket key per slice of about {@value #SLICE_MILLIS} ms of its
 * share), at most {@value #AHEAD_MILLIS} ms ahead. The bucket may go into debt: a slice's permit
 * {@code k} is usable {@code max(0, (k + 1 - tokens) / share)} seconds after the reservation,
 * exactly when a token bucket of that size would have had a token for it.
 *
 * <p>Threading: not thread-safe. Its rate limiter calls it holding the limiter's monitor, except
 * for the transaction bodies {@link #reserve}, {@link #read} and {@link #leave}, which touch no
 * field that changes.
 */
final class RateBucket {

  /** A reservation takes about this much of the share. */
  static final long SLICE_MILLIS = 200;

  /** A runtime never reserves permits usable later than this from now. */
  static final long AHEAD_MILLIS = 400;

  /** How often a runtime reads the others' heartbeats and shares, and adjusts its own share. */
  static final long ROUND_MILLIS = 250;

  /** A runtime rewrites its heartbeat record at least this often. */
  static final long BEAT_MILLIS = 1_000;

  /** A runtime stops reserving when its last heartbeat committed longer ago than this. */
  static final long FENCE_MILLIS = 2_000;

  /** A member whose heartbeat did not change for this long (on the reader's clock) is dead. */
  static final long DEAD_MILLIS = 3_000;

  /** A share moves only by more than this part of the rate (or to or from zero). */
  static final double HYSTERESIS = 0.02;

  private static final long ROUND_NANOS = TimeUnit.MILLISECONDS.toNanos(ROUND_MILLIS);
  private static final long BEAT_NANOS = TimeUnit.MILLISECONDS.toNanos(BEAT_MILLIS);
  private static final long FENCE_NANOS = TimeUnit.MILLISECONDS.toNanos(FENCE_MILLIS);
  private static final long DEAD_NANOS = TimeUnit.MILLISECONDS.toNanos(DEAD_MILLIS);

  /**
   * What a reservation got: {@code count} permits from a bucket that had {@code tokens} before it,
   * refilled at {@code share}; or none, and no reservation is worth trying before {@code
   * laterMillis}.
   */
  record Reservation(double share, double tokens, int count, long laterMillis) {}

  /**
   * What a round's snapshot read: the limit's config, this runtime's bucket, heartbeats, shares.
   */
  record Read(
      byte @Nullable [] config,
      byte @Nullable [] bucket,
      List<KeyValue> heartbeats,
      List<KeyValue> shares) {}

  /**
   * What a round decided: this runtime's {@code share} of {@code rate} (burst {@code burst}); the
   * members it found dead (and cleared); the record it wrote, if any, in the attempt begun at
   * {@code startedAt}.
   */
  record Round(
      double rate,
      int burst,
      double share,
      List<UUID> dead,
      LimitKeys.@Nullable Member wrote,
      boolean wroteShare,
      long startedAt) {}

  /** When this runtime last saw a member's heartbeat change (nanos, its own clock). */
  private record Seen(long beat, long atNanos) {}

  private final String name;
  private final UUID id;
  private final LimitKeys keys;
  private final byte[] configKey;
  private final byte[] bucketKey;
  private final byte[] memberKey;
  private final byte[][] membersRange;
  private final byte[] shareKey;
  private final byte[][] sharesRange;
  private final LongSupplier wallMillis;

  // Guarded by the limiter's monitor.
  private final Map<UUID, Seen> seen = new HashMap<>();
  private double rate;
  private int burst;
  private double share;
  private long beat;
  private long beatCommittedAt;
  private boolean beaten;
  private LimitKeys.@Nullable Member published;
  private double publishedShare = -1;

  RateBucket(
      String name, UUID id, LimitKeys keys, LimitKeys.RateConfig config, LongSupplier wallMillis) {
    this.name = name;
    this.id = id;
    this.keys = keys;
    this.configKey = keys.rateConfig(name);
    this.bucketKey = keys.rateBucket(name, id);
    this.memberKey = keys.rateMember(name, id);
    this.membersRange = keys.rateMembers(name);
    this.shareKey = keys.rateShare(name, id);
    this.sharesRange = keys.rateShares(name);
    this.rate = config.permitsPerSecond();
    this.burst = config.burst();
    this.wallMillis = wallMillis;
  }

  /** This runtime's share of the rate now. */
  double share() {
    return share;
  }

  /** The limit's rate as the last round read it. */
  double rate() {
    return rate;
  }

  /**
   * Whether this runtime has no committed heartbeat, or its last one committed more than {@code
   * nanos} before {@code now}.
   */
  boolean beatOlderThan(long now, long nanos) {
    return !beaten || now - beatCommittedAt > nanos;
  }

  /** How long before {@code now} this runtime's last heartbeat committed (nanos). */
  long sinceBeat(long now) {
    return now - beatCommittedAt;
  }

  /**
   * Whether a reservation may start at {@code now}: this runtime has a share and its heartbeat is
   * recent enough ({@value #FENCE_MILLIS} ms).
   */
  boolean mayReserve(long now) {
    return share > 0 && !beatOlderThan(now, FENCE_NANOS);
  }

  /** The most permits a reservation takes at {@code rate}: about a slice's worth, at least one. */
  static long sliceOf(double rate) {
    return Math.max(1, (long) Math.ceil(rate * SLICE_MILLIS / 1000.0));
  }

  /** This runtime's part of the burst at share {@code s}: the burst in proportion. */
  double burstOf(double s) {
    return rate <= 0 ? 0 : burst * s / rate;
  }

  /**
   * The body of a reservation of up to {@code size} permits at share {@code s} and burst {@code
   * burstShare}, as this runtime's limiter held them when it started.
   */
  CompletableFuture<Reservation> reserve(Transaction tx, int size, double s, double burstShare) {
    // Serializable: the only other writer of this key is a runtime that counted this one dead and
    // clears it; this reservation then conflicts, and its retry finds the key gone.
    return tx.getAsync(bucketKey)
        .thenApply(
            stored -> {
              long now = wallMillis.getAsLong();
              LimitKeys.Bucket b = LimitKeys.Bucket.decode(stored);
              if (b == null) {
                // Cleared by a runtime that counted this one dead (the first round wrote it):
                // writing it again would leave a bucket nobody clears. The next round finds this
                // runtime's keys gone and starts over.
                return new Reservation(s, 0, 0, ROUND_MILLIS);
              }
              double tokens = b.tokensAt(now, s, burstShare);
              double firstMillis = (1 - tokens) / s * 1000;
              if (firstMillis > AHEAD_MILLIS) {
                return new Reservation(s, tokens, 0, (long) Math.ceil(firstMillis - AHEAD_MILLIS));
              }
              int n = (int) Math.min(size, sliceOf(s));
              tx.set(
                  bucketKey,
                  new LimitKeys.Bucket(tokens - n, Math.max(now, b.atMillis())).encode());
              return new Reservation(s, tokens, n, 0);
            });
  }

  /** A round's snapshot reads: they never make the round conflict. */
  CompletableFuture<Read> read(Transaction tx) {
    ReadTransaction snap = tx.snapshot();
    CompletableFuture<byte @Nullable []> config = snap.getAsync(configKey);
    CompletableFuture<byte @Nullable []> bucket = snap.getAsync(bucketKey);
    CompletableFuture<List<KeyValue>> members =
        snap.getRangeAsync(membersRange[0], membersRange[1], ReadTransaction.UNLIMITED, false);
    CompletableFuture<List<KeyValue>> shares =
        snap.getRangeAsync(sharesRange[0], sharesRange[1], ReadTransaction.UNLIMITED, false);
    return CompletableFuture.allOf(config, bucket, members, shares)
        .thenApply(
            ignored -> new Read(config.join(), bucket.join(), members.join(), shares.join()));
  }

  /**
   * The body of a round's attempt begun at {@code startedAt}, on what it {@code read}; see the
   * class comment. {@code forget} drops the permits this runtime holds, when others counted it
   * dead. Holds the limiter's monitor.
   */
  Round decide(Transaction tx, RateShares.Demand mine, long startedAt, Read read, Runnable forget) {
    LimitKeys.RateConfig c = LimitKeys.RateConfig.decode(read.config());
    if (c == null) {
      throw new IllegalStateException("the rate limit " + name + " is no longer stored");
    }
    double newRate = c.permitsPerSecond();
    Map<UUID, Double> shareOf = new HashMap<>();
    for (KeyValue kv : read.shares()) {
      shareOf.put(keys.unpack(kv.key()).getUUID(3), LimitKeys.decodeShare(kv.value()));
    }
    Map<UUID, RateShares.Demand> demands = new HashMap<>();
    demands.put(id, mine);
    double others = 0;
    boolean listed = false;
    List<UUID> dead = new ArrayList<>();
    Set<UUID> present = new HashSet<>();
    for (KeyValue kv : read.heartbeats()) {
      UUID member = keys.unpack(kv.key()).getUUID(3);
      present.add(member);
      if (member.equals(id)) {
        listed = true;
        continue;
      }
      LimitKeys.Member m = LimitKeys.Member.decode(kv.value());
      Seen s = seen.get(member);
      if (s == null || s.beat() != m.beat()) {
        seen.put(member, new Seen(m.beat(), startedAt));
      } else if (startedAt - s.atNanos() > DEAD_NANOS) {
        dead.add(member);
        continue;
      }
      demands.put(member, new RateShares.Demand(m.hungry(), m.weight(), m.perSecond()));
    }
    seen.keySet().retainAll(present); // forget runtimes that left
    for (var e : shareOf.entrySet()) {
      UUID member = e.getKey();
      if (member.equals(id) || dead.contains(member)) {
        continue;
      }
      if (demands.containsKey(member)) {
        others += e.getValue();
      } else {
        dead.add(member); // a share without a heartbeat (they are written and cleared together)
      }
    }
    if (!listed && published != null) {
      // Others counted this runtime dead and cleared its keys: whatever it reserved may
      // overlap what they took over, so it starts again from nothing.
      share = 0;
      published = null;
      publishedShare = -1;
      forget.run();
    }
    double old = share;
    double room = Math.max(0, newRate - others);
    double target = Math.min(RateShares.split(newRate, demands).get(id), room);
    if (Math.abs(target - old) < newRate * HYSTERESIS && old > 0 && target > 0 && old <= room) {
      target = old;
    }
    if (target > old) {
      // A grow must not overlap another runtime's: two rounds that read the shares before
      // either wrote its own conflict here, and one reads the other's share when it retries.
      tx.addReadConflictRange(sharesRange[0], sharesRange[1]);
    } else {
      share = target; // a shrink applies at once, before anyone can read it
    }
    long nowMillis = wallMillis.getAsLong();
    if (target != old || newRate != rate || c.burst() != burst || read.bucket() == null) {
      double oldBurst = burstOf(old);
      double newBurst = newRate <= 0 ? 0 : c.burst() * target / newRate;
      LimitKeys.Bucket b = LimitKeys.Bucket.decode(read.bucket());
      double tokens =
          b == null ? newBurst : Math.min(newBurst, b.tokensAt(nowMillis, old, oldBurst));
      tx.set(bucketKey, new LimitKeys.Bucket(tokens, nowMillis).encode());
    }
    boolean writeShare = target != publishedShare;
    if (writeShare) {
      tx.set(shareKey, LimitKeys.encodeShare(target));
    }
    LimitKeys.Member written = null;
    if (published == null
        || mine.hungry() != published.hungry()
        || startedAt - beatCommittedAt >= BEAT_NANOS - ROUND_NANOS / 2) {
      written =
          new LimitKeys.Member(beat + 1, mine.hungry(), mine.weight(), mine.perSecond(), nowMillis);
      tx.set(memberKey, written.encode());
    }
    for (UUID d : dead) {
      clear(tx, d);
    }
    return new Round(newRate, c.burst(), target, dead, written, writeShare, startedAt);
  }

  /**
   * Takes on what a committed round decided; true if it wrote this runtime's heartbeat. Holds the
   * limiter's monitor.
   */
  boolean applied(Round r) {
    rate = r.rate();
    burst = r.burst();
    share = r.share();
    if (r.wroteShare()) {
      publishedShare = r.share();
    }
    boolean wrote = r.wrote() != null;
    if (wrote) {
      published = r.wrote();
      beat = published.beat();
      beatCommittedAt = r.startedAt();
      beaten = true;
    }
    r.dead().forEach(seen::remove);
    return wrote;
  }

  /** The body of leaving the limit: clears this runtime's keys of it. */
  void leave(Transaction tx) {
    clear(tx, id);
  }

  /** Clears {@code member}'s keys of the limit: its heartbeat, share and bucket. */
  private void clear(Transaction tx, UUID member) {
    tx.clear(keys.rateMember(name, member));
    tx.clear(keys.rateShare(name, member));
    tx.clear(keys.rateBucket(name, member));
  }
}
