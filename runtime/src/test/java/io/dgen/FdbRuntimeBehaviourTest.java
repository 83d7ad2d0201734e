package io.dgen;

import io.dgen.backend.Backend;
import io.dgen.backend.fdb.FdbTestEnvironment;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The runtime's behaviour suite on a real FoundationDB: the same test classes as on the memory
 * backend, each with an FdbBackend (see {@link FdbTestEnvironment}: {@code FDB_CLUSTER_FILE}, a
 * throwaway local server, or a container). Without a cluster every test is skipped with the reason;
 * with one, none may skip. Fault injection and cost counters come from the decorators {@link
 * RuntimeTestBase} puts around every backend, so those tests run here too. {@code TimeLimitTest}
 * (the runtime's own clock) and {@code IdleCostTest} (10,000 servers in one JVM) run on the memory
 * backend only.
 */
@ExtendWith(FdbTestEnvironment.class)
class FdbRuntimeBehaviourTest {

  private static Backend fdb() {
    return FdbTestEnvironment.openBackend();
  }

  @Nested
  class Lifecycle extends LifecycleTest {
    @Override
    Backend newBackend() {
      return fdb();
    }
  }

  @Nested
  class Messaging extends MessagingTest {
    @Override
    Backend newBackend() {
      return fdb();
    }
  }

  @Nested
  class Concurrency extends ConcurrencyTest {
    @Override
    Backend newBackend() {
      return fdb();
    }
  }

  @Nested
  class Reliability extends ReliabilityTest {
    @Override
    Backend newBackend() {
      return fdb();
    }
  }

  @Nested
  class LockMode extends LockModeTest {
    @Override
    Backend newBackend() {
      return fdb();
    }
  }

  @Nested
  class Serialization extends SerializationTest {
    @Override
    Backend newBackend() {
      return fdb();
    }
  }

  @Nested
  class BadInput extends BadInputTest {
    @Override
    Backend newBackend() {
      return fdb();
    }
  }

  @Nested
  class StateEncoding extends StateEncodingTest {
    @Override
    Backend newBackend() {
      return fdb();
    }
  }

  @Nested
  class CommitUnknownResult extends CommitUnknownResultTest {
    @Override
    Backend newBackend() {
      return fdb();
    }
  }

  @Nested
  class Sweep extends SweepTest {
    @Override
    Backend newBackend() {
      return fdb();
    }
  }

  @Nested
  class TransientErrors extends TransientErrorTest {
    @Override
    Backend newBackend() {
      return fdb();
    }
  }

  @Nested
  class ReplyDelivery extends ReplyDeliveryTest {
    @Override
    Backend newBackend() {
      return fdb();
    }
  }

  @Nested
  class SharedTypes extends SharedTypesTest {
    @Override
    Backend newBackend() {
      return fdb();
    }
  }

  @Nested
  class Idempotency extends IdempotencyTest {
    @Override
    Backend newBackend() {
      return fdb();
    }
  }

  @Nested
  class Timers extends TimerTest {
    @Override
    Backend newBackend() {
      return fdb();
    }
  }
}
