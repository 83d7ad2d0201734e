package io.dgen.backend.fdb;

import io.dgen.backend.Backend;
import io.dgen.backend.BackendConformanceTest;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The backend conformance suite on a real FoundationDB (see {@link FdbTestEnvironment}); skipped,
 * with the reason, where none is available. FoundationDB cannot fail on demand, so the suite's
 * fault-injected cases run through a {@link io.dgen.backend.FaultInjectingBackend} around it.
 */
@ExtendWith(FdbTestEnvironment.class)
class FdbBackendConformanceTest extends BackendConformanceTest {

  @Override
  protected Backend newBackend() {
    return FdbTestEnvironment.openBackend();
  }

  @Override
  protected Backend newBackendWithMaxWatches(int max) {
    return FdbTestEnvironment.builder().maxWatches(max).open();
  }
}
