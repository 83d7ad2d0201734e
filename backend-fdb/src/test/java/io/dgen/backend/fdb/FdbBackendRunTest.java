package io.dgen.backend.fdb;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

import com.apple.foundationdb.FDBException;
import io.dgen.backend.BackendException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * The retry loop of {@link FdbBackend#run} and {@link FdbBackend#runAsync} over a scripted
 * database: what goes to {@code onError}, what is thrown, what is closed.
 */
class FdbBackendRunTest {

  private static final Duration WAIT = Duration.ofSeconds(5);

  private final FakeFdb.FakeDatabase db = new FakeFdb.FakeDatabase();
  private final FdbBackend backend = new FdbBackend(db.proxy, "fake");

  @Test
  void run_commitsOnceAndReturnsTheBodysResult() {
    String result = backend.run(tx -> "done");

    assertThat(result).isEqualTo("done");
    assertThat(db.created(0).methods()).containsExactly("commit", "close");
  }

  @Test
  void run_retriesTheBodyAfterARetryableCommitFailure() {
    db.next().answer("commit", args -> failed(1020));
    AtomicInteger executions = new AtomicInteger();

    int result = backend.run(tx -> executions.incrementAndGet());

    assertThat(result).isEqualTo(2);
    assertThat(db.created(0).methods()).containsExactly("commit", "onError");
    assertThat(((FDBException) db.created(0).last("onError").arg(0)).getCode()).isEqualTo(1020);
    assertThat(db.created(1).methods()).containsExactly("commit", "close");
  }

  @Test
  void run_retriesWhenARetryableReadErrorEscapesTheBody() {
    db.next().answer("get", args -> failed(1007));
    AtomicInteger executions = new AtomicInteger();

    backend.run(
        tx -> {
          executions.incrementAndGet();
          return tx.get(new byte[] {1});
        });

    assertThat(executions).hasValue(2);
  }

  @Test
  void run_throwsTheBodysExceptionUnchangedWithoutRetrying() {
    IllegalStateException mine = new IllegalStateException("mine");
    AtomicInteger executions = new AtomicInteger();

    assertThatThrownBy(
            () ->
                backend.run(
                    tx -> {
                      executions.incrementAndGet();
                      throw mine;
                    }))
        .isSameAs(mine);
    assertThat(executions).hasValue(1);
    assertThat(db.created(0).methods()).containsExactly("close");
  }

  @Test
  void run_nonRetryableErrorIsThrownAsTheOriginalBackendException() {
    AtomicReference<BackendException> raised = new AtomicReference<>();

    Throwable thrown =
        catchThrowable(
            () ->
                backend.run(
                    tx -> {
                      try {
                        tx.set(new byte[10_001], new byte[0]);
                      } catch (BackendException e) {
                        raised.set(e);
                        throw e;
                      }
                      return null;
                    }));

    assertThat(thrown).isNotNull().isSameAs(raised.get());
    assertThat(((FDBException) db.created(0).last("onError").arg(0)).getCode()).isEqualTo(2102);
    assertThat(db.created(0).methods()).endsWith("close");
  }

  @Test
  void run_commitFailureThatIsNotRetriedKeepsItsCode() {
    db.next().answer("commit", args -> failed(2101));

    assertThatThrownBy(() -> backend.run(tx -> null))
        .isInstanceOfSatisfying(BackendException.class, e -> assertThat(e.code()).isEqualTo(2101))
        .hasCauseInstanceOf(FDBException.class);
  }

  @Test
  void run_whenOnErrorRaisesAnotherErrorThatOneIsThrownWithTheOriginalSuppressed() {
    db.next().answer("commit", args -> failed(1020));
    db.onErrorScript = fdb -> CompletableFuture.failedFuture(new FDBException("timed out", 1031));

    Throwable thrown = catchThrowable(() -> backend.run(tx -> 1));

    assertThat(thrown)
        .isInstanceOfSatisfying(BackendException.class, e -> assertThat(e.code()).isEqualTo(1031));
    assertThat(thrown.getSuppressed())
        .singleElement()
        .isInstanceOfSatisfying(BackendException.class, e -> assertThat(e.code()).isEqualTo(1020));
  }

  @Test
  void run_retryLimitReachedRethrowsTheLastError() {
    db.next().answer("commit", args -> failed(1020));
    db.onErrorScript = CompletableFuture::failedFuture;

    assertThatThrownBy(() -> backend.run(tx -> 1))
        .isInstanceOfSatisfying(BackendException.class, e -> assertThat(e.code()).isEqualTo(1020));
  }

  @Test
  void run_returnsOnlyOnceTheAttemptsVersionstampsAreComplete() {
    CompletableFuture<byte[]> source = new CompletableFuture<>();
    db.next()
        .answer("getVersionstamp", args -> source)
        .answer(
            "commit",
            args -> {
              // The client completes the stamp's future on another thread, after the commit's.
              CompletableFuture.runAsync(
                  () -> source.complete(new byte[10]),
                  CompletableFuture.delayedExecutor(50, TimeUnit.MILLISECONDS));
              return CompletableFuture.completedFuture(null);
            });

    CompletableFuture<byte[]> stamp = backend.run(tx -> tx.getVersionstamp());

    assertThat(stamp).isDone();
  }

  @Test
  void runAsync_completesOnlyOnceTheAttemptsVersionstampsAreComplete() {
    CompletableFuture<byte[]> source = new CompletableFuture<>();
    db.next()
        .answer("getVersionstamp", args -> source)
        .answer(
            "commit",
            args -> {
              CompletableFuture.runAsync(
                  () -> source.complete(new byte[10]),
                  CompletableFuture.delayedExecutor(50, TimeUnit.MILLISECONDS));
              return CompletableFuture.completedFuture(null);
            });

    CompletableFuture<byte[]> stamp =
        backend.runAsync(tx -> CompletableFuture.completedFuture(tx.getVersionstamp())).join();

    assertThat(stamp).isDone();
  }

  @Test
  void runAsync_completesWithTheBodysResult() {
    CompletableFuture<String> result =
        backend.runAsync(tx -> CompletableFuture.completedFuture("async"));

    assertThat(result).succeedsWithin(WAIT).isEqualTo("async");
    assertThat(db.created(0).methods()).containsExactly("commit", "close");
  }

  @Test
  void runAsync_retriesAfterAConflict() {
    db.next().answer("commit", args -> failed(1020));
    AtomicInteger executions = new AtomicInteger();

    CompletableFuture<Integer> result =
        backend.runAsync(tx -> CompletableFuture.completedFuture(executions.incrementAndGet()));

    assertThat(result).succeedsWithin(WAIT).isEqualTo(2);
  }

  @Test
  void runAsync_failsWithTheBodysExceptionUnwrapped() {
    IllegalArgumentException mine = new IllegalArgumentException("mine");

    CompletableFuture<Object> thrown =
        backend.runAsync(
            tx -> {
              throw mine;
            });
    CompletableFuture<Object> failedFuture =
        backend.runAsync(tx -> CompletableFuture.failedFuture(mine));

    assertThat(thrown.handle((v, e) -> e)).succeedsWithin(WAIT).isSameAs(mine);
    assertThat(failedFuture.handle((v, e) -> e)).succeedsWithin(WAIT).isSameAs(mine);
  }

  @Test
  void runAsync_nonRetryableCommitErrorFailsTheFutureWithBackendException() {
    db.next().answer("commit", args -> failed(2101));

    CompletableFuture<Object> result = backend.runAsync(tx -> CompletableFuture.completedFuture(1));

    assertThat(result.handle((v, e) -> e))
        .succeedsWithin(WAIT)
        .isInstanceOfSatisfying(BackendException.class, e -> assertThat(e.code()).isEqualTo(2101));
    assertThat(db.created(0).methods()).endsWith("close");
  }

  @Test
  void runAsync_nullFutureFromTheBodyIsAnError() {
    CompletableFuture<Object> result = backend.runAsync(tx -> null);

    assertThat(result.handle((v, e) -> e))
        .succeedsWithin(WAIT)
        .isInstanceOf(NullPointerException.class);
  }

  @Test
  void close_closesTheDatabaseOnceAndRejectsNewWork() {
    backend.close();
    backend.close();

    assertThat(db.closes).isEqualTo(1);
    assertThat(backend).hasToString("FdbBackend{fake, closed}");
    assertThatThrownBy(() -> backend.run(tx -> 1)).isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(() -> backend.directory("a")).isInstanceOf(IllegalStateException.class);
    assertThat(backend.runAsync(tx -> CompletableFuture.completedFuture(1)).handle((v, e) -> e))
        .succeedsWithin(WAIT)
        .isInstanceOf(IllegalStateException.class);
  }

  @Test
  void close_failsPendingWatchesWith1025() {
    CompletableFuture<Void> source = new CompletableFuture<>();
    db.next().answer("watch", args -> source);
    CompletableFuture<Void> watch = backend.run(tx -> tx.watch(new byte[] {1}));
    assertThat(backend.pendingWatches()).isEqualTo(1);

    backend.close();

    assertThat(watch.handle((v, e) -> e))
        .succeedsWithin(WAIT)
        .isInstanceOfSatisfying(BackendException.class, e -> assertThat(e.code()).isEqualTo(1025));
    assertThat(source).isCancelled();
    assertThat(backend.pendingWatches()).isZero();
  }

  @Test
  void directory_pathIsValidatedBeforeAnythingElse() {
    assertThatThrownBy(() -> backend.directory()).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> backend.openDirectory("a", ""))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> backend.removeDirectory())
        .isInstanceOf(IllegalArgumentException.class);
  }

  private static <T> CompletableFuture<T> failed(int code) {
    return CompletableFuture.failedFuture(new FDBException("scripted", code));
  }
}
