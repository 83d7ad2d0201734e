package io.dgen.backend.rocksdb;

import static org.assertj.core.api.Assertions.assertThat;

import io.dgen.backend.Backend;
import io.dgen.backend.KeyValue;
import io.dgen.backend.memory.MemoryBackend;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Random transactions on the RocksDB backend, with a heap cache so small that keys and complete
 * ranges are evicted all the time and the directory reopened now and then, against the memory
 * backend as the model: every read answers the same. Seeded, so a failure reproduces.
 */
class RocksDbModelTest {

  @TempDir Path root;

  private static byte[] key(int i) {
    return String.format("k%03d", i).getBytes(StandardCharsets.UTF_8);
  }

  private static String render(List<KeyValue> kvs) {
    StringBuilder b = new StringBuilder();
    for (KeyValue kv : kvs) {
      b.append(new String(kv.key(), StandardCharsets.UTF_8))
          .append('=')
          .append(java.util.Arrays.toString(kv.value()))
          .append(' ');
    }
    return b.toString();
  }

  private RocksDbBackend open(Path dir, long heapCache) {
    return RocksDbBackend.builder(dir).heapCacheSize(heapCache).open();
  }

  @ParameterizedTest
  @ValueSource(longs = {1, 2, 3, 4, 5, 6, 7, 8})
  void randomTransactions_readAsOnTheMemoryBackend(long seed) {
    Random random = new Random(seed);
    Path dir = root.resolve("data");
    long heapCache = random.nextBoolean() ? 0 : 40 * 130;
    RocksDbBackend rocks = open(dir, heapCache);
    try (MemoryBackend model = MemoryBackend.create()) {
      for (int step = 0; step < 600; step++) {
        if (random.nextInt(100) == 0) {
          rocks.close();
          rocks = open(dir, heapCache);
        }
        List<Op> ops = new ArrayList<>();
        int n = 1 + random.nextInt(4);
        for (int i = 0; i < n; i++) {
          ops.add(Op.random(random));
        }
        String expected = apply(model, ops);
        String actual = apply(rocks, ops);
        assertThat(actual).as("seed %s step %s ops %s", seed, step, ops).isEqualTo(expected);
      }
      List<KeyValue> all = model.run(tx -> tx.getRange(key(0), key(1000)));
      List<KeyValue> stored = rocks.run(tx -> tx.getRange(key(0), key(1000)));
      assertThat(render(stored)).isEqualTo(render(all));
    } finally {
      rocks.close();
    }
  }

  private static String apply(Backend backend, List<Op> ops) {
    return backend.run(
        tx -> {
          StringBuilder out = new StringBuilder();
          for (Op op : ops) {
            switch (op.kind) {
              case 0 -> tx.set(key(op.a), new byte[] {(byte) op.b, (byte) op.a});
              case 1 -> tx.clear(key(op.a));
              case 2 -> tx.clearRange(key(op.a), key(op.a + op.b));
              case 3 -> tx.add(key(op.a), op.b);
              case 4 -> out.append(java.util.Arrays.toString(tx.get(key(op.a)))).append(';');
              default ->
                  out.append(render(tx.getRange(key(op.a), key(op.a + op.b), op.limit, op.reverse)))
                      .append(';');
            }
          }
          return out.toString();
        });
  }

  /** One operation: 0 set, 1 clear, 2 clear range, 3 add, 4 get, 5 range read. */
  private record Op(int kind, int a, int b, int limit, boolean reverse) {
    static Op random(Random r) {
      int kind = r.nextInt(6);
      int a = r.nextInt(60);
      int b = 1 + r.nextInt(kind == 2 ? 8 : 25);
      return new Op(kind, a, b, r.nextInt(3) == 0 ? 1 + r.nextInt(4) : 0, r.nextBoolean());
    }
  }
}
