package io.dgen.internal.keys;

import com.apple.foundationdb.subspace.Subspace;
import com.apple.foundationdb.tuple.Tuple;
import com.apple.foundationdb.tuple.Versionstamp;
import com.google.common.hash.Hashing;
import io.dgen.backend.Transaction;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.UUID;
import org.jspecify.annotations.Nullable;

/**
 * The tenant-level keys, declared once. They live under the tenant's prefix followed by the byte
 * {@code 0xFF}, which starts no packed tuple, so they never collide with a server's keys (every
 * server lives under a tuple, its tuid) nor with the tuple keys users keep next to their servers.
 * Everything a message touches is per server or per bucket (see {@link Buckets}): no key is written
 * by every message of a tenant.
 *
 * <pre>
 * &lt;tenant&gt; FF (2, tuid..)         the server index: the behaviour's class name (UTF-8), 0 and
 *                                   the 8-byte incarnation id ({@link #serverEntry}), or a hosted
 *                                   server's entry ({@link ServerEntry}); written by a start or a
 *                                   hosted server's first push, cleared by its kill
 * &lt;tenant&gt; FF (3, due, id)        legacy tenant-wide timers, moved into their buckets on sight
 * &lt;tenant&gt; FF (5, b)              bucket b's bell: ADD 1 per ring of the bucket; watched
 * &lt;tenant&gt; FF (6, b, VS)          bucket b's wake log: flags, the 8-byte wake id rung, and the
 *                                   packed tuid when the ring activates a hosted server
 * &lt;tenant&gt; FF (7, b, due, id)     bucket b's durable timers by due time (see {@code Timers})
 * &lt;tenant&gt; FF (8)                 placement: the bucket count ({@link Buckets})
 * &lt;tenant&gt; FF (9, memberId)       a hosting runtime's member record ({@code Placement})
 * &lt;tenant&gt; FF (10, kind, b)       the lease of (kind, bucket): (memberId, epoch)
 * &lt;tenant&gt; FF (11, b, tuid..)     ready index: hosted servers of bucket b that may have work
 * &lt;tenant&gt; FF (12, kind, n)       a kind's type table: message class names by index
 * &lt;tenant&gt; FF (13, kind, b, at, tuid..) expiry index: idle hosted servers of (kind, bucket) b
 *                                   by the wall-clock millisecond they expire at ({@code Expiry});
 *                                   written by the unload that marks one idle, cleared by its next
 *                                   activation or its collection
 * </pre>
 *
 * Keys {@code (0)}, {@code (1, VS)} and {@code (4)} were the tenant-wide bell, wake log and timer
 * alarm of earlier versions; they are no longer written or read.
 *
 * <p>A wake id is a 64-bit fingerprint of a server's or reply slot's key; two ids that collide only
 * wake something that finds nothing to do.
 *
 * <p>Public for the admin tools ({@code io.dgen.admin}), which ring and read these keys without a
 * runtime; not an API.
 */
public final class TenantKeys {

  static final long SERVERS = 2;
  static final long LEGACY_TIMERS = 3;
  static final long BELLS = 5;
  static final long WAKE_LOGS = 6;
  static final long TIMERS = 7;
  // 8: the placement records (Buckets.PLACEMENT)
  static final long MEMBERS = 9;
  static final long LEASES = 10;
  static final long READY = 11;
  static final long KIND_TYPES = 12;
  static final long EXPIRING = 13;

  /** Flags of a wake log entry (its first byte). */
  private static final byte TRIMMED = 1;

  private static final byte ACTIVATES = 2;

  private final byte[] prefix;
  private final Buckets buckets;
  private final Subspace servers;
  private final Subspace legacyTimers;
  private final Subspace bells;
  private final Subspace logs;
  private final Subspace timers;
  private final byte[] placement;
  private final Subspace members;
  private final Subspace leases;
  private final Subspace ready;
  private final Subspace kindTypes;
  private final Subspace expiring;

  /** The tenant-level keys of {@code tenant}, whose servers hash into {@code buckets}. */
  public TenantKeys(Subspace tenant, Buckets buckets) {
    this.prefix = Buckets.tenantPrefix(tenant);
    this.buckets = buckets;
    Subspace runtime = new Subspace(prefix);
    this.servers = runtime.subspace(Tuple.from(SERVERS));
    this.legacyTimers = runtime.subspace(Tuple.from(LEGACY_TIMERS));
    this.bells = runtime.subspace(Tuple.from(BELLS));
    this.logs = runtime.subspace(Tuple.from(WAKE_LOGS));
    this.timers = runtime.subspace(Tuple.from(TIMERS));
    this.placement = Buckets.placementKey(tenant);
    this.members = runtime.subspace(Tuple.from(MEMBERS));
    this.leases = runtime.subspace(Tuple.from(LEASES));
    this.ready = runtime.subspace(Tuple.from(READY));
    this.kindTypes = runtime.subspace(Tuple.from(KIND_TYPES));
    this.expiring = runtime.subspace(Tuple.from(EXPIRING));
  }

