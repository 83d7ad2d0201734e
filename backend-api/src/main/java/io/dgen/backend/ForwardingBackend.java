package io.dgen.backend;

import com.apple.foundationdb.subspace.Subspace;
import java.util.Objects;
import java.util.Optional;

/**
 * A {@link Backend} that forwards directories and {@link #close()} to another one: the base of
 * backend decorators (this package's {@link CountingBackend} and {@link FaultInjectingBackend}, the
 * runtime's count of its transactions under way), which implement {@code run} and {@code runAsync}
 * around the wrapped backend's.
 *
 * <p>Threading: as thread-safe as the wrapped backend and the subclass's own state.
 */
public abstract class ForwardingBackend implements Backend {

  /** The wrapped backend. */
  final Backend delegate;

  /**
   * Wraps {@code delegate}.
   *
   * @param delegate the backend to forward to
   * @throws NullPointerException if {@code delegate} is null
   */
  protected ForwardingBackend(Backend delegate) {
    this.delegate = Objects.requireNonNull(delegate, "delegate");
  }

  /**
   * The wrapped backend.
   *
   * @return the backend this one wraps
   */
  public Backend delegate() {
    return delegate;
  }

  @Override
  public Subspace directory(String... path) {
    return delegate.directory(path);
  }

  @Override
  public Optional<Subspace> openDirectory(String... path) {
    return delegate.openDirectory(path);
  }

  @Override
  public boolean removeDirectory(String... path) {
    return delegate.removeDirectory(path);
  }

  @Override
  public java.util.List<String> listDirectories(String... parent) {
    return delegate.listDirectories(parent);
  }

  /** Closes the wrapped backend. */
  @Override
  public java.util.concurrent.CompletableFuture<Long> clockMillisAsync() {
    return delegate.clockMillisAsync();
  }

  @Override
  public void close() {
    delegate.close();
  }
}
