package io.dgen.cli;

import io.dgen.backend.Backend;
import io.dgen.backend.CountingBackend;
import io.dgen.backend.ForwardingBackend;
import io.dgen.backend.Transaction;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

/**
 * What the dashboard is given in the tests: the test's backend, counted ({@link CountingBackend}:
 * transactions, writes, reads), with directory creation and removal counted too (CountingBackend
 * does not count directory operations), and a close that leaves the test's backend open.
 */
final class WatchedBackend {

  final CountingBackend counting;
  final AtomicInteger directoryWrites = new AtomicInteger();

  WatchedBackend(Backend backend) {
    this.counting =
        CountingBackend.wrap(
            new ForwardingBackend(backend) {
              @Override
              public <T> T run(Function<? super Transaction, ? extends T> body) {
                return backend.run(body);
              }

              @Override
              public <T> CompletableFuture<T> runAsync(
                  Function<? super Transaction, ? extends CompletableFuture<? extends T>> body) {
                return backend.runAsync(body);
              }

              @Override
              public com.apple.foundationdb.subspace.Subspace directory(String... path) {
                directoryWrites.incrementAndGet();
                return backend.directory(path);
              }

              @Override
              public boolean removeDirectory(String... path) {
                directoryWrites.incrementAndGet();
                return backend.removeDirectory(path);
              }

              @Override
              public void close() {}
            });
  }

  /** Writing commits plus directories created or removed: what "no write" means. */
  long writes() {
    return counting.counters().transactionsCommitted() + directoryWrites.get();
  }
}
