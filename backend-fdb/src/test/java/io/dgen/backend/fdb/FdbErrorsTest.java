package io.dgen.backend.fdb;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.apple.foundationdb.FDBException;
import io.dgen.backend.BackendException;
import java.io.IOException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class FdbErrorsTest {

  @ParameterizedTest
  @CsvSource({
    "1007, true",
    "1020, true",
    "1021, true",
    "1031, false",
    "1032, false",
    "2101, false",
    "2102, false"
  })
  void map_fdbExceptionKeepsCodeMessageAndCause(int code, boolean retryable) {
    FDBException fdb = new FDBException("from the client", code);

    RuntimeException mapped = FdbErrors.map(fdb);

    assertThat(mapped)
        .isInstanceOfSatisfying(
            BackendException.class,
            e -> {
              assertThat(e.code()).isEqualTo(code);
              assertThat(e.isRetryable()).isEqualTo(retryable);
            })
        .hasMessageContaining("(" + code + ")")
        .hasMessageContaining("from the client")
        .hasCause(fdb);
  }

  @Test
  void map_unwrapsCompletionAndExecutionExceptions() {
    FDBException fdb = new FDBException("conflict", 1020);

    RuntimeException mapped = FdbErrors.map(new CompletionException(new ExecutionException(fdb)));

    assertThat(mapped).isInstanceOf(BackendException.class).hasCause(fdb);
  }

  @Test
  void map_returnsOtherUncheckedExceptionsUnchanged() {
    IllegalStateException user = new IllegalStateException("mine");
    BackendException backend = new BackendException(2102, "key");

    assertThat(FdbErrors.map(new CompletionException(user))).isSameAs(user);
    assertThat(FdbErrors.map(backend)).isSameAs(backend);
  }

  @Test
  void map_wrapsCheckedExceptionsAndThrowsErrors() {
    IOException io = new IOException("disk");
    AssertionError error = new AssertionError("boom");

    assertThat(FdbErrors.map(io)).isInstanceOf(CompletionException.class).hasCause(io);
    assertThatThrownBy(() -> FdbErrors.map(new CompletionException(error))).isSameAs(error);
  }

  @Test
  void toFdbException_reusesTheClientsExceptionOrMakesOneFromTheCode() {
    FDBException fdb = new FDBException("conflict", 1020);
    BackendException fromClient = (BackendException) FdbErrors.map(fdb);
    BackendException eager = new BackendException(2102, "key_length=10001");

    assertThat(FdbErrors.toFdbException(fromClient)).isSameAs(fdb);
    assertThat(FdbErrors.toFdbException(eager).getCode()).isEqualTo(2102);
  }

  @Test
  void adapt_failsWithTheBackendExceptionItself() {
    CompletableFuture<byte[]> source = new CompletableFuture<>();
    CompletableFuture<byte[]> adapted = FdbErrors.adapt(source);

    source.completeExceptionally(new FDBException("too old", 1007));

    assertThat(adapted.handle((value, failure) -> failure))
        .succeedsWithin(java.time.Duration.ofSeconds(1))
        .isInstanceOfSatisfying(BackendException.class, e -> assertThat(e.code()).isEqualTo(1007));
  }

  @Test
  void adapt_convertsValuesAndFailuresOfTheConversion() {
    CompletableFuture<String> source = CompletableFuture.completedFuture("7");

    assertThat(FdbErrors.adapt(source, Integer::parseInt).join()).isEqualTo(7);
    assertThat(
            FdbErrors.adapt(CompletableFuture.completedFuture("x"), Integer::parseInt)
                .handle((value, failure) -> failure)
                .join())
        .isInstanceOf(NumberFormatException.class);
  }

  @Test
  void adapt_cancellingTheResultCancelsTheSource() {
    CompletableFuture<Void> source = new CompletableFuture<>();

    FdbErrors.adapt(source).cancel(true);

    assertThat(source).isCancelled();
  }

  @Test
  void join_throwsTheMappedException() {
    CompletableFuture<Long> failed = CompletableFuture.failedFuture(new FDBException("x", 1031));

    assertThatThrownBy(() -> FdbErrors.join(failed))
        .isInstanceOfSatisfying(BackendException.class, e -> assertThat(e.code()).isEqualTo(1031));
  }

  @Test
  void clientLibraryUnavailable_saysWhatToInstallAndWhereToRead() {
    UnsatisfiedLinkError cause = new UnsatisfiedLinkError("libfdb_c.so: cannot open");

    IllegalStateException e = FdbErrors.clientLibraryUnavailable(cause);

    assertThat(e)
        .hasCause(cause)
        .hasMessageContaining(System.mapLibraryName("fdb_c"))
        .hasMessageContaining("cannot open")
        .hasMessageContaining("foundationdb-clients")
        .hasMessageContaining("https://github.com/apple/foundationdb/releases")
        .hasMessageContaining("docs/operations.md");
  }
}
