package io.dgen.backend.memory;

import io.dgen.backend.Backend;
import io.dgen.backend.KeyValue;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.jspecify.annotations.Nullable;

/** Small helpers shared by this package's tests. */
final class TestKeys {
  private TestKeys() {}

  static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  static String s(byte[] bytes) {
    return new String(bytes, StandardCharsets.UTF_8);
  }

  static void put(Backend backend, byte[] key, byte[] value) {
    backend.run(
        tx -> {
          tx.set(key, value);
          return null;
        });
  }

  static byte @Nullable [] get(Backend backend, byte[] key) {
    return backend.run(tx -> tx.get(key));
  }

  static List<KeyValue> range(Backend backend, byte[] begin, byte[] end) {
    return backend.run(tx -> tx.getRange(begin, end));
  }

  static long le(byte[] v) {
    long n = 0;
    for (int i = 0; i < Math.min(8, v.length); i++) {
      n |= (v[i] & 0xffL) << (8 * i);
    }
    return n;
  }
}
