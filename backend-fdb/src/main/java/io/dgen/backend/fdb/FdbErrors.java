package io.dgen.backend.fdb;

import com.apple.foundationdb.FDBException;
import io.dgen.backend.BackendException;
import io.dgen.backend.Futures;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.Function;

/**
 * The one place where fdb-java's errors become the SPI's: {@link FDBException} turns into {@link
 * BackendException} with the same code; everything else passes through unchanged.
 *
 * <p>Deliberately never calls {@code FDBException.isRetryable()} or {@code isMaybeCommitted()}:
 * those evaluate a predicate in the native library. Retryability comes from {@link
 * BackendException#isRetryable(int)}, a copy of FoundationDB 7.3's table.
 */
final class FdbErrors {

  /** Where the operations guide lives, named in errors a user must act on. */
  static final String OPERATIONS_DOC = "docs/operations.md";

  /** Where the FoundationDB client packages are published. */
  static final String CLIENT_DOWNLOADS = "https://github.com/apple/foundationdb/releases";

  private FdbErrors() {}

  /**
   * Maps a failure to the exception the SPI throws: {@code CompletionException} and {@code
   * ExecutionException} wrappers are removed; an {@link FDBException} becomes a {@link
   * BackendException} with its code, message and itself as cause; any other unchecked exception is
   * returned as is; an {@link Error} is thrown; a checked exception is wrapped in a {@link
   * CompletionException}.
   *
   * @param failure the failure, possibly wrapped
   * @return the exception to throw
   */
  static RuntimeException map(Throwable failure) {
    Throwable cause = Futures.unwrap(failure);
    if (cause instanceof FDBException fdb) {
      return new BackendException(fdb.getCode(), fdb.getMessage(), fdb);
    }
    if (cause instanceof RuntimeException unchecked) {
      return unchecked;
    }
    if (cause instanceof Error error) {
      throw error;
    }
    return new CompletionException(cause);
  }

  /**
   * Returns the {@link FDBException} to hand to {@code Transaction.onError} for {@code e}: its
   * cause when FoundationDB raised it, otherwise an equivalent one made from the code (for errors
   * the adapter raised itself, such as the eager {@code 2102}).
   */
  static FDBException toFdbException(BackendException e) {
    if (e.getCause() instanceof FDBException fdb && fdb.getCode() == e.code()) {
      return fdb;
    }
    return new FDBException(e.getMessage(), e.code());
  }

  /**
   * Waits for a future of fdb-java and returns its value, throwing {@link #map mapped} failures.
   * Restores the interrupt flag as {@link Futures#join} does.
   */
  static <T> T join(CompletableFuture<T> future) {
    try {
      return Futures.join(future);
    } catch (RuntimeException e) {
      throw map(e);
    }
  }

  /**
   * Returns a future that completes as {@code source} does, with failures {@link #map mapped}.
   * Cancelling the returned future cancels {@code source}, which frees the native resources behind
   * it (a watch's slot, for example).
   */
  static <T> CompletableFuture<T> adapt(CompletableFuture<T> source) {
    return adapt(source, Function.identity());
  }

  /**
   * Like {@link #adapt(CompletableFuture)}, converting the value with {@code convert} inside the
   * same future, so that a failure reaches the caller as the {@link BackendException} itself and
   * not wrapped in a {@link CompletionException} by a dependent stage.
   */
  static <S, T> CompletableFuture<T> adapt(
      CompletableFuture<S> source, Function<? super S, ? extends T> convert) {
    CompletableFuture<T> out = new CompletableFuture<>();
    source.whenComplete(
        (value, failure) -> {
          if (failure != null) {
            out.completeExceptionally(mapForFuture(failure));
            return;
          }
          T converted;
          try {
            converted = convert.apply(value);
          } catch (RuntimeException | Error e) {
            out.completeExceptionally(mapForFuture(e));
            return;
          }
          out.complete(converted);
        });
    out.whenComplete(
        (value, failure) -> {
          if (out.isCancelled()) {
            source.cancel(true);
          }
        });
    return out;
  }

  /** Returns a future already failed with {@code failure}, {@link #map mapped}. */
  static <T> CompletableFuture<T> failed(Throwable failure) {
    return CompletableFuture.failedFuture(mapForFuture(failure));
  }

  private static Throwable mapForFuture(Throwable failure) {
    Throwable cause = Futures.unwrap(failure);
    return cause instanceof Error ? cause : map(cause);
  }

  /**
   * The error {@code FdbBackend.open} raises when fdb-java cannot load its native libraries: which
   * library is missing, how to install it, where to read more.
   */
  static IllegalStateException clientLibraryUnavailable(Throwable cause) {
    String library = System.mapLibraryName("fdb_c");
    return new IllegalStateException(
        "The FoundationDB client library "
            + library
            + " could not be loaded, so FdbBackend cannot connect to FoundationDB ("
            + cause
            + "). Install the FoundationDB client package for your platform, version 7.3.x"
            + " (foundationdb-clients .deb/.rpm or the macOS/Windows installer from "
            + CLIENT_DOWNLOADS
            + "), or put "
            + library
            + " on the library path (LD_LIBRARY_PATH, DYLD_LIBRARY_PATH or -Djava.library.path). See"
            + " \"Installing the FoundationDB client\" in "
            + OPERATIONS_DOC
            + ".",
        cause);
  }
}
