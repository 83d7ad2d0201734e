package io.dgen.backend.memory;

import io.dgen.backend.ByteKeys;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.Map;
import java.util.TreeMap;

/**
 * The write-conflict ranges of recent commits, indexed so that a commit's conflict check costs a
 * lookup per read range rather than a pass over every commit since its read version. Guarded by the
 * store's commit lock.
 *
 * <p>A commit conflicts if a commit with a version above its read version wrote a range that
 * intersects one of its read ranges. Most written ranges are single keys ({@code [k, k + 0x00)}):
 * those go into a sorted map from key to the newest version that wrote it, which a point read
 * checks with one lookup and a range read by walking the written keys inside it. The other ranges
 * (range clears, explicit conflict ranges, coalesced neighbours) stay in a log of commits, checked
 * as before, newest first. Both forget what commits at or below the oldest version a live reader
 * may hold wrote ({@link #trim}), exactly as the log of whole commits did; so the answer is the
 * same as that log's, which {@code ConflictIndexTest} checks against a copy of it.
 */
final class ConflictIndex {

  private record Ranges(long version, KeyRanges writes) {}

  private record Points(long version, byte[][] keys) {}

  private final TreeMap<byte[], Long> points = new TreeMap<>(ByteKeys.COMPARATOR);
  private final ArrayDeque<Points> pointLog = new ArrayDeque<>();
  private final ArrayDeque<Ranges> rangeLog = new ArrayDeque<>();

  /** Whether a commit above {@code readVersion} wrote a range that intersects {@code reads}. */
  boolean conflicts(long readVersion, KeyRanges reads) {
    for (int i = 0; i < reads.size(); i++) {
      byte[] begin = reads.begin(i);
      byte[] end = reads.end(i);
      if (ByteKeys.isOneKey(begin, end)) {
        Long v = points.get(begin);
        if (v != null && v > readVersion) {
          return true;
        }
      } else {
        for (Long v : points.subMap(begin, true, end, false).values()) {
          if (v > readVersion) {
            return true;
          }
        }
      }
    }
    Iterator<Ranges> it = rangeLog.descendingIterator();
    while (it.hasNext()) {
      Ranges c = it.next();
      if (c.version() <= readVersion) {
        return false;
      }
      if (reads.intersects(c.writes())) {
        return true;
      }
    }
    return false;
  }

  /** Records the write-conflict ranges of the commit at {@code version} (versions increase). */
  void add(long version, KeyRanges writes) {
    ArrayList<byte[]> keys = null;
    KeyRanges.Builder wide = null;
    for (int i = 0; i < writes.size(); i++) {
      byte[] begin = writes.begin(i);
      byte[] end = writes.end(i);
      if (ByteKeys.isOneKey(begin, end)) {
        points.put(begin, version);
        if (keys == null) {
          keys = new ArrayList<>(writes.size());
        }
        keys.add(begin);
      } else {
        if (wide == null) {
          wide = new KeyRanges.Builder();
        }
        wide.add(begin, end);
      }
    }
    if (keys != null) {
      pointLog.addLast(new Points(version, keys.toArray(new byte[0][])));
    }
    if (wide != null) {
      rangeLog.addLast(new Ranges(version, wide.build()));
    }
  }

  /** Forgets the writes of commits at or below {@code m}: no live reader's version is under it. */
  void trim(long m) {
    while (!rangeLog.isEmpty() && rangeLog.peekFirst().version() <= m) {
      rangeLog.pollFirst();
    }
    while (!pointLog.isEmpty() && pointLog.peekFirst().version() <= m) {
      Points p = pointLog.pollFirst();
      for (byte[] key : p.keys()) {
        // A later commit that wrote the key again keeps it, with its own version.
        points.remove(key, p.version());
      }
    }
  }

  /** Number of commits' entries remembered; one with both kinds of range counts twice (tests). */
  int size() {
    return pointLog.size() + rangeLog.size();
  }

  /** Number of single keys remembered (for tests). */
  int keys() {
    return points.size();
  }

  @Override
  public String toString() {
    StringBuilder b = new StringBuilder("ConflictIndex{keys=").append(points.size());
    for (Map.Entry<byte[], Long> e : points.entrySet()) {
      b.append(' ').append(ByteKeys.printable(e.getKey())).append('@').append(e.getValue());
      if (b.length() > 200) {
        break;
      }
    }
    return b.append(", ranges=").append(rangeLog.size()).append('}').toString();
  }
}
