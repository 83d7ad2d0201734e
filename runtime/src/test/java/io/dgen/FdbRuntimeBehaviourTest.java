package io.dgen;

import io.dgen.backend.Backend;
import io.dgen.backend.fdb.FdbTestEnvironment;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The runtime's behaviour suite on a real FoundationDB: the same test classes as on the memory
 * backend, each with an FdbBackend (see {@link FdbTestEnvironment}: {@code FDB_CLUSTER_FILE}, or a
 * container when Docker is available). Without a cluster every test is skipped with the reason.
 * Tests that need the memory backend's counters or fault injection skip themselves here.
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
}
