package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dgen.TestServer.Add;
import io.dgen.TestServer.Msg;
import io.dgen.backend.Backend;
import io.dgen.backend.BackendException;
import io.dgen.backend.ByteKeys;
import io.dgen.backend.memory.MemoryBackend;
import io.dgen.backend.memory.Storage;
import java.util.List;
import java.util.TreeMap;
import java.util.function.BiConsumer;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * An embedded backend whose disk fails while it makes a commit durable ({@code io_error}) may have
 * kept the commit: the runtime treats the error as "may have committed", as after {@code
 * commit_unknown_result}, and looks for the run's marker; the backend refuses reads that could not
 * tell, so the outcome is reported unknown rather than failed. (The engine is the RocksDB
 * backend's, here over a storage whose sync can be made to fail.)
 */
class DiskFailureTest extends RuntimeTestBase {

  /** A storage in a map whose sync fails while {@link #failSync} is set. */
  private static final class FlakyStorage implements Storage {
    final TreeMap<byte[], byte[]> data = new TreeMap<>(ByteKeys.COMPARATOR);
    volatile boolean failSync;

    @Override
    public long recover(BiConsumer<byte[], byte[]> each) {
      return 0;
    }

    @Override
    public synchronized void append(long v, List<byte[]> keys, List<byte @Nullable []> values) {
      for (int i = 0; i < keys.size(); i++) {
        if (values.get(i) == null) {
          data.remove(keys.get(i));
        } else {
          data.put(keys.get(i), values.get(i));
        }
      }
    }

    @Override
    public long awaitDurable(long v) {
      if (failSync) {
        throw new BackendException(BackendException.IO_ERROR, "the disk refused to sync");
      }
      return v;
    }

    @Override
    public void close() {}
  }

  private final FlakyStorage storage = new FlakyStorage();

  @Override
  Backend newBackend() {
    return MemoryBackend.builder().storage(storage).build();
  }

  @AfterEach
  void healthyAgain() {
    storage.failSync = false;
  }

  @Test
  void aCastWhoseSyncFailed_isReportedWithItsOutcomeUnknown_notAsFailed() {
    ServerRef<Msg> ref = start(b -> b.consume(false));
    storage.failSync = true;

    assertThatThrownBy(() -> ref.cast(new Add(1)))
        .isInstanceOfSatisfying(
            BackendFailureException.class,
            e -> {
              assertThat(e.code()).isEqualTo(BackendException.IO_ERROR);
              // the runtime looked for the cast's commit marker, and the backend could not tell
              assertThat(e.backendCause().getSuppressed())
                  .anySatisfy(
                      s -> assertThat(s).hasMessageContaining("may or may not have applied"));
            });
  }

  @Override
  @AfterEach
  void tearDownRuntime() {
    dgen.close(); // the backend refuses everything now: nothing to remove
    backend.close();
  }
}
