package io.dgen.internal;

import com.apple.foundationdb.subspace.Subspace;
import com.apple.foundationdb.tuple.Tuple;
import com.apple.foundationdb.tuple.Versionstamp;
import com.google.common.hash.Hashing;
import io.dgen.backend.Transaction;
import java.nio.ByteBuffer;
import java.util.Arrays;
import org.jspecify.annotations.Nullable;

/**
 * The tenant-level keys, declared once: the doorbell that wakes a tenant's idle consumers and
 * waiting callers without a watch each. They live under the tenant's prefix followed by the byte
 * {@code 0xFF}, which starts no packed tuple, so they never collide with a server's keys (every
 * server lives under a tuple, its tuid) nor with the tuple keys users keep next to their servers:
 *
 * <pre>
 * &lt;tenant&gt; FF (0)          the bell: a counter every ringing transaction ADDs 1 to; watched
 * &lt;tenant&gt; FF (1, VS)      the wake log: value = the 8-byte wake id of a server or reply slot
 *                            (+ a byte 1 once a trim made it the log's first entry)
 * &lt;tenant&gt; FF (2, tuid..)  the server index: value = the behaviour's class name (UTF-8);
 *                            written by a server's start, cleared by its kill
 * &lt;tenant&gt; FF (3, due, id)   durable timers by due time (see {@link Timers})
 * &lt;tenant&gt; FF (4)          the timers' alarm: ADDed by every scheduling transaction; watched
 * </pre>
 *
 * A wake id is a 64-bit fingerprint of a server's or reply slot's key; two ids that collide only
 * wake something that finds nothing to do.
 *
 * <p>Public for the admin tools ({@code io.dgen.admin}), which ring and read these keys without a
 * runtime; not an API.
 */
public final class TenantKeys {

  static final long BELL = 0;
  static final long WAKE_LOG = 1;
  static final long SERVERS = 2;
  static final long TIMERS = 3;
  static final long ALARM = 4;
  static final long PLACEMENT = 8;
  static final long MEMBERS = 9;
  static final long LEASES = 10;
  static final long READY = 11;
  static final long KIND_TYPES = 12;

  /** The byte after the tenant's prefix that no packed tuple starts with. */
  private static final byte RESERVED = (byte) 0xFF;

  private static final byte TRIMMED = 1;

  private final byte[] prefix;
  private final byte[] bell;
  private final Subspace log;
  private final Subspace servers;
  private final Subspace timers;
  private final byte[] alarm;
  private final byte[] placement;
  private final Subspace members;
  private final Subspace leases;
  private final Subspace ready;
  private final Subspace kindTypes;

  /** The tenant-level keys of {@code tenant}. */
  public TenantKeys(Subspace tenant) {
    byte[] t = tenant.getKey();
    this.prefix = Arrays.copyOf(t, t.length + 1);
    prefix[t.length] = RESERVED;
    Subspace runtime = new Subspace(prefix);
    this.bell = runtime.pack(Tuple.from(BELL));
    this.log = runtime.subspace(Tuple.from(WAKE_LOG));
    this.servers = runtime.subspace(Tuple.from(SERVERS));
    this.timers = runtime.subspace(Tuple.from(TIMERS));
    this.alarm = runtime.pack(Tuple.from(ALARM));
    this.placement = runtime.pack(Tuple.from(PLACEMENT));
    this.members = runtime.subspace(Tuple.from(MEMBERS));
    this.leases = runtime.subspace(Tuple.from(LEASES));
    this.ready = runtime.subspace(Tuple.from(READY));
    this.kindTypes = runtime.subspace(Tuple.from(KIND_TYPES));
  }

  /** The server index: {@code (2, tuid..)} for every server started and not killed. */
  public Subspace servers() {
    return servers;
  }

  /** The server index entry of {@code tuid}; its value is the behaviour's class name. */
  public byte[] serverKey(Tuple tuid) {
    return servers.pack(tuid);
  }

