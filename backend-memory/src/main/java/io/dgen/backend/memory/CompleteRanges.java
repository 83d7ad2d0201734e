package io.dgen.backend.memory;

import io.dgen.backend.ByteKeys;
import java.util.ArrayList;
import java.util.Map;
import java.util.concurrent.ConcurrentSkipListMap;

/**
 * With a {@link PagedStorage}: the key ranges in which the engine's heap holds a chain for every
 * key that has a value at any version a reader may use. A read inside one needs nothing from the
 * storage: a key without a chain there has no value. This is what keeps reads of hot ranges (a
 * queue whose popped items left deletes in RocksDB, say) at the cost of the memory backend.
 *
 * <p>A range becomes complete when a read that covered it merged the storage's keys into the heap
 * ({@link MemoryStore}'s load); writes keep it complete (with a paged storage every write, a delete
 * included, leaves a chain). Evicting a chain that has a value drops the range that holds its key;
 * every such eviction, in a complete range or not, first increments {@link #generation}, so that a
 * reader who relied on a range, or a load that read the storage, can tell that the heap changed
 * under it and read again.
 *
 * <p>Changed under the engine's commit lock only; read without a lock.
 */
final class CompleteRanges {

  // begin -> end (exclusive); non-overlapping.
  private final ConcurrentSkipListMap<byte[], byte[]> ranges =
      new ConcurrentSkipListMap<>(ByteKeys.COMPARATOR);
  private volatile long generation;

  long generation() {
    return generation;
  }

  /** True if {@code [begin, end)} lies within one complete range. */
  boolean covers(byte[] begin, byte[] end) {
    Map.Entry<byte[], byte[]> f = ranges.floorEntry(begin);
    return f != null && ByteKeys.compare(end, f.getValue()) <= 0;
  }

  /** True if {@code key} lies within a complete range. */
  boolean covers(byte[] key) {
    Map.Entry<byte[], byte[]> f = ranges.floorEntry(key);
    return f != null && ByteKeys.compare(key, f.getValue()) < 0;
  }

  /** Marks {@code [begin, end)} complete, merged with the ranges it overlaps or touches. */
  void add(byte[] begin, byte[] end) {
    if (ByteKeys.compare(begin, end) >= 0) {
      return;
    }
    byte[] b = begin;
    byte[] e = end;
    Map.Entry<byte[], byte[]> before = ranges.floorEntry(begin);
    if (before != null && ByteKeys.compare(before.getValue(), begin) >= 0) {
      b = before.getKey();
      if (ByteKeys.compare(before.getValue(), e) > 0) {
        e = before.getValue();
      }
    }
    ArrayList<byte[]> merged = new ArrayList<>();
    for (Map.Entry<byte[], byte[]> r : ranges.subMap(b, true, e, true).entrySet()) {
      merged.add(r.getKey());
      if (ByteKeys.compare(r.getValue(), e) > 0) {
        e = r.getValue();
      }
    }
    // The wider range goes in first, so that a reader never sees part of it uncovered.
    ranges.put(b, e);
    for (byte[] k : merged) {
      if (!java.util.Arrays.equals(k, b)) {
        ranges.remove(k);
      }
    }
  }

  /**
   * Before a chain with a value leaves the heap: counts the eviction and drops the complete range
   * that holds {@code key}. The whole range goes, not only the key: splitting around each evicted
   * key would leave a range per key once many are written into a complete range and evicted.
   */
  void evicting(byte[] key) {
    generation++; // under the commit lock: a plain increment of the volatile is enough
    Map.Entry<byte[], byte[]> f = ranges.floorEntry(key);
    if (f != null && ByteKeys.compare(key, f.getValue()) < 0) {
      ranges.remove(f.getKey());
    }
  }

  /** Number of complete ranges (for tests). */
  int size() {
    return ranges.size();
  }
}
