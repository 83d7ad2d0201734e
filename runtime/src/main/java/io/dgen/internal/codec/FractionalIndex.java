package io.dgen.internal.codec;

import java.io.ByteArrayOutputStream;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * Fractional indexes: byte strings that order the items of a list and leave room between any two
 * neighbours, so that inserting or moving an item never renumbers the others.
 *
 * <p>An index is a fraction in (0, 1) written in base 255, one digit per byte, digit {@code d}
 * stored as byte {@code d + 1}. Bytes are therefore never {@code 0x00}, which the tuple layer would
 * escape, and tuple byte strings (ordered by unsigned bytes) sort exactly as the fractions do. An
 * index is never empty and never ends in digit 0 (byte {@code 0x01}), so there is always an index
 * below any given one.
 *
 * <p>{@link #between(byte[], byte[])} picks a short index: in the middle of the gap when both
 * neighbours exist, and the next index one step past the neighbour when inserting before the first
 * or after the last item, so that appending (or prepending) 254 items costs one byte of index
 * length rather than eight. Repeated insertions into one gap grow the index by about one byte per
 * eight insertions. The codec therefore rebalances a list (gives every item an evenly spaced index)
 * when an index it generates exceeds {@link #MAX_LENGTH} bytes.
 */
public final class FractionalIndex {

  /**
   * The longest index the codec keeps; a longer one triggers a rebalance of its list. 64 bytes lets
   * about 450 insertions land in one gap, or about 16,000 items be appended one by one, between
   * rebalances, while keeping item keys short.
   */
  public static final int MAX_LENGTH = 64;

  private static final int BASE = 255;
  private static final BigInteger BIG_BASE = BigInteger.valueOf(BASE);

  private FractionalIndex() {}

  /**
   * An index strictly between {@code lo} and {@code hi}.
   *
   * @param lo the lower neighbour, or null to insert before {@code hi} (at the front)
   * @param hi the upper neighbour, or null to insert after {@code lo} (at the end)
   * @return a new index
   * @throws IllegalArgumentException if {@code lo} does not sort before {@code hi} or either is not
   *     a valid index
   */
  public static byte[] between(byte @Nullable [] lo, byte @Nullable [] hi) {
    check(lo);
    check(hi);
    if (lo != null && hi != null && compare(lo, hi) >= 0) {
      throw new IllegalArgumentException(
          "fractional index bounds out of order: " + Arrays.toString(lo) + Arrays.toString(hi));
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    boolean hiBounded = hi != null;
    for (int i = 0; ; i++) {
      int a = lo != null && i < lo.length ? digit(lo[i]) : 0;
      int b = hiBounded ? digit(hi[i]) : BASE;
      if (b - a >= 2) {
        int c;
        if (hi == null) {
          c = lo == null ? BASE / 2 : a + 1; // appending: one step, room stays above
        } else if (lo == null) {
          c = b - 1; // prepending: one step, room stays below
        } else {
          c = (a + b) >>> 1;
        }
        out.write(c + 1);
        return out.toByteArray();
      }
      if (b - a == 1) {
        if (hiBounded && i + 1 < hi.length) {
          out.write(b + 1); // b alone is above lo and below hi, which continues past it
          return out.toByteArray();
        }
        out.write(a + 1);
        hiBounded = false; // any continuation of a stays below hi
      } else {
        out.write(a + 1); // a == b: a common digit
      }
    }
  }

  /**
   * {@code n} increasing indexes strictly between {@code lo} and {@code hi}, evenly spaced at the
   * shortest length that fits them.
   *
   * @param lo the lower neighbour, or null for none
   * @param hi the upper neighbour, or null for none
   * @param n how many, at least 0
   * @return the indexes in increasing order
   * @throws IllegalArgumentException if {@code lo} does not sort before {@code hi}
   */
  public static List<byte[]> between(byte @Nullable [] lo, byte @Nullable [] hi, int n) {
    if (n < 0) {
      throw new IllegalArgumentException("n must be at least 0, was " + n);
    }
    if (n == 0) {
      return List.of();
    }
    if (n == 1) {
      return List.of(between(lo, hi));
    }
    check(lo);
    check(hi);
    if (lo != null && hi != null && compare(lo, hi) >= 0) {
      throw new IllegalArgumentException("fractional index bounds out of order");
    }
    int length = Math.max(1, Math.max(lo == null ? 0 : lo.length, hi == null ? 0 : hi.length));
    BigInteger need = BigInteger.valueOf(n);
    BigInteger low;
    BigInteger high;
    while (true) {
      low = lo == null ? BigInteger.ZERO : value(lo, length);
      high = hi == null ? BIG_BASE.pow(length) : value(hi, length);
      if (high.subtract(low).subtract(BigInteger.ONE).compareTo(need) >= 0) {
        break;
      }
      length++;
    }
    BigInteger gap = high.subtract(low);
    BigInteger parts = BigInteger.valueOf(n + 1L);
    List<byte[]> out = new ArrayList<>(n);
    for (int i = 1; i <= n; i++) {
      out.add(digits(low.add(gap.multiply(BigInteger.valueOf(i)).divide(parts)), length));
    }
    return out;
  }

  /**
   * {@code n} evenly spaced indexes for a fresh list.
   *
   * @param n how many, at least 0
   * @return the indexes in increasing order
   */
  public static List<byte[]> spread(int n) {
    return between(null, null, n);
  }

  /**
   * Whether {@code index} is well formed: non-empty, no {@code 0x00} byte, not ending in {@code
   * 0x01}.
   *
   * @param index the bytes
   * @return true if valid
   */
  public static boolean isValid(byte[] index) {
    if (index.length == 0 || index[index.length - 1] == 1) {
      return false;
    }
    for (byte x : index) {
      if (x == 0) {
        return false;
      }
    }
    return true;
  }

  /**
   * Unsigned lexicographic comparison, the order of tuple byte strings.
   *
   * @param a an index
   * @param b an index
   * @return negative, zero or positive as {@code a} sorts before, with or after {@code b}
   */
  public static int compare(byte[] a, byte[] b) {
    return Arrays.compareUnsigned(a, b);
  }

  private static void check(byte @Nullable [] index) {
    if (index != null && !isValid(index)) {
      throw new IllegalArgumentException("not a fractional index: " + Arrays.toString(index));
    }
  }

  private static int digit(byte b) {
    return (b & 0xFF) - 1;
  }

  /** The index as an integer of {@code length} base-255 digits (missing digits are zeros). */
  private static BigInteger value(byte[] index, int length) {
    BigInteger v = BigInteger.ZERO;
    for (int i = 0; i < length; i++) {
      v = v.multiply(BIG_BASE).add(BigInteger.valueOf(i < index.length ? digit(index[i]) : 0));
    }
    return v;
  }

  /** {@code v} as {@code length} base-255 digits, trailing zero digits dropped. */
  private static byte[] digits(BigInteger v, int length) {
    byte[] out = new byte[length];
    for (int i = length - 1; i >= 0; i--) {
      BigInteger[] qr = v.divideAndRemainder(BIG_BASE);
      out[i] = (byte) (qr[1].intValue() + 1);
      v = qr[0];
    }
    int end = length;
    while (end > 1 && out[end - 1] == 1) {
      end--;
    }
    return end == length ? out : Arrays.copyOf(out, end);
  }
}
