package io.dgen;

import io.dgen.backend.Backend;
import io.dgen.backend.BackendException;
import io.dgen.backend.ForwardingBackend;
import io.dgen.backend.Transaction;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;

/**
 * A test's backend that can cut its runtime off: every transaction then fails; or only its blocking
 * ones ({@code run}), which are a hosting runtime's placement rounds.
 */
final class Partition extends ForwardingBackend {
  volatile boolean cut;
  volatile boolean roundsCut;

  Partition(Backend delegate) {
    super(delegate);
  }

  private void check() {
    if (cut || roundsCut) {
      throw new BackendException(
          BackendException.TRANSACTION_TIMED_OUT, "this runtime is cut off (a test's partition)");
    }
  }

  @Override
  public <T> T run(Function<? super Transaction, ? extends T> body) {
    check();
    return delegate().run(body);
  }

  @Override
  public <T> CompletableFuture<T> runAsync(
      Function<? super Transaction, ? extends CompletableFuture<? extends T>> body) {
    if (cut) {
      return CompletableFuture.failedFuture(
          new BackendException(BackendException.TRANSACTION_TIMED_OUT, "cut off"));
    }
    return delegate().runAsync(body);
  }
}
