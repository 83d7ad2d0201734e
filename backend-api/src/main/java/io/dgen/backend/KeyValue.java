package io.dgen.backend;

import java.util.Arrays;

/**
 * One key and its value, as returned by a range read.
 *
 * <p>Equality compares the bytes of both arrays.
 *
 * @param key the key
 * @param value the value stored under it
 */
public record KeyValue(byte[] key, byte[] value) {

  @Override
  public boolean equals(Object o) {
    return o instanceof KeyValue other
        && Arrays.equals(key, other.key)
        && Arrays.equals(value, other.value);
  }

  @Override
  public int hashCode() {
    return 31 * Arrays.hashCode(key) + Arrays.hashCode(value);
  }

  @Override
  public String toString() {
    return ByteKeys.printable(key) + "=" + ByteKeys.printable(value);
  }
}
