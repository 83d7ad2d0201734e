package io.dgen.backend.rocksdb;

import static org.assertj.core.api.Assertions.assertThat;

import io.dgen.backend.KeyValue;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Reads served by RocksDB: after a reopen nothing is in the heap, keys are read at the reader's
 * version from a snapshot, merged with the versions the engine holds, and the engine forgets keys
 * once no reader needs their versions.
 */
class RocksDbDiskReadsTest {

  @TempDir Path root;

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static String s(byte[] v) {
    return v == null ? null : new String(v, StandardCharsets.UTF_8);
  }

  private static byte[] k(int i) {
    return b(String.format("k%05d", i));
  }

  private static void put(RocksDbBackend backend, byte[] key, byte[] value) {
    backend.run(
        tx -> {
          tx.set(key, value);
          return null;
        });
  }

  private static byte[] get(RocksDbBackend backend, byte[] key) {
    return backend.run(tx -> tx.get(key));
  }

  private static List<KeyValue> range(RocksDbBackend backend, byte[] begin, byte[] end) {
    return backend.run(tx -> tx.getRange(begin, end));
  }

  private static List<String> keys(List<KeyValue> kvs) {
    return kvs.stream().map(kv -> s(kv.key())).toList();
  }

  /** Writes k00000..k00999 = v0..v999 and closes the backend. */
  private Path written() {
    Path dir = root.resolve("data");
    try (RocksDbBackend backend = RocksDbBackend.open(dir)) {
      for (int i = 0; i < 1000; i += 100) {
        int from = i;
        backend.run(
            tx -> {
              for (int j = from; j < from + 100; j++) {
                tx.set(k(j), b("v" + j));
              }
              return null;
            });
      }
    }
    return dir;
  }

  @Test
  void reopen_readsEveryKeyFromDisk_andLoadsOnlySmallReadsIntoTheHeap() {
    Path dir = written();
    try (RocksDbBackend backend = RocksDbBackend.open(dir)) {
      assertThat(backend.keysInMemory()).isZero();
      assertThat(s(backend.run(tx -> tx.get(k(7))))).isEqualTo("v7");
      assertThat(get(backend, b("k99999"))).isNull();
      List<KeyValue> all = backend.run(tx -> tx.getRange(b("k"), b("l")));
      assertThat(all).hasSize(1000);
      assertThat(s(all.get(999).value())).isEqualTo("v999");
      List<KeyValue> last = backend.run(tx -> tx.getRange(b("k"), b("l"), 3, true));
      assertThat(keys(last)).containsExactly("k00999", "k00998", "k00997");
      // The read of a thousand keys left them on disk; the read of three put them in the heap.
      assertThat(backend.keysInMemory()).isEqualTo(3);
    }
  }

  @Test
  void rangeRead_mergesKeysInMemoryWithKeysOnDisk_andOwnWrites() {
    Path dir = written();
    try (RocksDbBackend backend = RocksDbBackend.open(dir)) {
      backend.run(
          tx -> {
            tx.set(k(1), b("new1"));
            tx.clear(k(2));
            tx.set(b("k00002a"), b("between"));
            return null;
          });
      List<KeyValue> first =
          backend.run(
              tx -> {
                tx.set(k(3), b("own3"));
                return tx.getRange(k(0), k(5));
              });
      assertThat(keys(first)).containsExactly("k00000", "k00001", "k00002a", "k00003", "k00004");
      assertThat(first.stream().map(kv -> s(kv.value())))
          .containsExactly("v0", "new1", "between", "own3", "v4");
      List<KeyValue> reversed = backend.run(tx -> tx.getRange(k(0), k(5), 0, true));
      assertThat(keys(reversed)).containsExactly("k00004", "k00003", "k00002a", "k00001", "k00000");
    }
  }

  /**
   * The reader's version is older than the commits that reach RocksDB while it reads, and the
   * engine forgets those commits' keys meanwhile: the reader's snapshot still shows its version.
   */
  @Test
  void aReaderKeepsItsVersion_whileNewerCommitsReachDiskAndLeaveTheHeap() throws Exception {
    Path dir = written();
    try (RocksDbBackend backend = RocksDbBackend.open(dir)) {
      CountDownLatch readOnce = new CountDownLatch(1);
      CountDownLatch written = new CountDownLatch(1);
      CompletableFuture<List<String>> reader =
          CompletableFuture.supplyAsync(
              () ->
                  backend.run(
                      tx -> {
                        String before = s(tx.get(k(5)));
                        readOnce.countDown();
                        await(written);
                        List<KeyValue> range = tx.getRange(k(4), k(8));
                        return List.of(
                            before,
                            s(tx.get(k(5))),
                            s(tx.get(k(6))),
                            String.join(",", range.stream().map(kv -> s(kv.value())).toList()));
                      }));
      assertThat(readOnce.await(10, TimeUnit.SECONDS)).isTrue();
      put(backend, k(5), b("changed5"));
      backend.run(
          tx -> {
            tx.clearRange(k(6), k(8));
            return null;
          });
      for (int i = 0; i < 200; i++) {
        put(backend, b("other"), b("x" + i));
      }
      assertThat(s(backend.run(tx -> tx.get(k(5))))).isEqualTo("changed5");
      assertThat(range(backend, k(6), k(8))).isEmpty();
      written.countDown();
      assertThat(reader.get(10, TimeUnit.SECONDS)).containsExactly("v5", "v5", "v6", "v4,v5,v6,v7");
    }
  }