  /** The tenant's buckets. */
  public Buckets buckets() {
    return buckets;
  }

  /** The server index: {@code (2, tuid..)} for every server started and not killed. */
  public Subspace servers() {
    return servers;
  }

  /**
   * The server index entry of {@code tuid}; a started server's value is {@link #serverEntry}: the
   * behaviour's class name and the server's incarnation (a hosted server's: see {@link
   * ServerEntry}).
   */
  public byte[] serverKey(Tuple tuid) {
    return servers.pack(tuid);
  }

  /**
   * A server index entry's value: the behaviour's class name (UTF-8), a zero byte, and the 8-byte
   * incarnation id, drawn when the server is started with no entry (first, or after a kill).
   */
  public static byte[] serverEntry(String behaviour, long incarnation) {
    byte[] name = behaviour.getBytes(StandardCharsets.UTF_8);
    return ByteBuffer.allocate(name.length + 1 + Long.BYTES)
        .put(name)
        .put((byte) 0)
        .putLong(incarnation)
        .array();
  }

  /** The behaviour's class name in a server index entry's value. */
  public static String behaviourOf(byte[] entry) {
    int end = 0;
    while (end < entry.length && entry[end] != 0) {
      end++;
    }
    return new String(entry, 0, end, StandardCharsets.UTF_8);
  }

  /**
   * The incarnation id in a server index entry's value, or 0 for an entry written before entries
   * carried one.
   */
  public static long incarnationOf(byte[] entry) {
    if (entry.length > 0 && entry[0] == 0) {
      return 0; // a hosted server's entry (ServerEntry): none
    }
    int zero = entry.length - Long.BYTES - 1;
    return zero >= 0 && entry[zero] == 0
        ? ByteBuffer.wrap(entry, zero + 1, Long.BYTES).getLong()
        : 0;
  }

  // ---------------------------------------------------------------- the wake path, per bucket

  /**
   * Rings {@code wakeId} in {@code bucket} in {@code tx}: a wake log entry and a bell {@code ADD},
   * both blind writes, once per id and transaction.
   */
  public void ring(Transaction tx, int bucket, long wakeId) {
    if (UserVersions.firstRing(tx, wakeId)) {
      write(tx, bucket, entry((byte) 0, wakeId, null));
    }
  }

  /**
   * Rings server {@code wakeId} in {@code bucket} with its packed tuid in the entry: the holder of
   * the bucket loads the server if it does not run it yet. Must come before any plain ring of the
   * same id in {@code tx}, which it then stands for.
   */
  public void ringActivating(Transaction tx, int bucket, long wakeId, byte[] packedTuid) {
    if (UserVersions.firstRing(tx, wakeId)) {
      write(tx, bucket, entry(ACTIVATES, wakeId, packedTuid));
    }
  }

  private void write(Transaction tx, int bucket, byte[] value) {
    tx.setVersionstampedKey(prefix, newLogEntry(bucket, UserVersions.next(tx)), value);
    tx.add(bell(bucket), 1);
  }

  /** The raw prefix of every tenant-level key (and of a new wake log entry's tuple). */
  byte[] prefix() {
    return prefix;
  }

  /** Bucket {@code b}'s bell: {@code ADD 1} per ring of the bucket; watched. */
  public byte[] bell(int b) {
    return bells.pack(Tuple.from(b));
  }

  /** Bucket {@code b}'s wake log. */
  public Subspace log(int b) {
    return logs.subspace(Tuple.from(b));
  }

  /** The tuple, relative to {@link #prefix()}, of a new wake log entry of {@code bucket}. */
  static Tuple newLogEntry(int bucket, int userVersion) {
    return Tuple.from(WAKE_LOGS, bucket, Versionstamp.incomplete(userVersion));
  }

  /** The commit version of the transaction that wrote a wake log entry of {@code bucket}. */
  public long commitVersion(int bucket, byte[] entryKey) {
    return ByteBuffer.wrap(log(bucket).unpack(entryKey).getVersionstamp(0).getTransactionVersion())
        .getLong();
  }

  private static byte[] entry(byte flags, long wakeId, byte @Nullable [] packedTuid) {
    int tail = packedTuid == null ? 0 : packedTuid.length;
    ByteBuffer b = ByteBuffer.allocate(1 + Long.BYTES + tail).put(flags).putLong(wakeId);
    if (packedTuid != null) {
      b.put(packedTuid);
    }
    return b.array();
  }

