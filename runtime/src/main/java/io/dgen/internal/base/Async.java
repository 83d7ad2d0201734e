package io.dgen.internal.base;

import io.dgen.backend.Futures;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.function.BiFunction;
import java.util.function.Function;

/**
 * The one rule by which the runtime's asynchronous steps continue: a step whose input is ready runs
 * at once in the current thread (no hand-off, no stack of callbacks on the backend's threads); one
 * whose input is not ready yet runs on the runtime's executor when the input completes. So no
 * thread waits on I/O, and callbacks never run on the backend's threads.
 */
public final class Async {

  private Async() {}

  /**
   * Continues {@code input} with {@code step}: in this thread if {@code input} is done, else on
   * {@code executor} once it completes. A failed input, or a step that throws (an {@link Error}
   * too, as {@link CompletableFuture} would capture it), yields a failed future; the step does not
   * run on a failed input.
   */
  public static <T, U> CompletableFuture<U> then(
      CompletableFuture<T> input,
      Executor executor,
      Function<? super T, ? extends CompletableFuture<U>> step) {
    if (!input.isDone()) {
      return input.thenComposeAsync(step, executor);
    }
    try {
      return step.apply(input.join());
    } catch (Throwable e) {
      return CompletableFuture.failedFuture(Futures.unwrap(e));
    }
  }

  /** Like {@link #then} for a step that returns its value directly. */
  public static <T, U> CompletableFuture<U> thenApply(
      CompletableFuture<T> input, Executor executor, Function<? super T, ? extends U> step) {
    return then(input, executor, v -> CompletableFuture.completedFuture(step.apply(v)));
  }

  /**
   * Continues {@code input}, whether it succeeded or failed, with {@code step} (which gets the
   * value or the failure): in this thread if {@code input} is done, else on {@code executor}.
   */
  public static <T, U> CompletableFuture<U> whenDone(
      CompletableFuture<T> input,
      Executor executor,
      BiFunction<? super T, ? super Throwable, ? extends CompletableFuture<U>> step) {
    BiFunction<T, Throwable, CompletableFuture<U>> s = (v, e) -> step.apply(v, e);
    CompletableFuture<CompletableFuture<U>> next =
        input.isDone() ? input.handle(s) : input.handleAsync(s, executor);
    return next.thenCompose(f -> f);
  }
}
