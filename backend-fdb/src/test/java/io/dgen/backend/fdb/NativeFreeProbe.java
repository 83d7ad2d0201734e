package io.dgen.backend.fdb;

import com.apple.foundationdb.FDBException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;

/**
 * Everything a program can do with the backend's classes without opening a real backend: run by
 * {@link NativeLibraryIsolationTest} in a class loader of its own, which then checks that the
 * native client's entry class {@code FDB} was never loaded.
 */
public final class NativeFreeProbe implements Runnable {

  /** Creates the probe; called reflectively. */
  public NativeFreeProbe() {}

  @Override
  public void run() {
    FdbBackend.Builder builder =
        FdbBackend.builder()
            .apiVersion(730)
            .maxWatches(5)
            .retryLimit(3)
            .transactionTimeout(Duration.ofSeconds(1))
            .automaticIdempotency(true)
            .executor(Runnable::run)
            .clusterFile(Path.of("/nonexistent/dgen-probe.cluster"));
    builder.settings().describe();
    try {
      builder.open();
      throw new AssertionError("opened a missing cluster file");
    } catch (IllegalArgumentException expected) {
      // the cluster file check comes before the client is loaded
    }

    FdbEncoding.addOperand(1);
    FdbEncoding.versionstampedValueParam(new byte[] {1});
    FdbEncoding.checkKey(new byte[] {1});
    FdbErrors.map(new FDBException("conflict", 1020));
    FdbErrors.clientLibraryUnavailable(new UnsatisfiedLinkError("probe"));

    // The whole adapter (backend, transaction, reads, watches, retry loop) over scripted fdb-java
    // interfaces.
    FakeFdb.FakeDatabase db = new FakeFdb.FakeDatabase();
    db.next().answer("commit", args -> CompletableFuture.failedFuture(new FDBException("x", 1020)));
    try (FdbBackend backend = new FdbBackend(db.proxy, "probe")) {
      backend.run(
          tx -> {
            tx.set(new byte[] {1}, new byte[] {2});
            tx.add(new byte[] {3}, 1);
            tx.setVersionstampedValue(new byte[] {4}, new byte[0]);
            tx.snapshot().get(new byte[] {1});
            tx.getRange(new byte[] {0}, new byte[] {9});
            return tx.watch(new byte[] {5});
          });
      backend.runAsync(tx -> CompletableFuture.completedFuture(1)).join();
    }
  }
}
