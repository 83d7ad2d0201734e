package io.dgen.internal.keys;

import com.apple.foundationdb.subspace.Subspace;
import com.apple.foundationdb.tuple.Tuple;
import com.apple.foundationdb.tuple.Versionstamp;
import io.dgen.backend.Futures;
import io.dgen.backend.KeyValue;
import io.dgen.backend.ReadTransaction;
import io.dgen.backend.Transaction;
import io.dgen.internal.base.Async;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import org.jspecify.annotations.Nullable;

/**
 * The key layout of one server, declared once. Every key lives under {@code (tuid..)} inside the
 * tenant's subspace:
 *
 * <pre>
 * (tuid.., "s", 0, ...)                 state, encoded by a StateCodec
 * (tuid.., "s", 0, "v")                 versionstamp of the last state write (cache validator)
 * (tuid.., "s", "n")                    the state's type tag (name#version) if its type is annotated
 * (tuid.., "q", 0, "i", lane, VS)       queue items, FIFO by versionstamp; lane 0 = head, 1 = normal
 * (tuid.., "q", 0, "i", -1)            the pause marker (an operator's pause): value = (millis, reason);
 *                                       first in the items' range, so every consumer's peek meets it
 * (tuid.., "q", 0, "n") / ("q", 0, "p") push / pop counters (little-endian, atomic add)
 * (tuid.., "q", 0, "t", n)              type table: entry n, a message class name (UTF-8)
 * (tuid.., "c", unixSeconds, id, "t", n) a caller's reply slot, chunk n; chunk 0 is watched
 * (tuid.., "k")                         lock record
 * (tuid.., "u")                         a hosted server stuck on an undecodable state (StuckRecord)
 * (tuid.., "d", VS)                     dead letters
 * (tuid.., "o", -runMsb, runLsb32)      commit marker slot, taken by the runtime's runs in turn
 *                                       (value: the run's use of the slot, its attempt; swept by age)
 * (tuid.., "o", runId)                  commit marker of a user transaction's outbox push (same)
 * (tuid.., "i", key)                    idempotency key: (expiry second, run id[, call second, id])
 * (tuid.., "x", expirySecond, key)      expiry index of the idempotency keys
 * (tuid.., "r", expirySecond, id, "t", n) a kept reply (submit, keyed call), chunk n
 * (tuid.., "m", timerId)                the server's pending timer: value = its (next) due time (micros)
 * </pre>
 *
 * The {@code 0} after {@code "s"} and {@code "q"} is the layout version of that part.
 */
public final class ServerKeys {

  static final String STATE = "s";
  static final String QUEUE = "q";
  static final String CALLS = "c";
  static final String LOCK = "k";
  static final String STUCK = "u";
  static final String DEAD = "d";
  static final String MARKERS = "o";
  static final String IDEMPOTENCY = "i";
  static final String EXPIRY = "x";
  static final String KEPT = "r";
  static final String TIMERS = "m";
  static final long LAYOUT_VERSION = 0;

  /** Lane of items re-queued at the head of the queue. */
  public static final long LANE_HEAD = 0;

  /** Lane of normally pushed items. */
  public static final long LANE_NORMAL = 1;

  /** Lane of the pause marker: before the head lane, so a consumer's peek reads it first. */
  static final long LANE_PAUSED = -1;

  private final Tuple tuid;
  private final byte[] normalLanePrefix;
  private final byte[] headLanePrefix;
  private final byte[] pauseKey;
  private final Subspace root;
  private final Subspace state;
  private final Subspace stateAndTag;
  private final byte[] versionKey;
  private final byte[] stateTagKey;
  private final Subspace items;
  private final byte[] pushCounter;
  private final byte[] popCounter;
  private final Subspace types;
  private final Subspace calls;
  private final byte[] lockKey;
  private final byte[] stuckKey;
  private final Subspace dead;
  private final Subspace markers;
  private final Subspace idempotency;
  private final Subspace expiry;
  private final Subspace kept;
  private final Subspace timers;
  private final long wakeId;
  private final int bucket;

