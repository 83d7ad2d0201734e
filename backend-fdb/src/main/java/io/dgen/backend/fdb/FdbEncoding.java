package io.dgen.backend.fdb;

import io.dgen.backend.BackendException;
import io.dgen.backend.ByteKeys;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;

/**
 * The byte layouts and limit checks the adapter applies before handing a call to fdb-java. Pure
 * Java: nothing here touches the native client, so all of it is unit-tested without {@code
 * libfdb_c}.
 */
final class FdbEncoding {

  /** FoundationDB's limit on a key's length ({@code KEY_SIZE_LIMIT}). */
  static final int KEY_SIZE_LIMIT = 10_000;

  /** FoundationDB's limit on a value's length ({@code VALUE_SIZE_LIMIT}). */
  static final int VALUE_SIZE_LIMIT = 100_000;

  /** A transaction versionstamp: 8-byte big-endian commit version and 2-byte batch order. */
  static final int VERSIONSTAMP_LENGTH = 10;

  /** The little-endian position suffix of a versionstamp operation's parameter (API >= 520). */
  static final int OFFSET_LENGTH = 4;

  /** The operand length of {@code ADD} on a 64-bit counter. */
  static final int ADD_OPERAND_LENGTH = 8;

  private FdbEncoding() {}

  /**
   * Encodes {@code delta} as the operand of FoundationDB's {@code ADD}: 8 bytes, little-endian,
   * two's complement, so that negative deltas subtract.
   */
  static byte[] addOperand(long delta) {
    return ByteBuffer.allocate(ADD_OPERAND_LENGTH)
        .order(ByteOrder.LITTLE_ENDIAN)
        .putLong(delta)
        .array();
  }

  /**
   * Builds the parameter of {@code SET_VERSIONSTAMPED_VALUE}: {@code valuePrefix}, ten placeholder
   * bytes that the commit proxy overwrites with the versionstamp, and the 4-byte little-endian
   * position of the placeholder (the prefix's length). The stored value is the parameter without
   * its last four bytes.
   */
  static byte[] versionstampedValueParam(byte[] valuePrefix) {
    // 0xff placeholders, as the tuple layer's incomplete Versionstamp uses, so that a parameter
    // left unstamped by mistake is easy to recognise in a trace.
    ByteBuffer b =
        ByteBuffer.allocate(valuePrefix.length + VERSIONSTAMP_LENGTH + OFFSET_LENGTH)
            .order(ByteOrder.LITTLE_ENDIAN);
    b.put(valuePrefix);
    for (int i = 0; i < VERSIONSTAMP_LENGTH; i++) {
      b.put((byte) 0xff);
    }
    b.putInt(valuePrefix.length);
    return b.array();
  }

  /**
   * Raises {@code key_too_large (2102)} now, at the write call, where fdb-java would latch it and
   * report it at the next read or commit.
   */
  static void checkKey(byte[] key) {
    checkKeyLength(key.length, key);
  }

  /** Raises {@code value_too_large (2103)} now; see {@link #checkKey}. */
  static void checkValue(byte[] value) {
    checkValueLength(value.length);
  }

  /**
   * Checks the key a {@code SET_VERSIONSTAMPED_KEY} parameter will store: the parameter without its
   * 4-byte position suffix.
   */
  static void checkVersionstampedKeyParam(byte[] param) {
    checkKeyLength(param.length - OFFSET_LENGTH, param);
  }

  /** Checks the value a {@code SET_VERSIONSTAMPED_VALUE} with this prefix will store. */
  static void checkVersionstampedValuePrefix(byte[] valuePrefix) {
    checkValueLength(valuePrefix.length + VERSIONSTAMP_LENGTH);
  }

  /**
   * Raises {@code inverted_range (2005)} if {@code begin} sorts after {@code end}, at the call, as
   * the SPI promises for range clears and conflict ranges.
   */
  static void checkRange(byte[] begin, byte[] end) {
    if (ByteKeys.compare(begin, end) > 0) {
      throw new BackendException(
          BackendException.INVERTED_RANGE,
          "begin=" + abbreviate(begin) + " end=" + abbreviate(end));
    }
  }

  /**
   * Validates a directory path as the SPI requires: at least one element, none null or empty.
   *
   * @throws IllegalArgumentException if the path is empty or has a null or empty element
   */
  static List<String> directoryPath(String... path) {
    if (path.length == 0) {
      throw new IllegalArgumentException("a directory path needs at least one element");
    }
    for (int i = 0; i < path.length; i++) {
      String element = path[i];
      if (element == null || element.isEmpty()) {
        throw new IllegalArgumentException(
            "directory path element " + i + " is " + (element == null ? "null" : "empty"));
      }
    }
    return List.of(path);
  }

  private static void checkKeyLength(int length, byte[] keyOrParam) {
    if (length > KEY_SIZE_LIMIT) {
      throw new BackendException(
          BackendException.KEY_TOO_LARGE,
          "key_length=" + length + " limit=" + KEY_SIZE_LIMIT + " key=" + abbreviate(keyOrParam));
    }
  }

  private static void checkValueLength(int length) {
    if (length > VALUE_SIZE_LIMIT) {
      throw new BackendException(
          BackendException.VALUE_TOO_LARGE,
          "value_length=" + length + " limit=" + VALUE_SIZE_LIMIT);
    }
  }

  /** The first bytes of a key, printable, for error details. */
  static String abbreviate(byte[] key) {
    int shown = Math.min(key.length, 40);
    byte[] head = new byte[shown];
    System.arraycopy(key, 0, head, 0, shown);
    return ByteKeys.printable(head) + (shown < key.length ? "..." : "");
  }
}