  /** The wake id an entry names, or 0 for a malformed one. */
  public static long wakeId(byte[] entryValue) {
    return entryValue.length >= 1 + Long.BYTES ? ByteBuffer.wrap(entryValue, 1, 8).getLong() : 0;
  }

  /** The tuid an activating entry carries, or null. */
  public static @Nullable Tuple activated(byte[] entryValue) {
    if (entryValue.length <= 1 + Long.BYTES || (entryValue[0] & ACTIVATES) == 0) {
      return null;
    }
    return Tuple.fromBytes(entryValue, 1 + Long.BYTES, entryValue.length - 1 - Long.BYTES);
  }

  /** The entry's value once a trim has made it the first entry of its log. */
  public static byte[] trimmedHere(byte[] entryValue) {
    byte[] v = entryValue.clone();
    v[0] |= TRIMMED;
    return v;
  }

  /** Whether a trim made this entry the first of its log (entries before it were removed). */
  public static boolean isTrimmedHere(byte @Nullable [] entryValue) {
    return entryValue != null && entryValue.length > 0 && (entryValue[0] & TRIMMED) != 0;
  }

  /** The wake id of a server or reply slot: a fingerprint of its key, the same in every JVM. */
  static long wakeIdOf(byte[] key) {
    return Hashing.farmHashFingerprint64().hashBytes(key).asLong();
  }

  // ---------------------------------------------------------------- timers

  /** Bucket {@code b}'s timers by due time: {@code (dueMicros, id) -> (tuid, envelope)}. */
  public Subspace timers(int b) {
    return timers.subspace(Tuple.from(b));
  }

  /** The wake id under which scheduling a timer rings bucket {@code b}: its schedulers listen. */
  public long timersWakeId(int b) {
    return wakeIdOf(timers(b).getKey());
  }

  /** Timers of earlier versions, tenant-wide: {@code (dueMicros, id) -> (tuid, envelope)}. */
  public Subspace legacyTimers() {
    return legacyTimers;
  }

  // ---------------------------------------------------------------- placement (docs/scale-out.md)

  /** The tenant's placement record: its bucket count, written once (see {@link Buckets}). */
  public byte[] placement() {
    return placement;
  }

  /** Member records {@code (memberId) -> (heartbeat, lease, started, host, pid, kinds)}. */
  public Subspace members() {
    return members;
  }

  /** The member record of {@code memberId}. */
  public byte[] member(UUID memberId) {
    return members.pack(Tuple.from(memberId));
  }

  /** Every lease of the tenant: {@code (kind, bucket) -> (memberId, epoch)}. */
  public Subspace leases() {
    return leases;
  }

  /** The leases of {@code kind}. */
  public Subspace leases(String kind) {
    return leases.subspace(Tuple.from(kind));
  }

  /** The lease of {@code (kind, bucket)}. */
  public byte[] lease(String kind, int bucket) {
    return leases.pack(Tuple.from(kind, bucket));
  }

  /** The ready index: hosted servers that may have work, by bucket. */
  public Subspace ready() {
    return ready;
  }

  /** The ready servers of {@code bucket}. */
  public Subspace ready(int bucket) {
    return ready.subspace(Tuple.from(bucket));
  }

  /** The ready index entry of server {@code tuid} in {@code bucket}. */
  byte[] readyKey(int bucket, Tuple tuid) {
    return ready.pack(Tuple.from(bucket).addAll(tuid));
  }

  /** The type table of {@code kind}: message class names by index, shared by its servers. */
  public Subspace kindTypes(String kind) {
    return kindTypes.subspace(Tuple.from(kind));
  }

  /** The expiry index of the idle servers of {@code kind} in {@code bucket}, by expiry time. */
  public Subspace expiring(String kind, int bucket) {
    return expiring.subspace(Tuple.from(kind, bucket));
  }

  /**
   * The expiry index entry of hosted server {@code tuid} (its kind first), idle until {@code
   * expiresAt} (wall-clock millis).
   */
  public byte[] expiringKey(int bucket, long expiresAt, Tuple tuid) {
    return expiring.pack(Tuple.from(tuid.get(0), bucket, expiresAt).addAll(tuid));
  }

  /** What {@link #seenBy} records for a server with no entry. */
  public static final long NO_ENTRY = -1;

  /**
   * The incarnation an entry's value names: {@link #NO_ENTRY} for none, 0 for an entry without one.
   */
  public static long seenBy(byte @Nullable [] entry) {
    return entry == null ? NO_ENTRY : incarnationOf(entry);
  }
}