  /**
   * The layout of server {@code tuid} in {@code tenant}.
   *
   * @param tenant the tenant's subspace
   * @param buckets the tenant's buckets: the server's is computed once
   * @param tuid the server's identity
   */
  public ServerKeys(Subspace tenant, Buckets buckets, Tuple tuid) {
    this.tuid = tuid;
    this.bucket = buckets.of(tuid);
    this.root = tenant.subspace(tuid);
    this.state = root.subspace(Tuple.from(STATE, LAYOUT_VERSION));
    this.versionKey = state.pack(Tuple.from("v"));
    this.stateAndTag = root.subspace(Tuple.from(STATE));
    this.stateTagKey = stateAndTag.pack(Tuple.from("n"));
    Subspace queue = root.subspace(Tuple.from(QUEUE, LAYOUT_VERSION));
    this.items = queue.subspace(Tuple.from("i"));
    this.normalLanePrefix = items.pack(Tuple.from(LANE_NORMAL));
    this.headLanePrefix = items.pack(Tuple.from(LANE_HEAD));
    this.pauseKey = items.pack(Tuple.from(LANE_PAUSED));
    this.pushCounter = queue.pack(Tuple.from("n"));
    this.popCounter = queue.pack(Tuple.from("p"));
    this.types = queue.subspace(Tuple.from("t"));
    this.calls = root.subspace(Tuple.from(CALLS));
    this.lockKey = root.pack(Tuple.from(LOCK));
    this.stuckKey = root.pack(Tuple.from(STUCK));
    this.dead = root.subspace(Tuple.from(DEAD));
    this.markers = root.subspace(Tuple.from(MARKERS));
    this.idempotency = root.subspace(Tuple.from(IDEMPOTENCY));
    this.expiry = root.subspace(Tuple.from(EXPIRY));
    this.kept = root.subspace(Tuple.from(KEPT));
    this.timers = root.subspace(Tuple.from(TIMERS));
    this.wakeId = TenantKeys.wakeIdOf(root.getKey());
  }

  /** The server's identity. */
  public Tuple tuid() {
    return tuid;
  }

  /** The id under which pushes to this server ring its bucket's doorbell. */
  public long wakeId() {
    return wakeId;
  }

  /** The server's bucket in its tenant: where it rings, and whose lease runs it if hosted. */
  public int bucket() {
    return bucket;
  }

  /** Everything of this server. */
  public Subspace root() {
    return root;
  }

  /** The state subspace, including the version key. */
  public Subspace state() {
    return state;
  }

  /**
   * The state subspace and the state's type tag: what a load reads, with one range read (the tag
   * sorts before the state: a string before an integer).
   */
  public Subspace stateAndTag() {
    return stateAndTag;
  }

  /**
   * The state's type tag ({@code io.dgen.internal.codec.TypeNames}): written with the state when
   * its type is annotated and the stored tag is not the current one; absent means version 1.
   */
  public byte[] stateTagKey() {
    return stateTagKey;
  }

  /** The version key: a versionstamped value rewritten with every state write. */
  public byte[] versionKey() {
    return versionKey;
  }

  /** The queue items subspace: {@code (lane, versionstamp)}. */
  public Subspace items() {
    return items;
  }

  /**
   * The packed prefix of the items of {@code lane}; a new item's key is it followed by {@link
   * #newItemKey} (a tuple packs element by element, so this is the key of {@code (tuid, "q", 0,
   * "i", lane, stamp)}), which a backend packs without rebuilding the whole tuple.
   */
  public byte[] lanePrefix(long lane) {
    if (lane == LANE_NORMAL) {
      return normalLanePrefix;
    }
    if (lane == LANE_HEAD) {
      return headLanePrefix;
    }
    throw new IllegalArgumentException("no such lane: " + lane);
  }

  /**
   * The pause marker {@code (.., "q", 0, "i", -1)}: while it exists, no consumer applies a queued
   * message. It lies in the items' range before every lane, so the snapshot peek that every
   * consumer batch (and an inline call's check of the queue) makes reads it first, at no extra
   * read; the admin's peek skips it. Value: {@code (millis, reason)} packed.
   */
  public byte[] pauseKey() {
    return pauseKey;
  }

  /** Whether a key read from the items' range is the pause marker rather than an item. */
  public boolean isPauseMarker(byte[] key) {
    return Arrays.equals(key, pauseKey);
  }

  /** The tuple, relative to {@link #lanePrefix}, of a new item. */
  public static Tuple newItemKey(int userVersion) {
    return Tuple.from(Versionstamp.incomplete(userVersion));
  }

