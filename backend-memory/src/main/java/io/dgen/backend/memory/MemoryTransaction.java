package io.dgen.backend.memory;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.backend.BackendException;
import io.dgen.backend.ByteKeys;
import io.dgen.backend.Futures;
import io.dgen.backend.KeyValue;
import io.dgen.backend.ReadTransaction;
import io.dgen.backend.Transaction;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Objects;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * One attempt of a transaction on a {@link MemoryStore}: the read version, the write map that
 * read-your-writes merges into every read, the read- and write-conflict ranges, versionstamped
 * operations and watches.
 *
 * <p>The write map keeps the net effect per key ({@link Op}) plus a set of coalesced range clears.
 * A point operation issued before a range clear covering it is dropped by the clear, so at commit
 * the store applies range clears first and point operations after them. An atomic add on a key
 * whose value this attempt determined (own set or clear) is folded into a plain value at once;
 * otherwise it stays "dependent" on the stored value, which is what makes it count for read
 * conflicts when read back (FoundationDB's RYW rule).
 *
 * <p>Reads may come from several threads at once (the SPI allows it); the read version and the
 * read-conflict list are guarded by {@code this}. Writes are single-threaded by contract.
 */
final class MemoryTransaction implements Transaction {

  static final int KEY_SIZE_LIMIT = 10_000;
  // FoundationDB reads keys up to 10,000 bytes plus an 8-byte tenant-prefix allowance.
  static final int MAX_READ_KEY_SIZE = 10_008;
  static final int VALUE_SIZE_LIMIT = 100_000;
  static final long TRANSACTION_SIZE_LIMIT = 10_000_000;

  private static final int ACTIVE = 0;
  private static final int COMMITTING = 1;
  private static final int DONE = 2;
  private static final int CANCELLED = 3;

  /** The net pending effect on one key. */
  static final class Op {
    /** The value depends on the stored one (a pending plain atomic add). */
    static final byte DB = 0;

    /** The value is {@link #value} ({@code null}: cleared), known to this attempt. */
    static final byte VALUE = 1;

    /** The value is {@link #value} followed by the commit's versionstamp. */
    static final byte STAMPED = 2;

    byte base;
    byte @Nullable [] value;
    boolean hasDelta;
    long delta;
    // A versionstamped value makes the key unreadable for the rest of the attempt, even after a
    // later set or atomic operation (FoundationDB's WriteMap keeps is_unreadable); a clear makes
    // it readable again.
    boolean unreadable;

    boolean independent() {
      return base != DB;
    }
  }

  /**
   * A pending {@link #setVersionstampedKey}: the packed key with the stamp's ten bytes at {@code
   * offset} still to be filled in, and the range of keys it may end up at.
   */
  static final class StampedKey {
    final byte[] template;
    final int offset;
    final byte[] value;
    final byte[] lo;
    final byte[] hi;
    @Nullable ArrayList<byte[]> laterClears;

    StampedKey(byte[] template, int offset, byte[] value, byte[] lo, byte[] hi) {
      this.template = template;
      this.offset = offset;
      this.value = value;
      this.lo = lo;
      this.hi = hi;
    }

    byte[] finalKey(byte[] stamp) {
      byte[] key = template.clone();
      System.arraycopy(stamp, 0, key, offset, stamp.length);
      return key;
    }

    boolean clearedLater(byte[] key) {
      if (laterClears != null) {
        for (int i = 0; i < laterClears.size(); i += 2) {
          if (ByteKeys.compare(laterClears.get(i), key) <= 0
              && ByteKeys.compare(key, laterClears.get(i + 1)) < 0) {
            return true;
          }
        }
      }
      return false;
    }
  }

  private final MemoryStore store;
  private final Stats stats;
  private final MemoryBackend.Faults faults;
  private volatile int state = ACTIVE;
  // FoundationDB: once a read has failed with accessed_unreadable, the commit fails with it too.
  private volatile byte @Nullable [] unreadableRead;

  // Guarded by this (reads may run on several threads).
  private volatile MemoryStore.@Nullable ReadEpoch epoch;
  volatile long readVersion = -1;
  volatile long readNanos;
  private @Nullable ArrayList<byte[]> readConflicts;
  private long readConflictBytes;

  // Single-threaded by contract; read by the store under its lock during commit.
  @Nullable TreeMap<byte[], Op> writes;
  @Nullable TreeMap<byte[], byte[]> clears;
  @Nullable ArrayList<StampedKey> stampedKeys;
  @Nullable ArrayList<MemoryStore.Watch> watches;
  private @Nullable ArrayList<byte[]> writeConflicts;
  private @Nullable CompletableFuture<byte[]> versionstamp;
  private long writeBytes;

  private final ReadTransaction snapshotView = new SnapshotView();

  private final UUID runId;
  private final int attempt;
  private final int retriedAfter;

  MemoryTransaction(
      MemoryStore store,
      Stats stats,
      MemoryBackend.Faults faults,
      UUID runId,
      int attempt,
      int retriedAfter) {
    this.retriedAfter = retriedAfter;
    this.runId = runId;
    this.attempt = attempt;
    this.store = store;
    this.stats = stats;
    this.faults = faults;
  }

  // ---------------------------------------------------------------- state

  private void checkUsable() {
    int s = state;
    if (s != ACTIVE) {
      throw stateError(s);
    }
  }

  private static BackendException stateError(int s) {
    if (s == CANCELLED) {
      return new BackendException(
          BackendException.TRANSACTION_CANCELLED, "attempt was reset or abandoned");
    }
    return new BackendException(BackendException.USED_DURING_COMMIT, "attempt already committed");
  }

  private static BackendException error(int code, String detail) {
    return new BackendException(code, detail);
  }

  private static boolean isSystemKey(byte[] key) {
    return key.length > 0 && key[0] == (byte) 0xff;
  }

  /** True for range bounds beyond {@code \xff}; {@code \xff} itself is a legal end. */
  private static boolean isBeyondSystemBound(byte[] bound) {
    return bound.length > 1 && bound[0] == (byte) 0xff;
  }

  private static void checkWritableKey(byte[] key) {
    if (isSystemKey(key)) {
      throw error(BackendException.KEY_OUTSIDE_LEGAL_RANGE, "key=" + ByteKeys.printable(key));
    }
    if (key.length > KEY_SIZE_LIMIT) {
      throw error(BackendException.KEY_TOO_LARGE, "keyLength=" + key.length);
    }
  }

  private static void checkValue(int length) {
    if (length > VALUE_SIZE_LIMIT) {
      throw error(BackendException.VALUE_TOO_LARGE, "valueLength=" + length);
    }
  }

  // ---------------------------------------------------------------- read version

  @Override
  public long getReadVersion() {
    checkUsable();
    synchronized (this) {
      if (readVersion < 0) {
        acquireReadVersion(store.nanoTime());
      }
      return readVersion;
    }
  }

  private void acquireReadVersion(long now) {
    MemoryStore.ReadEpoch e = store.acquireEpoch(now);
    epoch = e;
    readNanos = now;
    readVersion = e.version;
  }

  /** The epoch of a read that reaches storage, acquired if this is the first read. */
  private MemoryStore.ReadEpoch readEpoch() {
    MemoryStore.ReadEpoch e = epoch;
    if (e != null) {
      return e;
    }
    synchronized (this) {
      if (epoch == null) {
        if (readVersion >= 0) {
          throw error(BackendException.TRANSACTION_CANCELLED, "attempt ended");
        }
        acquireReadVersion(store.nanoTime());
      }
      return epoch;
    }
  }

  /**
   * Fails a storage read that finished more than five seconds after the read version. Checked after
   * reading, not before: the store may collect a version once its readers are that old, and a
   * reader that observed such a collection is then guaranteed to see the age and fail.
   */
  private void checkAge() {
    long age = store.nanoTime() - readNanos;
    if (age > MemoryStore.MAX_LIFE_NANOS) {
      throw error(
          BackendException.TRANSACTION_TOO_OLD,
          "readVersion=" + readVersion + " ageMillis=" + age / 1_000_000);
    }
  }

  private synchronized void releaseEpoch() {
    if (epoch != null) {
      epoch.releaseReader();
      epoch = null;
    }
  }

  // ---------------------------------------------------------------- reads

  @Override
  public ReadTransaction snapshot() {
    return snapshotView;
  }

  @Override
  public boolean isSnapshot() {
    return false;
  }

  @Override
  public byte @Nullable [] get(byte[] key) {
    byte[] v = read(key, false);
    return v == null ? null : v.clone();
  }

  @Override
  public CompletableFuture<byte @Nullable []> getAsync(byte[] key) {
    return getAsync(key, false);
  }

  private CompletableFuture<byte @Nullable []> getAsync(byte[] key, boolean snapshot) {
    try {
      byte[] v = read(key, snapshot);
      return CompletableFuture.completedFuture(v == null ? null : v.clone());
    } catch (BackendException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  @Override
  public List<KeyValue> getRange(byte[] begin, byte[] end, int limit, boolean reverse) {
    return range(begin, end, limit, reverse, false);
  }

  @Override
  public List<KeyValue> getRange(byte[] begin, byte[] end) {
    return range(begin, end, UNLIMITED, false, false);
  }

  @Override
  public CompletableFuture<List<KeyValue>> getRangeAsync(
      byte[] begin, byte[] end, int limit, boolean reverse) {
    return getRangeAsync(begin, end, limit, reverse, false);
  }

  private CompletableFuture<List<KeyValue>> getRangeAsync(
      byte[] begin, byte[] end, int limit, boolean reverse, boolean snapshot) {
    if (limit < 0) {
      throw new IllegalArgumentException("limit must not be negative: " + limit);
    }
    try {
      return CompletableFuture.completedFuture(range(begin, end, limit, reverse, snapshot));
    } catch (BackendException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /** Reads one key with read-your-writes; the returned array is internal (copy before handing). */
  private byte @Nullable [] read(byte[] key, boolean snapshot) {
    Objects.requireNonNull(key, "key");
    checkUsable();
    if (key.length > MAX_READ_KEY_SIZE) {
      return null;
    }
    if (isSystemKey(key)) {
      throw error(BackendException.KEY_OUTSIDE_LEGAL_RANGE, "key=" + ByteKeys.printable(key));
    }
    if (stampedKeys != null) {
      for (StampedKey s : stampedKeys) {
        if (ByteKeys.compare(s.lo, key) <= 0 && ByteKeys.compare(key, s.hi) < 0) {
          throw unreadable(key);
        }
      }
    }
    TreeMap<byte[], Op> w = writes;
    Op op = w == null ? null : w.get(key);
    if (op != null) {
      if (op.unreadable || op.base == Op.STAMPED) {
        throw unreadable(key);
      }
      if (op.base == Op.VALUE) {
        return op.value;
      }
      byte[] stored = storageGet(key);
      if (!snapshot) {
        addReadConflictUnchecked(key, ByteKeys.keyAfter(key));
      }
      return addLittleEndian(stored, op.delta);
    }
    if (clears != null && covers(clears, key)) {
      return null;
    }
    byte[] v = storageGet(key);
    if (!snapshot) {
      addReadConflictUnchecked(key, ByteKeys.keyAfter(key));
    }
    return v;
  }

  private BackendException unreadable(byte[] key) {
    BackendException e =
        error(
            BackendException.ACCESSED_UNREADABLE,
            "key="
                + ByteKeys.printable(key)
                + " was written with a versionstamp by this transaction");
    unreadableRead = key;
    return e;
  }

  private byte @Nullable [] storageGet(byte[] key) {
    byte[] v = store.get(key, readEpoch());
    checkAge();
    stats.keysRead.increment();
    stats.bytesRead.add(v == null ? key.length : key.length + v.length);
    return v;
  }

  private List<KeyValue> range(
      byte[] begin, byte[] end, int limit, boolean reverse, boolean snapshot) {
    Objects.requireNonNull(begin, "begin");
    Objects.requireNonNull(end, "end");
    if (limit < 0) {
      throw new IllegalArgumentException("limit must not be negative: " + limit);
    }
    checkUsable();
    if (isBeyondSystemBound(begin) || isBeyondSystemBound(end)) {
      throw error(
          BackendException.KEY_OUTSIDE_LEGAL_RANGE,
          "begin=" + ByteKeys.printable(begin) + " end=" + ByteKeys.printable(end));
    }
    if (ByteKeys.compare(begin, end) >= 0) {
      return new ArrayList<>(0);
    }
    MemoryStore.ReadEpoch readAt = readEpoch();
    stats.rangesRead.increment();

    long[] counts = new long[2];
    ArrayList<KeyValue> out = merge(begin, end, limit, reverse, readAt, false, counts);
    if (out == null) {
      // The heap's chains stopped covering the range while it was read: read it again with the
      // storage's view.
      counts[0] = 0;
      counts[1] = 0;
      out = merge(begin, end, limit, reverse, readAt, true, counts);
    }
    long rows = counts[0];
    long bytes = counts[1];
    checkAge();
    stats.rowsRead.add(rows);
    stats.bytesRead.add(bytes);

    byte[] readBegin = begin;
    byte[] readEnd = end;
    if (limit != UNLIMITED && out.size() == limit) {
      // FoundationDB reports "more" whenever the limit is reached: only the part read conflicts.
      byte[] last = out.get(out.size() - 1).key();
      if (reverse) {
        readBegin = last;
      } else {
        readEnd = ByteKeys.keyAfter(last);
      }
    }
    if (stampedKeys != null) {
      for (StampedKey s : stampedKeys) {
        if (ByteKeys.compare(s.lo, readEnd) < 0 && ByteKeys.compare(readBegin, s.hi) < 0) {
          throw unreadable(s.lo);
        }
      }
    }
    if (!snapshot) {
      addReadConflictExcludingWrites(readBegin, readEnd);
    }
    return out;
  }

  /**
   * Merges the stored keys of {@code [begin, end)} at the read epoch with this attempt's writes;
   * null if the read relied on the heap covering the range and that stopped being so meanwhile.
   * Adds rows and bytes read from the store to {@code counts}.
   */
  private @Nullable ArrayList<KeyValue> merge(
      byte[] begin,
      byte[] end,
      int limit,
      boolean reverse,
      MemoryStore.ReadEpoch readAt,
      boolean withStorage,
      long[] counts) {
    NavigableMap<byte[], Op> own = null;
    if (writes != null) {
      own = writes.subMap(begin, true, end, false);
      if (own.isEmpty()) {
        own = null;
      } else if (reverse) {
        own = own.descendingMap();
      }
    }
    Iterator<Map.Entry<byte[], Op>> wi =
        own == null ? Collections.emptyIterator() : own.entrySet().iterator();
    TreeMap<byte[], byte[]> cleared = clears;

    ArrayList<KeyValue> out = new ArrayList<>(limit > 0 ? Math.min(limit, 64) : 16);
    long rows = 0;
    long bytes = 0;
    byte[] sk = null;
    byte[] sv = null;
    boolean advanceStored = true;
    Map.Entry<byte[], Op> we = wi.hasNext() ? wi.next() : null;
    try (MemoryStore.RangeCursor si = store.range(begin, end, reverse, readAt, withStorage)) {
      while (limit == UNLIMITED || out.size() < limit) {
        if (advanceStored) {
          advanceStored = false;
          sk = null;
          for (MemoryStore.Entry e = si.next(); e != null; e = si.next()) {
            byte[] k = e.key();
            if ((own != null && own.containsKey(k)) || (cleared != null && covers(cleared, k))) {
              continue;
            }
            byte[] v = e.value();
            sk = k;
            sv = v;
            rows++;
            bytes += k.length + v.length;
            break;
          }
        }
        if (sk == null && we == null) {
          break;
        }
        boolean takeStored;
        if (we == null) {
          takeStored = true;
        } else if (sk == null) {
          takeStored = false;
        } else {
          int c = ByteKeys.compare(sk, we.getKey());
          takeStored = reverse ? c > 0 : c < 0;
        }
        if (takeStored) {
          out.add(new KeyValue(sk.clone(), sv.clone()));
          advanceStored = true;
        } else {
          byte[] k = we.getKey();
          Op op = we.getValue();
          if (op.unreadable || op.base == Op.STAMPED) {
            throw unreadable(k);
          }
          if (op.base == Op.VALUE) {
            if (op.value != null) {
              out.add(new KeyValue(k.clone(), op.value.clone()));
            }
          } else {
            byte[] v = store.get(k, readAt);
            if (v != null) {
              rows++;
              bytes += k.length + v.length;
            }
            out.add(new KeyValue(k.clone(), addLittleEndian(v, op.delta)));
          }
          we = wi.hasNext() ? wi.next() : null;
        }
      }
      if (!si.valid()) {
        return null;
      }
    }
    counts[0] += rows;
    counts[1] += bytes;
    return out;
  }

  private static boolean covers(TreeMap<byte[], byte[]> ranges, byte[] key) {
    Map.Entry<byte[], byte[]> f = ranges.floorEntry(key);
    return f != null && ByteKeys.compare(key, f.getValue()) < 0;
  }

  // ---------------------------------------------------------------- conflict ranges

  private synchronized void addReadConflictUnchecked(byte[] begin, byte[] end) {
    if (readConflicts == null) {
      readConflicts = new ArrayList<>();
    }
    readConflicts.add(begin);
    readConflicts.add(end);
    readConflictBytes += begin.length + end.length;
  }

  /**
   * Adds {@code [begin, end)} minus the parts this attempt already wrote independently (sets,
   * clears, range clears, atomic ops on an own value); keys with pending plain atomic ops stay in.
   */
  private void addReadConflictExcludingWrites(byte[] begin, byte[] end) {
    TreeMap<byte[], byte[]> cl = clears;
    TreeMap<byte[], Op> w = writes;
    if (cl == null && w == null) {
      addReadConflictUnchecked(begin, end);
      return;
    }
    Iterator<Map.Entry<byte[], byte[]>> ci = Collections.emptyIterator();
    if (cl != null) {
      Map.Entry<byte[], byte[]> floor = cl.floorEntry(begin);
      byte[] from =
          floor != null && ByteKeys.compare(floor.getValue(), begin) > 0 ? floor.getKey() : begin;
      ci = cl.subMap(from, true, end, false).entrySet().iterator();
    }
    Iterator<Map.Entry<byte[], Op>> wi =
        w == null
            ? Collections.emptyIterator()
            : w.subMap(begin, true, end, false).entrySet().iterator();
    Map.Entry<byte[], byte[]> c = ci.hasNext() ? ci.next() : null;
    Map.Entry<byte[], Op> p = nextIndependent(wi);
    byte[] cursor = begin;
    while (c != null || p != null) {
      byte[] from;
      byte[] to;
      if (p == null || (c != null && ByteKeys.compare(c.getKey(), p.getKey()) <= 0)) {
        from = c.getKey();
        to = c.getValue();
        c = ci.hasNext() ? ci.next() : null;
      } else {
        from = p.getKey();
        to = ByteKeys.keyAfter(from);
        p = nextIndependent(wi);
      }
      if (ByteKeys.compare(from, cursor) > 0) {
        addReadConflictUnchecked(cursor, from);
      }
      if (ByteKeys.compare(to, cursor) > 0) {
        cursor = to;
      }
      if (ByteKeys.compare(cursor, end) >= 0) {
        return;
      }
    }
    addReadConflictUnchecked(cursor, end);
  }

  private static Map.@Nullable Entry<byte[], Op> nextIndependent(
      Iterator<Map.Entry<byte[], Op>> it) {
    while (it.hasNext()) {
      Map.Entry<byte[], Op> e = it.next();
      if (e.getValue().independent()) {
        return e;
      }
    }
    return null;
  }

  @Override
  public void addReadConflictKey(byte[] key) {
    checkUsable();
    if (isSystemKey(key)) {
      throw error(BackendException.KEY_OUTSIDE_LEGAL_RANGE, "key=" + ByteKeys.printable(key));
    }
    addReadConflictExcludingWrites(key, ByteKeys.keyAfter(key));
  }

  @Override
  public void addReadConflictRange(byte[] begin, byte[] end) {
    checkUsable();
    checkRange(begin, end);
    if (ByteKeys.compare(begin, end) < 0) {
      addReadConflictExcludingWrites(begin, end);
    }
  }

  @Override
  public void addWriteConflictKey(byte[] key) {
    checkUsable();
    if (isSystemKey(key)) {
      throw error(BackendException.KEY_OUTSIDE_LEGAL_RANGE, "key=" + ByteKeys.printable(key));
    }
    addWriteConflict(key, ByteKeys.keyAfter(key));
  }

  @Override
  public void addWriteConflictRange(byte[] begin, byte[] end) {
    checkUsable();
    checkRange(begin, end);
    if (ByteKeys.compare(begin, end) < 0) {
      addWriteConflict(begin, end);
    }
  }

  private void addWriteConflict(byte[] begin, byte[] end) {
    if (writeConflicts == null) {
      writeConflicts = new ArrayList<>();
    }
    writeConflicts.add(begin);
    writeConflicts.add(end);
    writeBytes += begin.length + end.length;
  }

  private static void checkRange(byte[] begin, byte[] end) {
    if (ByteKeys.compare(begin, end) > 0) {
      throw error(
          BackendException.INVERTED_RANGE,
          "begin=" + ByteKeys.printable(begin) + " end=" + ByteKeys.printable(end));
    }
    if (isBeyondSystemBound(end)) {
      throw error(BackendException.KEY_OUTSIDE_LEGAL_RANGE, "end=" + ByteKeys.printable(end));
    }
  }

  // ---------------------------------------------------------------- writes

  private Op op(byte[] key) {
    TreeMap<byte[], Op> w = writes;
    if (w == null) {
      w = new TreeMap<>(ByteKeys.COMPARATOR);
      writes = w;
    }
    Op op = w.get(key);
    if (op == null) {
      op = new Op();
      w.put(key, op);
    }
    return op;
  }

  @Override
  public void set(byte[] key, byte[] value) {
    Objects.requireNonNull(value, "value");
    checkUsable();
    checkWritableKey(key);
    checkValue(value.length);
    if (watches != null) {
      triggerWatches(key, key, value, false);
    }
    Op op = op(key);
    op.base = Op.VALUE;
    op.value = value;
    op.hasDelta = false;
    op.delta = 0;
    writeBytes += 3L * key.length + 1 + value.length;
  }

  @Override
  public void clear(byte[] key) {
    checkUsable();
    if (isSystemKey(key)) {
      throw error(BackendException.KEY_OUTSIDE_LEGAL_RANGE, "key=" + ByteKeys.printable(key));
    }
    if (key.length > KEY_SIZE_LIMIT) {
      return; // FoundationDB: such a key cannot exist, so clearing it is a no-op
    }
    if (watches != null) {
      triggerWatches(key, key, null, false);
    }
    Op op = op(key);
    op.base = Op.VALUE;
    op.value = null;
    op.hasDelta = false;
    op.delta = 0;
    op.unreadable = false;
    writeBytes += 4L * key.length + 2;
  }

  @Override
  public void clearRange(byte[] begin, byte[] end) {
    checkUsable();
    checkRange(begin, end);
    if (ByteKeys.compare(begin, end) >= 0) {
      return;
    }
    if (watches != null) {
      triggerWatches(begin, end, null, false);
    }
    if (writes != null) {
      writes.subMap(begin, true, end, false).clear();
    }
    if (stampedKeys != null) {
      for (StampedKey s : stampedKeys) {
        if (ByteKeys.compare(s.lo, end) < 0 && ByteKeys.compare(begin, s.hi) < 0) {
          if (s.laterClears == null) {
            s.laterClears = new ArrayList<>(2);
          }
          s.laterClears.add(begin);
          s.laterClears.add(end);
        }
      }
    }
    TreeMap<byte[], byte[]> cl = clears;
    if (cl == null) {
      cl = new TreeMap<>(ByteKeys.COMPARATOR);
      clears = cl;
    }
    byte[] b = begin;
    byte[] e = end;
    Map.Entry<byte[], byte[]> floor = cl.floorEntry(b);
    if (floor != null && ByteKeys.compare(floor.getValue(), b) >= 0) {
      b = floor.getKey();
      if (ByteKeys.compare(floor.getValue(), e) > 0) {
        e = floor.getValue();
      }
    }
    for (Iterator<Map.Entry<byte[], byte[]>> it = cl.subMap(b, true, e, true).entrySet().iterator();
        it.hasNext(); ) {
      Map.Entry<byte[], byte[]> x = it.next();
      if (ByteKeys.compare(x.getValue(), e) > 0) {
        e = x.getValue();
      }
      it.remove();
    }
    cl.put(b, e);
    writeBytes += 2L * (begin.length + end.length);
  }

  @Override
  public void add(byte[] key, long delta) {
    checkUsable();
    checkWritableKey(key);
    if (watches != null) {
      triggerWatches(key, key, null, true);
    }
    TreeMap<byte[], Op> w = writes;
    Op op = w == null ? null : w.get(key);
    if (op == null) {
      op = op(key);
      if (clears != null && covers(clears, key)) {
        op.base = Op.VALUE;
        op.value = addLittleEndian(null, delta);
      } else {
        op.base = Op.DB;
        op.hasDelta = true;
        op.delta = delta;
      }
    } else if (op.base == Op.VALUE) {
      op.value = addLittleEndian(op.value, delta);
    } else {
      // Consecutive adds on an unknown value merge into one (as FoundationDB's client does).
      op.delta = op.hasDelta ? op.delta + delta : delta;
      op.hasDelta = true;
    }
    writeBytes += 3L * key.length + 9;
  }

  /**
   * FoundationDB's {@code ADD} with an 8-byte little-endian operand: an absent or empty value
   * yields the operand; otherwise the value is truncated or zero-extended to 8 bytes and added, the
   * carry out of the eighth byte dropped.
   */
  static byte[] addLittleEndian(byte @Nullable [] existing, long delta) {
    long sum = delta;
    if (existing != null) {
      long cur = 0;
      int n = Math.min(8, existing.length);
      for (int i = 0; i < n; i++) {
        cur |= (existing[i] & 0xffL) << (8 * i);
      }
      sum += cur;
    }
    byte[] out = new byte[8];
    for (int i = 0; i < 8; i++) {
      out[i] = (byte) (sum >>> (8 * i));
    }
    return out;
  }

  @Override
  public void setVersionstampedKey(byte[] prefix, Tuple key, byte[] value) {
    Objects.requireNonNull(prefix, "prefix");
    Objects.requireNonNull(value, "value");
    checkUsable();
    int[] at = new int[1];
    byte[] top = Stamps.packWithMaxStamp(prefix, key, at);
    int offset = at[0];
    byte[] bottom = top.clone();
    Arrays.fill(bottom, offset, offset + 10, (byte) 0);
    checkWritableKey(bottom);
    checkValue(value.length);
    // FoundationDB's unreadable range: the key with the stamp set to (read version if known, else
    // 0; order 0) up to the key with the stamp set to FF×10, inclusive.
    long rv = readVersion;
    if (rv > 0) {
      System.arraycopy(Stamps.transactionStamp(rv, 0), 0, bottom, offset, 10);
    }
    if (stampedKeys == null) {
      stampedKeys = new ArrayList<>(2);
    }
    stampedKeys.add(new StampedKey(top, offset, value, bottom, ByteKeys.keyAfter(top)));
    writeBytes += 3L * top.length + 5 + value.length;
  }

  @Override
  public void setVersionstampedValue(byte[] key, byte[] valuePrefix) {
    Objects.requireNonNull(valuePrefix, "valuePrefix");
    checkUsable();
    checkWritableKey(key);
    checkValue(valuePrefix.length + 10);
    if (watches != null) {
      triggerWatches(key, key, null, true);
    }
    Op op = op(key);
    op.base = Op.STAMPED;
    op.value = valuePrefix;
    op.hasDelta = false;
    op.delta = 0;
    op.unreadable = true;
    writeBytes += 3L * key.length + 15 + valuePrefix.length;
  }

  /**
   * Marks this attempt's watches on {@code key} (or, for a range clear, in {@code [key, end)})
   * whose value this write changes; any atomic operation counts as a change, as in FoundationDB's
   * RYW {@code triggerWatches}. They fire when the attempt commits.
   */
  private synchronized void triggerWatches(
      byte[] key, byte[] end, byte @Nullable [] value, boolean always) {
    boolean range = key != end;
    for (MemoryStore.Watch w : watches) {
      boolean hit =
          range
              ? ByteKeys.compare(key, w.key) <= 0 && ByteKeys.compare(w.key, end) < 0
              : Arrays.equals(key, w.key);
      if (!hit) {
        continue;
      }
      // Until a write triggers the watch, the attempt's value of the key is the one it saw.
      if (always || !Arrays.equals(w.seen, value)) {
        w.triggered = true;
      }
    }
  }

  // ---------------------------------------------------------------- futures

  @Override
  public CompletableFuture<byte[]> getVersionstamp() {
    int s = state;
    if (s != ACTIVE) {
      return CompletableFuture.failedFuture(stateError(s));
    }
    synchronized (this) {
      if (versionstamp == null) {
        versionstamp = new CompletableFuture<>();
      }
      return versionstamp;
    }
  }

  @Override
  public CompletableFuture<Void> watch(byte[] key) {
    Objects.requireNonNull(key, "key");
    int s = state;
    if (s != ACTIVE) {
      return CompletableFuture.failedFuture(stateError(s));
    }
    byte[] seen;
    byte[] unreadableBefore = unreadableRead;
    try {
      checkWritableKey(key);
      seen = read(key, false);
    } catch (BackendException e) {
      unreadableRead = unreadableBefore; // FoundationDB fails the watch, not the transaction
      return CompletableFuture.failedFuture(e);
    }
    MemoryStore.Watch w = store.newWatch(key, seen);
    if (w == null) {
      return CompletableFuture.failedFuture(
          error(BackendException.TOO_MANY_WATCHES, "key=" + ByteKeys.printable(key)));
    }
    synchronized (this) {
      if (watches == null) {
        watches = new ArrayList<>(2);
      }
      watches.add(w);
    }
    return w.future;
  }

  // ---------------------------------------------------------------- size

  @Override
  public UUID runId() {
    return runId;
  }

  @Override
  public int attempt() {
    return attempt;
  }

  @Override
  public int retriedAfter() {
    return retriedAfter;
  }

  @Override
  public long getApproximateSize() {
    checkUsable();
    return exactSize();
  }

  /** FoundationDB's transaction size on the coalesced request (NAPI Transaction::getSize). */
  private long exactSize() {
    long n = 0;
    if (writes != null) {
      for (Map.Entry<byte[], Op> e : writes.entrySet()) {
        int k = e.getKey().length;
        Op op = e.getValue();
        if (op.base == Op.VALUE) {
          n += op.value == null ? 2L * k + 1 : (long) k + op.value.length;
        } else if (op.base == Op.STAMPED) {
          n += (long) k + op.value.length + 14 + (op.hasDelta ? k + 8 : 0);
        } else {
          n += k + 8;
        }
      }
    }
    if (clears != null) {
      for (Map.Entry<byte[], byte[]> e : clears.entrySet()) {
        n += e.getKey().length + e.getValue().length;
      }
    }
    if (stampedKeys != null) {
      for (StampedKey s : stampedKeys) {
        n += s.hi.length - 1 + 4 + s.value.length;
      }
    }
    return n + mergedReads().byteSize() + writeRanges().build().byteSize();
  }

  private synchronized KeyRanges mergedReads() {
    ArrayList<byte[]> rc = readConflicts;
    if (rc == null) {
      return KeyRanges.EMPTY;
    }
    KeyRanges.Builder b = new KeyRanges.Builder();
    for (int i = 0; i < rc.size(); i += 2) {
      b.add(rc.get(i), rc.get(i + 1));
    }
    return b.build();
  }

  /** Write-conflict ranges known before commit: every mutated key and range, explicit ranges. */
  private KeyRanges.Builder writeRanges() {
    KeyRanges.Builder b = new KeyRanges.Builder();
    if (writes != null) {
      for (byte[] k : writes.keySet()) {
        b.addKey(k);
      }
    }
    if (clears != null) {
      for (Map.Entry<byte[], byte[]> e : clears.entrySet()) {
        b.add(e.getKey(), e.getValue());
      }
    }
    if (writeConflicts != null) {
      for (int i = 0; i < writeConflicts.size(); i += 2) {
        b.add(writeConflicts.get(i), writeConflicts.get(i + 1));
      }
    }
    return b;
  }

  // ---------------------------------------------------------------- commit

  private boolean isReadOnly() {
    return writes == null && clears == null && stampedKeys == null && writeConflicts == null;
  }

  /**
   * Commits this attempt, waiting out any injected commit latency on the calling thread.
   *
   * @throws BackendException the commit's error
   */
  void commit() {
    beginCommit();
    long latency = isReadOnly() ? 0 : faults.latencyNanos();
    if (latency > 0) {
      try {
        TimeUnit.NANOSECONDS.sleep(latency);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        BackendException be =
            new BackendException(
                BackendException.TRANSACTION_CANCELLED, "interrupted during commit", e);
        finishFailed(be);
        throw be;
      }
    }
    finishCommit();
  }

  /** Commits this attempt without blocking a thread for injected commit latency. */
  CompletableFuture<Void> commitAsync(Executor executor) {
    try {
      beginCommit();
    } catch (BackendException e) {
      return CompletableFuture.failedFuture(e);
    }
    long latency = isReadOnly() ? 0 : faults.latencyNanos();
    if (latency <= 0) {
      return finishCommitAsync();
    }
    return CompletableFuture.supplyAsync(
            this::finishCommitAsync,
            CompletableFuture.delayedExecutor(latency, TimeUnit.NANOSECONDS, executor))
        .thenCompose(f -> f);
  }

  /**
   * {@link #finishCommit} without waiting in this thread for a storage to make the commit durable:
   * the future completes once it is (resolution and application happen in this thread).
   */
  private CompletableFuture<Void> finishCommitAsync() {
    if (isReadOnly()) {
      try {
        finishCommit();
        return CompletableFuture.completedFuture(null);
      } catch (RuntimeException e) {
        return CompletableFuture.failedFuture(e);
      }
    }
    CompletableFuture<Long> version;
    try {
      checkCommittable();
      version = store.commitAsync(this, mergedReads(), writeRanges());
    } catch (BackendException e) {
      finishFailed(e);
      return CompletableFuture.failedFuture(e);
    } catch (RuntimeException e) {
      releaseEpoch();
      return CompletableFuture.failedFuture(e);
    }
    return version.handle(
        (v, failure) -> {
          try {
            if (failure != null) {
              Throwable cause = Futures.unwrap(failure);
              if (cause instanceof BackendException e) {
                finishFailed(e);
              }
              throw cause instanceof RuntimeException e ? e : new CompletionException(cause);
            }
            committed(v);
            return null;
          } finally {
            releaseEpoch();
          }
        });
  }

  private synchronized void beginCommit() {
    int s = state;
    if (s != ACTIVE) {
      throw stateError(s);
    }
    state = COMMITTING;
  }

  private void finishCommit() {
    try {
      checkCommittable();
      if (isReadOnly()) {
        stats.readOnlyCommits.increment();
        if (versionstamp != null) {
          versionstamp.completeExceptionally(
              error(BackendException.NO_COMMIT_VERSION, "the transaction wrote nothing"));
        }
        if (watches != null) {
          store.armReadOnly(watches);
        }
        state = DONE;
      } else {
        committed(store.commit(this, mergedReads(), writeRanges()));
      }
    } catch (BackendException e) {
      finishFailed(e);
      throw e;
    } finally {
      releaseEpoch();
    }
  }

  /** Refuses a commit that read an unreadable key, or one that writes too much. */
  private void checkCommittable() {
    byte[] unreadable = unreadableRead;
    if (unreadable != null) {
      throw error(
          BackendException.ACCESSED_UNREADABLE,
          "the transaction read key="
              + ByteKeys.printable(unreadable)
              + ", which it had written with a versionstamp");
    }
    if (!isReadOnly()) {
      long raw = writeBytes + readConflictBytes;
      long size = raw <= TRANSACTION_SIZE_LIMIT ? raw : exactSize();
      if (size > TRANSACTION_SIZE_LIMIT) {
        throw error(BackendException.TRANSACTION_TOO_LARGE, "size=" + size);
      }
    }
  }

  /** A writing commit succeeded at {@code version}. */
  private void committed(long version) {
    stats.transactionsCommitted.increment();
    if (versionstamp != null) {
      versionstamp.complete(Stamps.transactionStamp(version, 0));
    }
    state = DONE;
  }

  private void finishFailed(BackendException e) {
    state = DONE;
    releaseEpoch();
    if (versionstamp != null) {
      versionstamp.completeExceptionally(
          new BackendException(
              BackendException.TRANSACTION_INVALID_VERSION, "commit failed: " + e.getMessage(), e));
    }
    failWatches(e);
  }

  /** Ends an attempt that will not commit: its watches and versionstamp fail with 1025. */
  void abandon() {
    synchronized (this) {
      if (state != ACTIVE) {
        return;
      }
      state = CANCELLED;
    }
    releaseEpoch();
    BackendException e =
        error(BackendException.TRANSACTION_CANCELLED, "attempt ended without commit");
    if (versionstamp != null) {
      versionstamp.completeExceptionally(e);
    }
    failWatches(e);
  }

  private void failWatches(BackendException e) {
    ArrayList<MemoryStore.Watch> list;
    synchronized (this) {
      list = watches;
    }
    if (list != null) {
      for (MemoryStore.Watch w : list) {
        w.future.completeExceptionally(e);
      }
    }
  }

  @Override
  public String toString() {
    return "MemoryTransaction{readVersion=" + readVersion + ", state=" + state + "}";
  }

  /** The snapshot view: same attempt and read-your-writes, no read-conflict ranges. */
  private final class SnapshotView implements ReadTransaction {
    @Override
    public CompletableFuture<byte @Nullable []> getAsync(byte[] key) {
      return MemoryTransaction.this.getAsync(key, true);
    }

    @Override
    public byte @Nullable [] get(byte[] key) {
      byte[] v = read(key, true);
      return v == null ? null : v.clone();
    }

    @Override
    public CompletableFuture<List<KeyValue>> getRangeAsync(
        byte[] begin, byte[] end, int limit, boolean reverse) {
      return MemoryTransaction.this.getRangeAsync(begin, end, limit, reverse, true);
    }

    @Override
    public List<KeyValue> getRange(byte[] begin, byte[] end, int limit, boolean reverse) {
      return range(begin, end, limit, reverse, true);
    }

    @Override
    public List<KeyValue> getRange(byte[] begin, byte[] end) {
      return range(begin, end, UNLIMITED, false, true);
    }

    @Override
    public long getReadVersion() {
      return MemoryTransaction.this.getReadVersion();
    }

    @Override
    public boolean isSnapshot() {
      return true;
    }

    @Override
    public String toString() {
      return "snapshot of " + MemoryTransaction.this;
    }
  }
}
