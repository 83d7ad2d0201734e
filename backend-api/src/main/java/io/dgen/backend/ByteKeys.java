package io.dgen.backend;

import java.util.Arrays;
import java.util.Comparator;

/** Helpers for byte-string keys, ordered as FoundationDB orders them (unsigned, shorter first). */
public final class ByteKeys {

  /** Orders keys as FoundationDB does: unsigned lexicographic, a prefix before its extensions. */
  public static final Comparator<byte[]> COMPARATOR = Arrays::compareUnsigned;

  private ByteKeys() {}

  /**
   * Compares two keys as FoundationDB does.
   *
   * @return negative, zero or positive as {@code a} sorts before, equal to or after {@code b}
   */
  public static int compare(byte[] a, byte[] b) {
    return Arrays.compareUnsigned(a, b);
  }

  /** Returns the first key after {@code key}: {@code key + 0x00}. */
  public static byte[] keyAfter(byte[] key) {
    return Arrays.copyOf(key, key.length + 1);
  }

  /** Whether {@code [begin, end)} holds exactly one key: {@code end} is {@link #keyAfter begin}. */
  public static boolean isOneKey(byte[] begin, byte[] end) {
    return end.length == begin.length + 1
        && end[begin.length] == 0
        && Arrays.equals(begin, 0, begin.length, end, 0, begin.length);
  }

  /**
   * The bytes a clear of {@code [begin, end)} counts as written: its bounds, or the key alone when
   * the range holds one key, as a clear of that key counts (FoundationDB sends both alike).
   */
  public static long clearedBytes(byte[] begin, byte[] end) {
    return isOneKey(begin, end) ? begin.length : (long) begin.length + end.length;
  }

  /**
   * Returns the first key that does not start with {@code prefix}: the prefix with trailing {@code
   * 0xff} bytes removed and its last byte incremented ({@code strinc} in FoundationDB).
   *
   * @throws IllegalArgumentException if the prefix is empty or made only of {@code 0xff} bytes
   */
  public static byte[] strinc(byte[] prefix) {
    int n = prefix.length;
    while (n > 0 && prefix[n - 1] == (byte) 0xff) {
      n--;
    }
    if (n == 0) {
      throw new IllegalArgumentException("no key follows every key starting with this prefix");
    }
    byte[] r = Arrays.copyOf(prefix, n);
    r[n - 1]++;
    return r;
  }

  /** Returns true if {@code key} starts with {@code prefix}. */
  public static boolean startsWith(byte[] key, byte[] prefix) {
    return key.length >= prefix.length
        && Arrays.equals(key, 0, prefix.length, prefix, 0, prefix.length);
  }

  /** Concatenates byte arrays. */
  public static byte[] concat(byte[]... parts) {
    int n = 0;
    for (byte[] p : parts) {
      n += p.length;
    }
    byte[] r = new byte[n];
    int at = 0;
    for (byte[] p : parts) {
      System.arraycopy(p, 0, r, at, p.length);
      at += p.length;
    }
    return r;
  }

  /**
   * Renders bytes as FoundationDB's tools do: printable ASCII as is, everything else as {@code
   * \xNN}.
   */
  public static String printable(byte[] bytes) {
    StringBuilder sb = new StringBuilder(bytes.length + 8);
    for (byte b : bytes) {
      int c = b & 0xff;
      if (c >= 32 && c < 127 && c != '\\') {
        sb.append((char) c);
      } else {
        sb.append(String.format("\\x%02x", c));
      }
    }
    return sb.toString();
  }
}