  /** The push counter. */
  public byte[] pushCounter() {
    return pushCounter;
  }

  /** The pop counter. */
  public byte[] popCounter() {
    return popCounter;
  }

  /** The type table: message class names by index. */
  public Subspace types() {
    return types;
  }

  /** Entry {@code index} of the type table. */
  public byte[] typeKey(int index) {
    return types.pack(Tuple.from(index));
  }

  /** All reply slots. */
  public Subspace calls() {
    return calls;
  }

  /** The reply slot of one call. */
  public Subspace slot(long unixSeconds, String id) {
    return calls.subspace(Tuple.from(unixSeconds, id));
  }

  /** The record of one idempotency key. */
  public byte[] idempotencyKey(String key) {
    return idempotency.pack(Tuple.from(key));
  }

  /** The expiry index of the idempotency keys: {@code (expirySecond, key)}. */
  public Subspace expiry() {
    return expiry;
  }

  /** All kept replies, ordered by the second they expire at. */
  public Subspace kept() {
    return kept;
  }

  /** The kept reply of one call. */
  public Subspace keptSlot(long expirySecond, String id) {
    return kept.subspace(Tuple.from(expirySecond, id));
  }

  /** The id under which a reply to the slot {@code (unixSeconds, id)} rings the doorbell. */
  public long slotWakeId(long unixSeconds, String id) {
    return TenantKeys.wakeIdOf(slot(unixSeconds, id).getKey());
  }

  /**
   * Pushes {@code item} at the tail of {@code lane}: blind writes only, so pushes never conflict.
   * The caller rings the server's bucket (see {@link ServerEntry#publish}).
   */
  public void push(Transaction tx, long lane, byte[] item) {
    tx.setVersionstampedKey(lanePrefix(lane), newItemKey(UserVersions.next(tx)), item);
    tx.add(pushCounter, 1);
  }

  /**
   * What a kill found, by the first attempt of its run: the incarnation of the server it removes. A
   * retried attempt (after {@code commit_unknown_result}, which may have applied) removes the
   * server only if it still finds that one, so a server started again in between survives: a kill
   * is idempotent by the incarnation its run set out to remove. Thread-safe; one per run.
   */
  public static final class KillTarget {
    private static final long UNSET = Long.MIN_VALUE;
    private final java.util.concurrent.atomic.AtomicLong incarnation =
        new java.util.concurrent.atomic.AtomicLong(UNSET);

    /** Whether an attempt that finds {@code entry} (the server's index entry, or null) kills. */
    boolean aims(byte @Nullable [] entry) {
      long found = TenantKeys.seenBy(entry);
      return incarnation.compareAndSet(UNSET, found) || incarnation.get() == found;
    }

    /** The incarnation the run set out to remove ({@code -1}: none), once an attempt ran. */
    public long incarnation() {
      return incarnation.get();
    }
  }

  /**
   * Removes the server in {@code tx} (a kill): rings the wake id of every open reply slot (their
   * callers find their slots gone and fail instead of waiting for their deadlines) and the server's
   * own (consumers in other runtimes look again), deletes its pending timers from its bucket's
   * timer index, clears every key under {@code (tuid..)}, the server's entry in the tenant's server
   * index and its ready index entry — unless {@code target} shows this is a retry of a kill that
   * found another incarnation, which a kill and a start since replaced (then it removes nothing).
   *
   * @return whether this attempt removed the server
   */
  public boolean kill(Transaction tx, TenantKeys tenant, KillTarget target) {
    return Futures.join(killAsync(tx, tenant, target, Runnable::run));
  }

  /**
   * {@link #kill} with its reads started together and the writes made once they are in, on {@code
   * executor} if they were not in at once.
   */
  public CompletableFuture<Boolean> killAsync(
      Transaction tx, TenantKeys tenant, KillTarget target, Executor executor) {
    var entry = tx.getAsync(tenant.serverKey(tuid));
    var slots = tx.getRangeAsync(calls.range().begin, calls.range().end, 0, false);
    var pending = tx.getRangeAsync(timers.range().begin, timers.range().end, 0, false);
    return Async.thenApply(
        CompletableFuture.allOf(entry, slots, pending),
        executor,
        ready -> {
          if (!target.aims(entry.join())) {
            return false;
          }
          for (KeyValue kv : pending.join()) {
            long due = Tuple.fromBytes(kv.value()).getLong(0);
            tx.clear(
                tenant.timers(bucket).pack(Tuple.from(due, timers.unpack(kv.key()).getUUID(0))));
          }
          ringSlots(tx, tenant, slots.join());
          tenant.ring(tx, bucket, wakeId);
          tx.clearRange(root.range().begin, root.range().end);
          tx.clear(tenant.serverKey(tuid));
          tx.clear(tenant.readyKey(bucket, tuid));
          return true;
        });
  }

