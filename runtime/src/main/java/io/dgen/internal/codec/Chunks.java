package io.dgen.internal.codec;

import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/** Splits byte strings into values that fit FoundationDB's 100,000-byte value limit. */
public final class Chunks {

  /** The largest value FoundationDB stores. */
  public static final int MAX_VALUE = 100_000;

  private Chunks() {}

  /**
   * Splits {@code bytes} into pieces of at most {@code size} bytes; an empty input gives one empty
   * piece.
   */
  public static List<byte[]> split(byte[] bytes, int size) {
    List<byte[]> parts = new ArrayList<>(bytes.length / size + 1);
    for (int at = 0; at < bytes.length || parts.isEmpty(); at += size) {
      parts.add(Arrays.copyOfRange(bytes, at, Math.min(bytes.length, at + size)));
    }
    return parts;
  }

  /** Concatenates pieces. */
  public static byte[] join(List<byte[]> parts) {
    if (parts.size() == 1) {
      return parts.get(0);
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (byte[] p : parts) {
      out.writeBytes(p);
    }
    return out.toByteArray();
  }
}
