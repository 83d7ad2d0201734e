package io.dgen.backend.memory;

import io.dgen.backend.ByteKeys;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;

/**
 * An immutable set of half-open key ranges, sorted and coalesced (no two overlap or touch), as the
 * conflict resolver stores a transaction's read or write set.
 */
final class KeyRanges {

  static final KeyRanges EMPTY = new KeyRanges(new byte[0][], new byte[0][], 0);

  private final byte[][] begins;
  private final byte[][] ends;
  private final int size;

  private KeyRanges(byte[][] begins, byte[][] ends, int size) {
    this.begins = begins;
    this.ends = ends;
    this.size = size;
  }

  int size() {
    return size;
  }

  boolean isEmpty() {
    return size == 0;
  }

  byte[] begin(int i) {
    return begins[i];
  }

  byte[] end(int i) {
    return ends[i];
  }

  /** Σ (|begin| + |end|): what FoundationDB's size limit charges for these ranges. */
  long byteSize() {
    long n = 0;
    for (int i = 0; i < size; i++) {
      n += begins[i].length + ends[i].length;
    }
    return n;
  }

  boolean intersects(KeyRanges other) {
    int i = 0;
    int j = 0;
    while (i < size && j < other.size) {
      if (ByteKeys.compare(ends[i], other.begins[j]) <= 0) {
        i++;
      } else if (ByteKeys.compare(other.ends[j], begins[i]) <= 0) {
        j++;
      } else {
        return true;
      }
    }
    return false;
  }

  boolean intersects(byte[] begin, byte[] end) {
    // first range whose end is after begin
    int lo = 0;
    int hi = size;
    while (lo < hi) {
      int mid = (lo + hi) >>> 1;
      if (ByteKeys.compare(ends[mid], begin) <= 0) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    return lo < size && ByteKeys.compare(begins[lo], end) < 0;
  }

  /** Collects ranges in any order; {@link #build} sorts and coalesces them. */
  static final class Builder {
    private final ArrayList<byte[][]> ranges = new ArrayList<>();

    /** Adds {@code [begin, end)}; empty or inverted ranges are ignored. */
    Builder add(byte[] begin, byte[] end) {
      if (ByteKeys.compare(begin, end) < 0) {
        ranges.add(new byte[][] {begin, end});
      }
      return this;
    }

    Builder addKey(byte[] key) {
      ranges.add(new byte[][] {key, ByteKeys.keyAfter(key)});
      return this;
    }

    Builder addAll(KeyRanges other) {
      for (int i = 0; i < other.size; i++) {
        ranges.add(new byte[][] {other.begins[i], other.ends[i]});
      }
      return this;
    }

    boolean isEmpty() {
      return ranges.isEmpty();
    }

    KeyRanges build() {
      int n = ranges.size();
      if (n == 0) {
        return EMPTY;
      }
      byte[][][] sorted = ranges.toArray(new byte[n][][]);
      if (n > 1) {
        Arrays.sort(sorted, Comparator.comparing(r -> r[0], ByteKeys.COMPARATOR));
      }
      byte[][] begins = new byte[n][];
      byte[][] ends = new byte[n][];
      int size = 0;
      for (byte[][] r : sorted) {
        if (size > 0 && ByteKeys.compare(r[0], ends[size - 1]) <= 0) {
          if (ByteKeys.compare(r[1], ends[size - 1]) > 0) {
            ends[size - 1] = r[1];
          }
        } else {
          begins[size] = r[0];
          ends[size] = r[1];
          size++;
        }
      }
      return new KeyRanges(begins, ends, size);
    }
  }
}