  /** Rings the wake id of each reply slot of {@code slots} (as read from {@link #calls}). */
  public void ringSlots(Transaction tx, TenantKeys tenant, List<KeyValue> slots) {
    for (KeyValue kv : slots) {
      Tuple t = calls.unpack(kv.key());
      if (t.size() >= 2 && t.get(0) instanceof Long sec && t.get(1) instanceof String id) {
        tenant.ring(tx, bucket, slotWakeId(sec, id));
      }
    }
  }

  /** Chunk {@code n} of a reply slot. */
  public static byte[] slotChunk(Subspace slot, long n) {
    return slot.pack(Tuple.from("t", n));
  }

  /** The lock record. */
  public byte[] lockKey() {
    return lockKey;
  }

  /**
   * Why a hosted server is not running although it has work, if it is stuck ({@link StuckRecord}).
   */
  public byte[] stuckKey() {
    return stuckKey;
  }

  /** Dead letters, by versionstamp. */
  public Subspace dead() {
    return dead;
  }

  /** Commit markers: slots, then user transactions' markers by run id. */
  public Subspace markers() {
    return markers;
  }

  /** The commit marker of a user transaction's run (an outbox push). */
  public byte[] marker(java.util.UUID runId) {
    return markers.pack(Tuple.from(runId));
  }

  /**
   * The commit marker slot first taken by the run {@code runId}. Its first element is the negated
   * most significant half of the run id (start time and 16 random bits), so slots sort newest
   * first, ahead of every run-id-keyed marker: one range clear sweeps old slots and old markers.
   */
  public byte[] markerSlot(java.util.UUID runId) {
    return markers.pack(
        Tuple.from(-runId.getMostSignificantBits(), (long) (int) runId.getLeastSignificantBits()));
  }

  /**
   * The bounds of the commit markers older than the run-id clock's {@code epochMillis}: slots first
   * taken before it, and run-id-keyed markers of runs started before it.
   */
  public byte[][] markersOlderThan(long epochMillis) {
    java.util.UUID bound = io.dgen.backend.RunIds.startingAt(epochMillis);
    return new byte[][] {
      markers.pack(Tuple.from(-bound.getMostSignificantBits())), markers.pack(Tuple.from(bound))
    };
  }

  /**
   * The server's pending timers, by id; each value is the timer's due time, which locates its entry
   * in the tenant's timer index.
   */
  public Subspace timers() {
    return timers;
  }

  /**
   * A pending timer as stored.
   *
   * @param id the id {@code castAfter} returned
   * @param dueMicros its due time, in microseconds since the epoch
   * @param envelope the queue item it will push, or null if its index entry is missing
   * @param schedule how a recurring timer repeats ({@code every PT1S}, {@code cron 0 3 * * *
   *     Europe/Berlin}), or null for a one-shot timer
   */
  public record PendingTimer(
      String id, long dueMicros, byte @Nullable [] envelope, @Nullable String schedule) {}

