package io.dgen.backend.memory;

import static io.dgen.backend.memory.TestKeys.b;
import static io.dgen.backend.memory.TestKeys.get;
import static io.dgen.backend.memory.TestKeys.put;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dgen.backend.BackendException;
import io.dgen.backend.ByteKeys;
import java.util.List;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/** The engine over a {@link Storage}: recovery, durability before visibility, sticky failures. */
class StorageTest {

  /** A storage in a map; {@code awaitDurable} waits for {@link #release} when {@link #hold}. */
  private static final class MapStorage implements Storage {
    final TreeMap<byte[], byte[]> data = new TreeMap<>(ByteKeys.COMPARATOR);
    long version;
    volatile boolean hold;
    volatile @Nullable RuntimeException failAppend;
    volatile @Nullable RuntimeException failSync;
    final CountDownLatch appended = new CountDownLatch(1);
    final CountDownLatch release = new CountDownLatch(1);

    @Override
    public long recover(BiConsumer<byte[], byte[]> each) {
      data.forEach(each);
      return version;
    }

    @Override
    public synchronized void append(long v, List<byte[]> keys, List<byte @Nullable []> values) {
      if (failAppend != null) {
        throw failAppend;
      }
      for (int i = 0; i < keys.size(); i++) {
        if (values.get(i) == null) {
          data.remove(keys.get(i));
        } else {
          data.put(keys.get(i), values.get(i));
        }
      }
      version = v;
      appended.countDown();
    }

    @Override
    public long awaitDurable(long v) {
      RuntimeException f = failSync;
      if (f != null) {
        throw f;
      }
      if (hold) {
        try {
          release.await(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      return v;
    }

    @Override
    public void close() {}
  }

  @Test
  void startsFromTheStoragesDataAndContinuesItsVersions() {
    MapStorage storage = new MapStorage();
    storage.data.put(b("k"), b("v"));
    storage.version = 41;
    try (MemoryBackend backend = MemoryBackend.builder().storage(storage).build()) {
      assertThat(get(backend, b("k"))).isEqualTo(b("v"));
      put(backend, b("k2"), b("v2"));
      assertThat(storage.version).isEqualTo(42);
      assertThat(storage.data).containsKey(b("k2"));
    }
  }

  @Test
  void aCommitIsInvisibleAndUnacknowledgedUntilDurable() throws Exception {
    MapStorage storage = new MapStorage();
    storage.hold = true;
    try (MemoryBackend backend = MemoryBackend.builder().storage(storage).build()) {
      CompletableFuture<Void> writer =
          CompletableFuture.runAsync(() -> put(backend, b("k"), b("v")));
      assertThat(storage.appended.await(10, TimeUnit.SECONDS)).isTrue();
      assertThat(get(backend, b("k"))).as("visible before its sync").isNull();
      assertThat(writer).isNotDone();
      storage.release.countDown();
      writer.get(10, TimeUnit.SECONDS);
      assertThat(get(backend, b("k"))).isEqualTo(b("v"));
    }
  }

  @Test
  void aStorageFailureFailsThatCommitAndEveryLaterOne() {
    MapStorage storage = new MapStorage();
    try (MemoryBackend backend = MemoryBackend.builder().storage(storage).build()) {
      put(backend, b("a"), b("1"));
      storage.failAppend = new BackendException(BackendException.IO_ERROR, "disk full");
      assertThatThrownBy(() -> put(backend, b("b"), b("2")))
          .isInstanceOfSatisfying(
              BackendException.class, e -> assertThat(e.code()).isEqualTo(1510));
      storage.failAppend = null;
      assertThatThrownBy(() -> put(backend, b("c"), b("3")))
          .isInstanceOfSatisfying(
              BackendException.class, e -> assertThat(e.isRetryable()).isFalse());
      assertThat(get(backend, b("a"))).isEqualTo(b("1"));
      assertThat(get(backend, b("b"))).isNull();
      assertThat(storage.data).hasSize(1);
    }
  }

  @Test
  void aFailedSyncLeavesTheCommitsOutcomeUnknown_soReadsAreRefusedToo() {
    MapStorage storage = new MapStorage();
    try (MemoryBackend backend = MemoryBackend.builder().storage(storage).build()) {
      put(backend, b("a"), b("1"));
      storage.failSync = new BackendException(BackendException.IO_ERROR, "sync failed");
      assertThatThrownBy(() -> put(backend, b("b"), b("2")))
          .isInstanceOfSatisfying(
              BackendException.class, e -> assertThat(e.code()).isEqualTo(1510));
      // the commit reached the storage: a read that did not see it would wrongly say it failed
      assertThat(storage.data).containsKey(b("b"));
      assertThatThrownBy(() -> get(backend, b("b")))
          .isInstanceOfSatisfying(
              BackendException.class,
              e -> assertThat(e.getMessage()).contains("may or may not have applied"));
    }
  }
}
