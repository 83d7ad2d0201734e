package io.dgen.backend.memory;

import static io.dgen.backend.memory.TestKeys.b;
import static io.dgen.backend.memory.TestKeys.put;
import static io.dgen.backend.memory.TestKeys.range;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class GarbageCollectionTest {

  private static final long SECOND = TimeUnit.SECONDS.toNanos(1);

  private static byte[] key(int i) {
    return b("key" + i);
  }

  @Test
  void overwrites_doNotGrowTheStore() {
    try (MemoryBackend backend = MemoryBackend.create()) {
      for (int i = 0; i < 50_000; i++) {
        int n = i;
        backend.run(
            tx -> {
              byte[] k = key(n % 10);
              tx.get(k);
              tx.set(k, b("value" + n));
              return null;
            });
        put(backend, key(100 + n % 10), b("blind" + n));
      }
      MemoryStore store = backend.store();
      assertThat(store.data).hasSize(20);
      assertThat(store.versionCount()).isLessThanOrEqualTo(40);
      assertThat(store.logSize()).isLessThanOrEqualTo(2);
      assertThat(store.epochCount()).isLessThanOrEqualTo(2);
    }
  }

  @Test
  void clearedKeys_areRemovedOnceNoReaderNeedsThem() {
    try (MemoryBackend backend = MemoryBackend.create()) {
      backend.run(
          tx -> {
            for (int i = 0; i < 1000; i++) {
              tx.set(key(i), b("v"));
            }
            return null;
          });
      backend.run(
          tx -> {
            tx.clearRange(b("key"), b("kez"));
            return null;
          });
      for (int i = 0; i < 20; i++) {
        put(backend, b("other"), b("v" + i));
      }
      assertThat(backend.store().data).hasSize(1);
      assertThat(range(backend, b("key"), b("kez"))).isEmpty();
    }
  }

  @Test
  void liveReader_keepsItsVersionUntilItEnds() throws Exception {
    try (MemoryBackend backend = MemoryBackend.create()) {
      byte[] k = b("k");
      put(backend, k, b("original"));
      CompletableFuture<Void> hold = new CompletableFuture<>();
      CompletableFuture<byte[]> seen =
          backend.runAsync(
              tx -> {
                tx.get(k);
                return hold.thenApply(x -> tx.get(k));
              });
      for (int i = 0; i < 1000; i++) {
        put(backend, k, b("v" + i));
      }
      assertThat(backend.store().versionCount()).isGreaterThan(1000);

      hold.complete(null);
      assertThat(seen.get(10, TimeUnit.SECONDS)).isEqualTo(b("original"));
      for (int i = 0; i < 100; i++) {
        put(backend, k, b("w" + i));
      }
      assertThat(backend.store().versionCount()).isLessThanOrEqualTo(2);
      assertThat(backend.store().logSize()).isLessThanOrEqualTo(2);
    }
  }

  @Test
  void readerOlderThanFiveSeconds_losesItsVersionAndIsRetried() throws Exception {
    AtomicLong now = new AtomicLong();
    try (MemoryBackend backend = MemoryBackend.builder().ticker(now::get).build()) {
      byte[] k = b("k");
      put(backend, k, b("original"));
      CompletableFuture<Void> hold = new CompletableFuture<>();
      AtomicInteger executions = new AtomicInteger();
      CompletableFuture<byte[]> seen =
          backend.runAsync(
              tx -> {
                executions.incrementAndGet();
                tx.get(k);
                return hold.thenApply(x -> tx.get(k));
              });
      now.addAndGet(7 * SECOND);
      for (int i = 0; i < 1000; i++) {
        put(backend, k, b("v" + i));
      }
      assertThat(backend.store().versionCount()).isLessThanOrEqualTo(2);

      hold.complete(null);
      assertThat(seen.get(10, TimeUnit.SECONDS)).isEqualTo(b("v999"));
      assertThat(executions).hasValue(2);
      assertThat(backend.counters().transactionsRetried()).isEqualTo(1);
    }
  }
}
