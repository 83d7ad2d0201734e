package io.dgen.backend.memory;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.BiConsumer;
import org.jspecify.annotations.Nullable;

/**
 * Where the transaction engine of {@link MemoryBackend} keeps committed data durable: the seam
 * between the backend-neutral engine (read-your-writes, conflict ranges over the five-second
 * window, versionstamps, limits, watches, directories, all in this package) and a persistent store
 * such as {@code io.dgen.backend.rocksdb.RocksDbBackend}'s. Without a storage ({@link
 * MemoryBackend#create()}) the engine is the in-memory backend.
 *
 * <p>With a plain storage, the engine keeps its multi-version index of every key in memory and
 * serves every read from it; the storage holds the newest committed value of every key and the
 * newest commit version, and gives them back once, when the engine is built. A {@link PagedStorage}
 * serves reads too, and the engine then keeps only recent versions and a bounded cache in memory.
 * The engine calls {@link #append} under its commit lock, in commit order, and {@link
 * #awaitDurable} (or {@link #durableAsync}) after releasing it, so that concurrent commits share
 * one sync (group commit); a commit is neither acknowledged nor visible to readers before it is
 * durable.
 *
 * <p>Implementations must be thread-safe.
 */
public interface Storage extends AutoCloseable {

  /**
   * Hands every stored key and value to {@code each}, in any order, and returns the version of the
   * newest durable commit (0 for an empty store). Called once, before any other method.
   *
   * @param each receives each key and its value, arrays the engine keeps (not to be reused)
   * @return the newest durable commit version; the engine's versions continue after it
   */
  long recover(BiConsumer<byte[], byte[]> each);

  /**
   * Appends one committed batch at {@code version}, which is greater than every version appended
   * before. Called under the engine's commit lock: must not block on a sync. A {@code null} value
   * clears its key.
   *
   * @param version the commit version
   * @param keys the written keys
   * @param values their values, index by index ({@code null}: cleared)
   * @throws RuntimeException if the batch cannot be written; the engine then refuses further
   *     commits
   */
  void append(long version, List<byte[]> keys, List<byte @Nullable []> values);

  /**
   * Waits until every batch up to {@code version} is durable.
   *
   * @param version an appended version
   * @return a version {@code >= version} up to which every appended batch is durable
   * @throws RuntimeException if the sync fails; the engine then refuses further commits
   */
  long awaitDurable(long version);

  /**
   * {@link #awaitDurable} for a commit whose committer does not wait in its thread (the engine's
   * {@code runAsync}): completes once every batch up to {@code version} is durable, or fails as
   * {@link #awaitDurable} throws. The default waits in the calling thread; a storage whose sync
   * takes a while overrides it so that no caller's thread waits for it.
   *
   * @param version an appended version
   * @return a future of a version {@code >= version} up to which every appended batch is durable
   */
  default CompletableFuture<Long> durableAsync(long version) {
    try {
      return CompletableFuture.completedFuture(awaitDurable(version));
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /** Releases the store; called once by {@link MemoryBackend#close()}. */
  @Override
  void close();
}