  /**
   * Rings {@code wakeId} in {@code tx}: a wake log entry and a bell {@code ADD}, both blind writes,
   * once per id and transaction.
   */
  public void ring(Transaction tx, long wakeId) {
    if (UserVersions.firstRing(tx, wakeId)) {
      tx.setVersionstampedKey(prefix, newLogEntry(UserVersions.next(tx)), entry(wakeId));
      tx.add(bell, 1);
    }
  }

  /** The timers by due time: {@code (dueMicros, id) -> (tuid, envelope)}. */
  Subspace timers() {
    return timers;
  }

  /** The timers' alarm: ADDed by every transaction that schedules a timer; watched. */
  byte[] alarm() {
    return alarm;
  }

  /** The raw prefix of every tenant-level key (and of a new wake log entry's tuple). */
  byte[] prefix() {
    return prefix;
  }

  /** The bell: rung (ADD 1) by every transaction that writes wake log entries; watched. */
  byte[] bell() {
    return bell;
  }

  /** The wake log. */
  Subspace log() {
    return log;
  }

  /** The tuple, relative to {@link #prefix()}, of a new wake log entry. */
  static Tuple newLogEntry(int userVersion) {
    return Tuple.from(WAKE_LOG, Versionstamp.incomplete(userVersion));
  }

  /** The commit version of the transaction that wrote a wake log entry. */
  long commitVersion(byte[] entryKey) {
    return ByteBuffer.wrap(log.unpack(entryKey).getVersionstamp(0).getTransactionVersion())
        .getLong();
  }

  /** The value of a wake log entry for {@code wakeId}. */
  static byte[] entry(long wakeId) {
    return ByteBuffer.allocate(Long.BYTES).putLong(wakeId).array();
  }

  /** The wake id an entry names, or 0 for a malformed one. */
  static long wakeId(byte[] entryValue) {
    return entryValue.length >= Long.BYTES ? ByteBuffer.wrap(entryValue).getLong() : 0;
  }

  /** The entry's value once a trim has made it the first entry of the log. */
  static byte[] trimmedHere(byte[] entryValue) {
    byte[] v = Arrays.copyOf(entryValue, Long.BYTES + 1);
    v[Long.BYTES] = TRIMMED;
    return v;
  }

  /** Whether a trim made this entry the first of the log (entries before it were removed). */
  static boolean isTrimmedHere(byte @Nullable [] entryValue) {
    return entryValue != null
        && entryValue.length > Long.BYTES
        && entryValue[Long.BYTES] == TRIMMED;
  }

  /** The wake id of a server or reply slot: a fingerprint of its key, the same in every JVM. */
  static long wakeIdOf(byte[] key) {
    return Hashing.farmHashFingerprint64().hashBytes(key).asLong();
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
  byte[] member(java.util.UUID memberId) {
    return members.pack(Tuple.from(memberId));
  }

  /** Every lease of the tenant: {@code (kind, bucket) -> (memberId, epoch)}. */
  public Subspace leases() {
    return leases;
  }

  /** The leases of {@code kind}. */
  Subspace leases(String kind) {
    return leases.subspace(Tuple.from(kind));
  }

  /** The lease of {@code (kind, bucket)}. */
  byte[] lease(String kind, int bucket) {
    return leases.pack(Tuple.from(kind, bucket));
  }

  /** The ready index: hosted servers that may have work, by bucket. */
  public Subspace ready() {
    return ready;
  }

  /** The ready servers of {@code bucket}. */
  Subspace ready(int bucket) {
    return ready.subspace(Tuple.from(bucket));
  }

  /** The ready index entry of server {@code tuid} in {@code bucket}. */
  byte[] readyKey(int bucket, Tuple tuid) {
    return ready.pack(Tuple.from(bucket).addAll(tuid));
  }

  /** The type table of {@code kind}: message class names by index, shared by its servers. */
  Subspace kindTypes(String kind) {
    return kindTypes.subspace(Tuple.from(kind));
  }
}
