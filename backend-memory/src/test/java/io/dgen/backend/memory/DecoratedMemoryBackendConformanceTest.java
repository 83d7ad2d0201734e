package io.dgen.backend.memory;

import io.dgen.backend.Backend;
import io.dgen.backend.BackendConformanceTest;
import io.dgen.backend.CountingBackend;
import io.dgen.backend.FaultInjectingBackend;
import java.time.Duration;

/**
 * Runs the backend conformance suite on {@link MemoryBackend} behind the two decorators the tests
 * and benchmarks put around every backend, {@link FaultInjectingBackend} over {@link
 * CountingBackend}: they must be transparent, and the faults the suite injects through {@code
 * FaultInjectingBackend} must behave as the memory backend's own (which {@link
 * MemoryBackendConformanceTest} checks). On FoundationDB the fault tests use the same decorator.
 */
class DecoratedMemoryBackendConformanceTest extends BackendConformanceTest {

  @Override
  protected Backend newBackend() {
    return decorate(builder().build());
  }

  @Override
  protected Backend newBackendWithMaxWatches(int max) {
    return decorate(builder().maxWatches(max).build());
  }

  private static Backend decorate(MemoryBackend memory) {
    return FaultInjectingBackend.wrap(CountingBackend.wrap(memory));
  }

  private static MemoryBackend.Builder builder() {
    return MemoryBackend.builder()
        .initialRetryDelay(Duration.ofNanos(100_000))
        .maxRetryDelay(Duration.ofMillis(2));
  }
}