  @Test
  void keysLeaveTheHeap_onceOverTheHeapCacheBudget_andNoReaderNeedsTheirVersions() {
    Path dir = root.resolve("data");
    // about 130 bytes a key: a budget of 64 keys
    try (RocksDbBackend backend = RocksDbBackend.builder(dir).heapCacheSize(64 * 130).open()) {
      for (int i = 0; i < 500; i++) {
        put(backend, k(i), b("v" + i));
      }
      assertThat(backend.keysInMemory()).isBetween(32, 80);
      assertThat(s(backend.run(tx -> tx.get(k(3))))).isEqualTo("v3");
      assertThat(range(backend, k(0), k(500))).hasSize(500);
    }
    try (RocksDbBackend backend = RocksDbBackend.builder(dir).heapCacheSize(0).open()) {
      for (int i = 0; i < 500; i++) {
        put(backend, k(i), b("w" + i));
      }
      // Each commit evicts the keys of the commits before it that no reader is below.
      assertThat(backend.keysInMemory()).isLessThan(10);
      assertThat(s(backend.run(tx -> tx.get(k(3))))).isEqualTo("w3");
    }
  }

  /**
   * A range read that found keys only on disk puts them into the heap and marks the range complete;
   * later reads of it are served from the heap, and stay exact when a key is evicted.
   */
  @Test
  void aRangeReadFromDisk_isServedFromTheHeapNextTime_andEvictionsKeepItExact() {
    Path dir = written();
    try (RocksDbBackend backend = RocksDbBackend.builder(dir).heapCacheSize(20 * 130).open()) {
      assertThat(range(backend, k(10), k(20))).hasSize(10);
      assertThat(backend.keysInMemory()).isEqualTo(10);
      backend.run(
          tx -> {
            tx.clear(k(12));
            tx.set(b("k00012a"), b("new"));
            return null;
          });
      assertThat(keys(range(backend, k(10), k(14))))
          .containsExactly("k00010", "k00011", "k00012a", "k00013");
      // Other writes push the range's keys out of the budget: the range reads from disk again.
      for (int i = 0; i < 100; i++) {
        put(backend, b("other" + i), b("x"));
      }
      assertThat(backend.keysInMemory()).isLessThan(40);
      assertThat(keys(range(backend, k(10), k(14))))
          .containsExactly("k00010", "k00011", "k00012a", "k00013");
      assertThat(get(backend, k(12))).isNull();
      assertThat(s(get(backend, k(11)))).isEqualTo("v11");
    }
  }

  @Test
  void atomicAddsClearsAndWatches_onKeysOnlyOnDisk() throws Exception {
    Path dir = root.resolve("data");
    byte[] counter = b("counter");
    try (RocksDbBackend backend = RocksDbBackend.open(dir)) {
      backend.run(
          tx -> {
            tx.add(counter, 5);
            for (int i = 0; i < 10; i++) {
              tx.set(k(i), b("v" + i));
            }
            return null;
          });
    }
    try (RocksDbBackend backend = RocksDbBackend.open(dir)) {
      backend.run(
          tx -> {
            tx.add(counter, 2);
            return null;
          });
      assertThat(
              ByteBuffer.wrap(backend.run(tx -> tx.get(counter)))
                  .order(ByteOrder.LITTLE_ENDIAN)
                  .getLong())
          .isEqualTo(7);

      CompletableFuture<Void> cleared = backend.run(tx -> tx.watch(k(4)));
      CompletableFuture<Void> unchanged = backend.run(tx -> tx.watch(k(9)));
      backend.run(
          tx -> {
            tx.clearRange(k(2), k(6));
            return null;
          });
      cleared.get(10, TimeUnit.SECONDS);
      assertThat(unchanged).isNotDone();
      assertThat(keys(backend.run(tx -> tx.getRange(k(0), k(10)))))
          .containsExactly("k00000", "k00001", "k00006", "k00007", "k00008", "k00009");
      unchanged.cancel(true);
    }
    try (RocksDbBackend backend = RocksDbBackend.open(dir)) {
      assertThat(keys(backend.run(tx -> tx.getRange(k(0), k(10))))).hasSize(6);
      assertThat(get(backend, k(3))).isNull();
    }
  }

  private static void await(CountDownLatch latch) {
    try {
      if (!latch.await(10, TimeUnit.SECONDS)) {
        throw new AssertionError("timed out");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
  }
}
