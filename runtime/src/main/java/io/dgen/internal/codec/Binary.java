package io.dgen.internal.codec;

import io.dgen.UndecodableDataException;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import org.jspecify.annotations.Nullable;

/**
 * The small binary layout of queue items and of the records that wrap them: unsigned LEB128 varints
 * and length-prefixed UTF-8 strings, written to an output that a caller may go on filling (with a
 * message's or an envelope's bytes), and read back from an offset.
 */
final class Binary {

  private Binary() {}

  /**
   * Reads a record of the first format: a Smile document.
   *
   * @throws UndecodableDataException if it is not one
   */
  static <T> T firstFormat(byte[] bytes, Serde serde, Class<T> type, String what) {
    try {
      return serde.read(bytes, type);
    } catch (RuntimeException e) {
      throw new UndecodableDataException("not a " + what + ": " + e.getMessage(), e);
    }
  }

  /** A growable output whose buffer can be handed to Jackson and taken without a copy. */
  static final class Out extends ByteArrayOutputStream {
    Out(int size) {
      super(size);
    }

    Out varint(long v) {
      long x = v;
      while ((x & ~0x7FL) != 0) {
        write((int) ((x & 0x7F) | 0x80));
        x >>>= 7;
      }
      write((int) x);
      return this;
    }

    Out string(@Nullable String s) {
      if (s == null) {
        return varint(0);
      }
      byte[] b = s.getBytes(StandardCharsets.UTF_8);
      varint(b.length + 1L);
      write(b, 0, b.length);
      return this;
    }

    /** Appends {@code s}, cut at a character boundary to at most {@code max} bytes. */
    Out string(String s, int max) {
      byte[] b = s.getBytes(StandardCharsets.UTF_8);
      int n = Math.min(b.length, Math.max(0, max));
      while (n < b.length && n > 0 && (b[n] & 0xC0) == 0x80) {
        n--; // not in the middle of a character
      }
      varint(n + 1L);
      write(b, 0, n);
      return this;
    }
  }

  /** A reader over {@code bytes} from an offset. */
  static final class In {
    final byte[] bytes;
    int at;

    In(byte[] bytes, int at) {
      this.bytes = bytes;
      this.at = at;
    }

    long varint() {
      long v = 0;
      for (int shift = 0; shift < 64; shift += 7) {
        if (at >= bytes.length) {
          throw truncated();
        }
        byte b = bytes[at++];
        v |= (long) (b & 0x7F) << shift;
        if ((b & 0x80) == 0) {
          return v;
        }
      }
      throw new UndecodableDataException("a varint of more than 64 bits", null);
    }

    int intVarint() {
      long v = varint();
      if (v < 0 || v > Integer.MAX_VALUE) {
        throw new UndecodableDataException("a count out of range: " + v, null);
      }
      return (int) v;
    }

    @Nullable String string() {
      int n = intVarint();
      if (n == 0) {
        return null;
      }
      n--;
      if (n > bytes.length - at) {
        throw truncated();
      }
      String s = new String(bytes, at, n, StandardCharsets.UTF_8);
      at += n;
      return s;
    }

    int remaining() {
      return bytes.length - at;
    }

    private static UndecodableDataException truncated() {
      return new UndecodableDataException("a record ends early", null);
    }
  }
}
