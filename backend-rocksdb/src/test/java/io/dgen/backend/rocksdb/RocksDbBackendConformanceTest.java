package io.dgen.backend.rocksdb;

import io.dgen.backend.Backend;
import io.dgen.backend.BackendConformanceTest;
import io.dgen.backend.Faults;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.io.TempDir;

/**
 * Runs the backend conformance suite on {@link RocksDbBackend}, each backend in a fresh data
 * directory with every commit synced, and every optional hook enabled (the engine's fault
 * injection, a manual clock, a configurable watch limit). No test may be skipped here.
 */
class RocksDbBackendConformanceTest extends BackendConformanceTest {

  @TempDir Path root;

  private final AtomicInteger opened = new AtomicInteger();

  /** The backends' clock: it moves only when a test advances it. */
  private final AtomicLong nanos = new AtomicLong();

  @Override
  protected Backend newBackend() {
    return open(-1);
  }

  @Override
  protected Backend newBackendWithMaxWatches(int max) {
    return open(max);
  }

  private RocksDbBackend open(int maxWatches) {
    return RocksDbBackend.builder(root.resolve("db" + opened.incrementAndGet()))
        .engine(
            b -> {
              b.ticker(nanos::get)
                  .initialRetryDelay(Duration.ofNanos(100_000))
                  .maxRetryDelay(Duration.ofMillis(2));
              if (maxWatches >= 0) {
                b.maxWatches(maxWatches);
              }
            })
        .open();
  }

  @Override
  protected Optional<Faults> faults(Backend backend) {
    RocksDbBackend rocks = (RocksDbBackend) backend;
    return Optional.of(
        new Faults() {
          @Override
          public void failNextCommits(int n) {
            rocks.faults().failNextCommits(n);
          }

          @Override
          public void commitUnknownResult(int n, boolean applied) {
            rocks.faults().commitUnknownResult(n, applied);
          }

          @Override
          public void advanceClock(Duration d) {
            nanos.addAndGet(d.toNanos());
          }
        });
  }
}
