package io.dgen.backend.memory;

import io.dgen.backend.Backend;
import io.dgen.backend.BackendConformanceTest;
import io.dgen.backend.Faults;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Runs the backend conformance suite on {@link MemoryBackend}, with every optional hook enabled:
 * fault injection, a manual clock and a configurable watch limit. No test may be skipped here.
 */
class MemoryBackendConformanceTest extends BackendConformanceTest {

  /** The backends' clock: it moves only when a test advances it, so no attempt ages by itself. */
  private final AtomicLong nanos = new AtomicLong();

  @Override
  protected Backend newBackend() {
    return builder().build();
  }

  @Override
  protected Backend newBackendWithMaxWatches(int max) {
    return builder().maxWatches(max).build();
  }

  @Override
  protected Optional<Faults> faults(Backend backend) {
    MemoryBackend memory = (MemoryBackend) backend;
    return Optional.of(
        new Faults() {
          @Override
          public void failNextCommits(int n) {
            memory.faults().failNextCommits(n);
          }

          @Override
          public void commitUnknownResult(int n, boolean applied) {
            memory.faults().commitUnknownResult(n, applied);
          }

          @Override
          public void advanceClock(Duration d) {
            nanos.addAndGet(d.toNanos());
          }
        });
  }

  private MemoryBackend.Builder builder() {
    // Short backoff keeps the contended multi-threaded cases fast; the rule is still
    // FoundationDB's.
    return MemoryBackend.builder()
        .ticker(nanos::get)
        .initialRetryDelay(Duration.ofNanos(100_000))
        .maxRetryDelay(Duration.ofMillis(2));
  }
}
