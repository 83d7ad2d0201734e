package io.dgen.backend.memory;

import static io.dgen.backend.memory.TestKeys.b;
import static io.dgen.backend.memory.TestKeys.put;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dgen.backend.BackendException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.Consumer;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Watch internals; an inline executor makes watch completion synchronous with the commit. */
class WatchTest {

  private final MemoryBackend backend =
      MemoryBackend.builder().executor(Runnable::run).maxWatches(2).build();

  @AfterEach
  void close() {
    backend.close();
  }

  private CompletableFuture<Void> watch(byte[] key) {
    return backend.run(tx -> tx.watch(key));
  }

  private static void assertFailsWith(CompletableFuture<?> f, int code) {
    ThrowingCallable join = f::join;
    Consumer<BackendException> hasCode = e -> assertThat(e.code()).isEqualTo(code);
    assertThatThrownBy(join)
        .isInstanceOf(CompletionException.class)
        .cause()
        .isInstanceOfSatisfying(BackendException.class, hasCode);
  }

  @Test
  void watch_firesOnChangeButNotOnIdenticalRewrite() {
    put(backend, b("k"), b("v"));
    CompletableFuture<Void> w = watch(b("k"));
    put(backend, b("k"), b("v"));
    assertThat(w).isNotDone();
    put(backend, b("k"), b("w"));
    assertThat(w).isCompletedWithValue(null);
    assertThat(backend.counters().watchesArmed()).isEqualTo(1);
    assertThat(backend.counters().watchesFired()).isEqualTo(1);
  }

  @Test
  void watch_absentDiffersFromEmpty() {
    CompletableFuture<Void> w = watch(b("k"));
    put(backend, b("k"), new byte[0]);
    assertThat(w).isCompletedWithValue(null);
  }

  @Test
  void watch_firesOnClearRange() {
    put(backend, b("k"), b("v"));
    CompletableFuture<Void> w = watch(b("k"));
    backend.run(
        tx -> {
          tx.clearRange(b("a"), b("z"));
          return null;
        });
    assertThat(w).isCompletedWithValue(null);
  }

  @Test
  void watch_clearedAndRewrittenInOneCommitToTheSameValue_doesNotFire() {
    put(backend, b("k"), b("v"));
    CompletableFuture<Void> w = watch(b("k"));
    backend.run(
        tx -> {
          tx.clearRange(b("a"), b("z"));
          tx.set(b("k"), b("v"));
          return null;
        });
    assertThat(w).isNotDone();
  }

  @Test
  void watch_firesAtCommitWhenItsOwnTransactionChangesTheValue() {
    CompletableFuture<Void> w =
        backend.run(
            tx -> {
              CompletableFuture<Void> f = tx.watch(b("k"));
              tx.add(b("k"), 1);
              return f;
            });
    assertThat(w).isCompletedWithValue(null);
  }

  @Test
  void watch_firesAtCommitAfterAnyOwnAtomicOpOrOwnChangeEvenIfTheValueEndsEqual() {
    put(backend, b("k"), new byte[8]);
    CompletableFuture<Void> added =
        backend.run(
            tx -> {
              CompletableFuture<Void> f = tx.watch(b("k"));
              tx.add(b("k"), 0);
              return f;
            });
    assertThat(added).isCompletedWithValue(null);
    CompletableFuture<Void> setBack =
        backend.run(
            tx -> {
              CompletableFuture<Void> f = tx.watch(b("k"));
              tx.set(b("k"), b("other"));
              tx.set(b("k"), new byte[8]);
              return f;
            });
    assertThat(setBack).isCompletedWithValue(null);
    CompletableFuture<Void> sameValue =
        backend.run(
            tx -> {
              CompletableFuture<Void> f = tx.watch(b("k"));
              tx.set(b("k"), new byte[8]);
              return f;
            });
    assertThat(sameValue).isNotDone();
    sameValue.cancel(true);
  }

  @Test
  void watch_firesWhenChangedBetweenItsReadAndItsCommit() {
    CompletableFuture<Void> w =
        backend.run(
            tx -> {
              CompletableFuture<Void> f = tx.watch(b("k"));
              put(backend, b("k"), b("other"));
              return f;
            });
    assertThat(w).isCompletedWithValue(null);
  }

  @Test
  void tooManyWatches_failsTheExcessWatchAndCancellingFreesASlot() {
    CompletableFuture<Void> w1 = watch(b("a"));
    CompletableFuture<Void> w2 = watch(b("b"));
    CompletableFuture<Void> w3 = watch(b("c"));
    assertFailsWith(w3, 1032);
    assertThat(backend.store().outstandingWatches()).isEqualTo(2);

    assertThat(w1.cancel(true)).isTrue();
    assertThat(backend.store().outstandingWatches()).isEqualTo(1);
    CompletableFuture<Void> w4 = watch(b("d"));
    assertThat(w4).isNotDone();

    put(backend, b("b"), b("changed"));
    assertThat(w2).isCompletedWithValue(null);
    assertThat(backend.store().outstandingWatches()).isEqualTo(1);
    assertThat(watch(b("e"))).isNotDone();
    assertFailsWith(watch(b("f")), 1032);

    // the cancelled watch was disarmed: a change of its key completes nothing
    put(backend, b("a"), b("changed"));
    assertThat(w1).isCancelled();
    assertThat(backend.store().outstandingWatches()).isEqualTo(2);
  }

  @Test
  void watchOfAttemptEndedWithoutCommit_failsWith1025AndFreesItsSlot() {
    CompletableFuture<?>[] f = new CompletableFuture<?>[1];
    assertThatThrownBy(
            () ->
                backend.run(
                    tx -> {
                      f[0] = tx.watch(b("k"));
                      throw new IllegalStateException("boom");
                    }))
        .isInstanceOf(IllegalStateException.class)
        .hasMessage("boom");
    assertFailsWith(f[0], 1025);
    assertThat(backend.store().outstandingWatches()).isZero();
  }

  @Test
  void watchOfFailedCommit_failsWithTheCommitError() {
    try (MemoryBackend once = MemoryBackend.builder().retryLimit(0).build()) {
      once.faults().failNextCommits(1);
      CompletableFuture<?>[] f = new CompletableFuture<?>[1];
      assertThatThrownBy(
              () ->
                  once.run(
                      tx -> {
                        f[0] = tx.watch(b("k"));
                        tx.set(b("x"), b("y"));
                        return null;
                      }))
          .isInstanceOf(BackendException.class);
      assertFailsWith(f[0], 1020);
    }
  }

  @Test
  void watchReadConflicts_failTheWritingTransaction() {
    try (MemoryBackend once = MemoryBackend.builder().retryLimit(0).build()) {
      assertThatThrownBy(
              () ->
                  once.run(
                      tx -> {
                        CompletableFuture<Void> f = tx.watch(b("k"));
                        put(once, b("k"), b("v"));
                        tx.set(b("x"), b("y"));
                        return f;
                      }))
          .isInstanceOfSatisfying(
              BackendException.class, e -> assertThat(e.code()).isEqualTo(1020));
    }
  }

  @Test
  void close_failsArmedWatchesWith1025() {
    CompletableFuture<Void> w = watch(b("k"));
    backend.close();
    assertFailsWith(w, 1025);
    assertThat(backend.store().outstandingWatches()).isZero();
    assertThatThrownBy(() -> backend.run(tx -> null)).isInstanceOf(IllegalStateException.class);
  }
}
