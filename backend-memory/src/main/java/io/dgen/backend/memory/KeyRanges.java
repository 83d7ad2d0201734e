package io.dgen.backend.memory;

import io.dgen.backend.ByteKeys;
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
    if (size == 0
        || other.size == 0
        || ByteKeys.compare(ends[size - 1], other.begins[0]) <= 0
        || ByteKeys.compare(other.ends[other.size - 1], begins[0]) <= 0) {
      return false; // the sets lie apart: most pairs of transactions touch different servers
    }
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

  /** Collects ranges in any order; {@link #build} sorts and coalesces them. */
  static final class Builder {
    private byte[][] begins = new byte[4][];
    private byte[][] ends = new byte[4][];
    private int size;
    private boolean sorted = true;

    /** Adds {@code [begin, end)}; empty or inverted ranges are ignored. */
    Builder add(byte[] begin, byte[] end) {
      if (ByteKeys.compare(begin, end) < 0) {
        append(begin, end);
      }
      return this;
    }

    Builder addKey(byte[] key) {
      append(key, ByteKeys.keyAfter(key));
      return this;
    }

    private void append(byte[] begin, byte[] end) {
      if (size == begins.length) {
        begins = Arrays.copyOf(begins, size * 2);
        ends = Arrays.copyOf(ends, size * 2);
      }
      if (sorted && size > 0 && ByteKeys.compare(begins[size - 1], begin) > 0) {
        sorted = false;
      }
      begins[size] = begin;
      ends[size] = end;
      size++;
    }

    KeyRanges build() {
      int n = size;
      if (n == 0) {
        return EMPTY;
      }
      byte[][] inBegins = begins;
      byte[][] inEnds = ends;
      if (!sorted) {
        byte[][][] pairs = new byte[n][][];
        for (int i = 0; i < n; i++) {
          pairs[i] = new byte[][] {begins[i], ends[i]};
        }
        Arrays.sort(pairs, Comparator.comparing(r -> r[0], ByteKeys.COMPARATOR));
        inBegins = new byte[n][];
        inEnds = new byte[n][];
        for (int i = 0; i < n; i++) {
          inBegins[i] = pairs[i][0];
          inEnds[i] = pairs[i][1];
        }
      }
      byte[][] outBegins = new byte[n][];
      byte[][] outEnds = new byte[n][];
      int m = 0;
      for (int i = 0; i < n; i++) {
        if (m > 0 && ByteKeys.compare(inBegins[i], outEnds[m - 1]) <= 0) {
          if (ByteKeys.compare(inEnds[i], outEnds[m - 1]) > 0) {
            outEnds[m - 1] = inEnds[i];
          }
        } else {
          outBegins[m] = inBegins[i];
          outEnds[m] = inEnds[i];
          m++;
        }
      }
      return new KeyRanges(outBegins, outEnds, m);
    }
  }
}