  /**
   * The server's pending timers, soonest first, read in {@code tx} (for admin tools): at most
   * {@code limit} ({@code 0}: all) of its own timer keys, which are ordered by id, after the timer
   * {@code afterId} (exclusive; null: from the first).
   *
   * @throws IllegalArgumentException if {@code afterId} is not a timer id
   */
  public List<PendingTimer> pendingTimers(
      ReadTransaction tx, TenantKeys tenant, @Nullable String afterId, int limit) {
    byte[] begin =
        afterId == null
            ? timers.range().begin
            : com.apple.foundationdb.tuple.ByteArrayUtil.join(
                timers.pack(Tuple.from(TimerEntry.parse(afterId))), new byte[] {0});
    List<KeyValue> own = tx.getRange(begin, timers.range().end, limit, false);
    List<Map.Entry<Long, UUID>> ids = new ArrayList<>(own.size());
    List<CompletableFuture<byte @Nullable []>> entries = new ArrayList<>(own.size());
    for (KeyValue kv : own) {
      var timer =
          Map.entry(Tuple.fromBytes(kv.value()).getLong(0), timers.unpack(kv.key()).getUUID(0));
      ids.add(timer);
      entries.add(
          tx.getAsync(tenant.timers(bucket).pack(Tuple.from(timer.getKey(), timer.getValue()))));
    }
    List<PendingTimer> out = new ArrayList<>(own.size());
    for (int i = 0; i < ids.size(); i++) {
      byte[] raw = Futures.join(entries.get(i));
      TimerEntry entry = raw == null ? null : TimerEntry.decode(raw);
      out.add(
          new PendingTimer(
              TimerEntry.format(ids.get(i).getValue()),
              ids.get(i).getKey(),
              entry == null ? null : entry.envelope(),
              entry == null || entry.schedule() == null ? null : entry.schedule().describe()));
    }
    out.sort(Comparator.comparingLong(PendingTimer::dueMicros));
    return out;
  }

  /**
   * Deletes this server's pending timer {@code timerId} in {@code tx}: its own key and its entry in
   * the tenant's timer index. The serializable read of its own key conflicts with its firing, so
   * one of the two wins.
   *
   * @return false if it is not pending
   * @throws IllegalArgumentException if {@code timerId} is not a timer id
   */
  public boolean cancelTimer(Transaction tx, TenantKeys tenant, String timerId) {
    return Futures.join(cancelTimerAsync(tx, tenant, timerId, Runnable::run));
  }

  /** {@link #cancelTimer}, continued on {@code executor} if its read was not in at once. */
  public CompletableFuture<Boolean> cancelTimerAsync(
      Transaction tx, TenantKeys tenant, String timerId, Executor executor) {
    UUID id = TimerEntry.parse(timerId);
    byte[] own = timers.pack(Tuple.from(id));
    return Async.thenApply(
        tx.getAsync(own),
        executor,
        due -> {
          if (due == null) {
            return false;
          }
          tx.clear(own);
          tx.clear(tenant.timers(bucket).pack(Tuple.from(Tuple.fromBytes(due).getLong(0), id)));
          return true;
        });
  }

  /**
   * Checks that {@code timerId} is a timer id.
   *
   * @throws IllegalArgumentException if it is not
   */
  public static void checkTimerId(String timerId) {
    TimerEntry.parse(timerId);
  }

  /**
   * The uuid a timer id stands for, which orders the server's timer keys.
   *
   * @throws IllegalArgumentException if {@code timerId} is not a timer id
   */
  public static UUID timerUuid(String timerId) {
    return TimerEntry.parse(timerId);
  }

  /**
   * The id users hold for a queue item or a dead letter: its versionstamp as 24 hex digits.
   *
   * @see #parseStampId
   */
  public static String stampId(Versionstamp stamp) {
    return HexFormat.of().formatHex(stamp.getBytes());
  }

  /**
   * The versionstamp a {@link #stampId} names.
   *
   * @param what what the id should name, for the error ({@code "a dead letter"})
   * @throws IllegalArgumentException if {@code id} is not 24 hex digits
   */
  public static Versionstamp parseStampId(String id, String what) {
    Objects.requireNonNull(id, "id must not be null");
    byte[] stamp;
    try {
      stamp = HexFormat.of().parseHex(id);
    } catch (IllegalArgumentException e) {
      stamp = new byte[0];
    }
    if (stamp.length != 12) {
      throw new IllegalArgumentException("not " + what + " id (24 hex digits): " + id);
    }
    return Versionstamp.fromBytes(stamp);
  }

  /** The call id users hold for the kept reply in slot {@code (expirySecond, slotId)}. */
  public static String keptCallId(long expirySecond, String slotId) {
    return KeptReplies.callId(new io.dgen.From(expirySecond, slotId));
  }

  /** Decodes a little-endian counter value; absent counts as zero. */
  public static long decodeCounter(byte @org.jspecify.annotations.Nullable [] value) {
    if (value == null) {
      return 0;
    }
    byte[] eight = java.util.Arrays.copyOf(value, 8);
    return ByteBuffer.wrap(eight).order(ByteOrder.LITTLE_ENDIAN).getLong();
  }
}
