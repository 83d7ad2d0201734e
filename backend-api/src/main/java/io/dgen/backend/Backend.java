package io.dgen.backend;

import com.apple.foundationdb.subspace.Subspace;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;

/**
 * A transactional, ordered key-value store with FoundationDB's semantics: the one dependency of the
 * DGen runtime.
 *
 * <pre>{@code
 * try (Backend backend = MemoryBackend.create()) {
 *   Subspace tenant = backend.directory("demo", "app");
 *   byte[] key = tenant.pack(Tuple.from("greeting"));
 *   backend.run(tx -> { tx.set(key, "hello".getBytes(UTF_8)); return null; });
 *   byte[] value = backend.run(tx -> tx.get(key));
 * }
 * }</pre>
 *
 * <h2>Retries and idempotency</h2>
 *
 * {@link #run} and {@link #runAsync} execute their body inside a transaction and commit it,
 * retrying the whole body with a fresh transaction on every {@linkplain
 * BackendException#isRetryable() retryable} error (conflicts, {@code transaction_too_old}, {@code
 * commit_unknown_result}, ...), with FoundationDB's randomized exponential backoff. <b>The body may
 * therefore execute more than once, and after {@code commit_unknown_result (1021)} it may execute
 * again although an earlier execution committed</b>: keep its effects idempotent, or guard them
 * with a marker key checked first. Side effects outside the transaction belong after {@code run}
 * returns. Futures created by a failed attempt (watches, versionstamps) fail; return them from the
 * body so only the final attempt's futures escape.
 *
 * <h2>Threading</h2>
 *
 * A backend is thread-safe; any number of threads may run transactions concurrently.
 */
public interface Backend extends AutoCloseable {

  /**
   * Runs {@code body} in a transaction, commits it, and returns the body's result, retrying on
   * retryable errors. <b>The body may execute more than once</b> (see the class documentation).
   *
   * @param body the transaction's work; must not keep the transaction after returning
   * @param <T> the result type
   * @return the body's result from the attempt that committed
   * @throws BackendException a non-retryable error, or the last error once the retry limit is
   *     reached
   * @throws RuntimeException whatever the body throws, unwrapped and not retried
   */
  <T> T run(Function<? super Transaction, ? extends T> body);

  /**
   * Runs {@code body} in a transaction and commits once the future it returns completes, retrying
   * on retryable errors. <b>The body may execute more than once</b>. The returned future fails with
   * the same exceptions {@link #run} throws.
   *
   * @param body the transaction's work, returning a future of its result
   * @param <T> the result type
   * @return a future of the body's result from the attempt that committed
   */
  <T> CompletableFuture<T> runAsync(
      Function<? super Transaction, ? extends CompletableFuture<? extends T>> body);

  /**
   * Creates or opens the directory (tenant) at {@code path} and returns its subspace. Directories
   * are disjoint: no directory's prefix is a prefix of another's. The prefix is chosen by the
   * backend and must not be assumed.
   *
   * @param path one or more non-empty path elements
   * @return the directory's subspace
   * @throws IllegalArgumentException if the path is empty or has an empty element
   */
  Subspace directory(String... path);

  /**
   * Opens the directory at {@code path} if it exists, without creating it.
   *
   * @param path one or more non-empty path elements
   * @return the directory's subspace, or empty if there is none
   */
  Optional<Subspace> openDirectory(String... path);

  /**
   * Removes the directory at {@code path} with all its keys and sub-directories.
   *
   * @param path one or more non-empty path elements
   * @return true if it existed
   */
  boolean removeDirectory(String... path);

  /**
   * Lists the names of the directories directly under {@code parent}, in ascending order; with no
   * parent, the top-level directories. Runs its own read; an admin tool lists tenants with it.
   *
   * @param parent zero or more non-empty path elements
   * @return the children's names (the last element of each child's path); empty if {@code parent}
   *     does not exist or has no children
   * @throws IllegalArgumentException if a parent element is null or empty
   */
  java.util.List<String> listDirectories(String... parent);

  /**
   * Releases the backend's resources. Pending watches fail with {@code transaction_cancelled}; a
   * closed backend rejects new transactions with {@link IllegalStateException}.
   */
  @Override
  void close();

  /**
   * Starts reading the backend's wall clock: a cluster's own time where it has one (FoundationDB:
   * its cluster controller's, from the status document, to the second), else this JVM's clock (the
   * default, right for a backend that lives in this JVM). A runtime compares it with its own clock
   * to detect a skew that would make it age reply slots and commit markers wrongly. Never waits on
   * a thread.
   *
   * @return a future of the time in milliseconds since the epoch
   */
  default CompletableFuture<Long> clockMillisAsync() {
    return CompletableFuture.completedFuture(System.currentTimeMillis());
  }
}
