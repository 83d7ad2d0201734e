package io.dgen;

import io.dgen.backend.Backend;
import io.dgen.backend.fdb.FdbTestEnvironment;
import java.util.concurrent.ForkJoinPool;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * {@link AsyncApiTest} on FoundationDB, whose client runs its callbacks on a bounded pool of four
 * threads: fdb-java's default pool grows with the completions in flight (about 30 threads for a
 * thousand casts at once), which is why {@code docs/async.md} tells a service to give the backend a
 * bounded executor.
 */
@ExtendWith(FdbTestEnvironment.class)
class FdbAsyncApiTest extends AsyncApiTest {

  private static final ForkJoinPool CALLBACKS = new ForkJoinPool(4);

  @Override
  Backend newBackend() {
    return FdbTestEnvironment.builder().executor(CALLBACKS).open();
  }
}
