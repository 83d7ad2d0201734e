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

  /** The byte after the tenant's prefix that no packed tuple starts with. */
  private static final byte RESERVED = (byte) 0xFF;

  private static final byte TRIMMED = 1;

  private final byte[] prefix;
  private final byte[] bell;
  private final Subspace log;
  private final Subspace servers;
  private final Subspace timers;
  private final byte[] alarm;

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
}
