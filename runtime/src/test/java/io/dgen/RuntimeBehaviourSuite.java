package io.dgen;

import io.dgen.backend.Backend;
import org.junit.jupiter.api.Nested;

/**
 * The runtime's behaviour suite for a backend other than the default memory one: the same test
 * classes as on the memory backend, each nested here with the backend of {@link #backend()}. A
 * subclass per backend ({@link FdbRuntimeBehaviourTest}, {@link RocksDbRuntimeBehaviourTest})
 * supplies it; JUnit runs the nested classes once per subclass. Fault injection and cost counters
 * come from the decorators {@link RuntimeTestBase} puts around every backend, so those tests run
 * everywhere. {@code TimeLimitTest} (the runtime's own clock) and {@code IdleCostTest} (10,000
 * servers in one JVM) run on the memory backend only.
 */
abstract class RuntimeBehaviourSuite {

  /**
   * A new backend for one test; the test closes it.
   *
   * @return an open backend
   */
  abstract Backend backend();

  @Nested
  class Lifecycle extends LifecycleTest {
    @Override
    Backend newBackend() {
      return backend();
    }
  }

  @Nested
  class GroupCommit extends GroupCommitTest {
    @Override
    Backend newBackend() {
      return backend();
    }
  }

  @Nested
  class ConsumeGroups extends ConsumeGroupsTest {
    @Override
    Backend newBackend() {
      return backend();
    }
  }

  @Nested
  class Messaging extends MessagingTest {
    @Override
    Backend newBackend() {
      return backend();
    }
  }

  @Nested
  class Concurrency extends ConcurrencyTest {
    @Override
    Backend newBackend() {
      return backend();
    }
  }

  @Nested
  class Reliability extends ReliabilityTest {
    @Override
    Backend newBackend() {
      return backend();
    }
  }

  @Nested
  class LockMode extends LockModeTest {
    @Override
    Backend newBackend() {
      return backend();
    }
  }

  @Nested
  class Serialization extends SerializationTest {
    @Override
    Backend newBackend() {
      return backend();
    }
  }

  @Nested
  class BadInput extends BadInputTest {
    @Override
    Backend newBackend() {
      return backend();
    }
  }

  @Nested
  class StateEncoding extends StateEncodingTest {
    @Override
    Backend newBackend() {
      return backend();
    }
  }

  @Nested
  class CommitUnknownResult extends CommitUnknownResultTest {
    @Override
    Backend newBackend() {
      return backend();
    }
  }

  @Nested
  class Sweep extends SweepTest {
    @Override
    Backend newBackend() {
      return backend();
    }
  }

  @Nested
  class TransientErrors extends TransientErrorTest {
    @Override
    Backend newBackend() {
      return backend();
    }
  }

  @Nested
  class ReplyDelivery extends ReplyDeliveryTest {
    @Override
    Backend newBackend() {
      return backend();
    }
  }

  @Nested
  class SharedTypes extends SharedTypesTest {
    @Override
    Backend newBackend() {
      return backend();
    }
  }

  @Nested
  class AtomicWork extends AtomicWorkTest {
    @Override
    Backend newBackend() {
      return backend();
    }
  }

  @Nested
  class Hosting extends HostingTest {
    @Override
    Backend newBackend() {
      return backend();
    }
  }

  @Nested
  class Expiry extends ExpiryTest {
    @Override
    Backend newBackend() {
      return backend();
    }
  }

  @Nested
  class Idempotency extends IdempotencyTest {
    @Override
    Backend newBackend() {
      return backend();
    }
  }

  @Nested
  class Limits extends LimitsTest {
    @Override
    Backend newBackend() {
      return backend();
    }
  }

  @Nested
  class Timers extends TimerTest {
    @Override
    Backend newBackend() {
      return backend();
    }
  }

  @Nested
  class RecurringTimers extends RecurringTimerTest {
    @Override
    Backend newBackend() {
      return backend();
    }

    @Override
    int secondsToRun() {
      return 60; // an hour of one-second firings is the memory backend's run
    }
  }

  @Nested
  class Pause extends PauseTest {
    @Override
    Backend newBackend() {
      return backend();
    }
  }

  @Nested
  class KillAcrossRuntimes extends KillAcrossRuntimesTest {
    @Override
    Backend newBackend() {
      return backend();
    }
  }

  @Nested
  class WatchLeaks extends WatchLeakTest {
    @Override
    Backend newBackend() {
      return backend();
    }
  }

  @Nested
  class LimitErrors extends LimitErrorTest {
    @Override
    Backend newBackend() {
      return backend();
    }
  }

  @Nested
  class MaybeCommitted extends MaybeCommittedTest {
    @Override
    Backend newBackend() {
      return backend();
    }
  }

  @Nested
  class OperationTimeouts extends OperationTimeoutTest {
    @Override
    Backend newBackend() {
      return backend();
    }
  }

  @Nested
  class Evolution extends EvolutionTest {
    @Override
    Backend newBackend() {
      return backend();
    }
  }

  @Nested
  class FieldEvolution extends FieldEvolutionTest {
    @Override
    Backend newBackend() {
      return backend();
    }
  }

  @Nested
  class UserErrors extends UserErrorTest {
    @Override
    Backend newBackend() {
      return backend();
    }
  }

  @Nested
  class CallTimeouts extends CallTimeoutTest {
    @Override
    Backend newBackend() {
      return backend();
    }
  }

  @Nested
  class ReadLatency extends ReadLatencyTest {
    @Override
    Backend newBackend() {
      return backend();
    }
  }

  @Nested
  class Tracing extends TracingTest {
    @Override
    Backend newBackend() {
      return backend();
    }
  }

  @Nested
  class CommitMarkerBound extends CommitMarkerBoundTest {
    @Override
    Backend newBackend() {
      return backend();
    }
  }

  @Nested
  class TerminalErrors extends TerminalErrorTest {
    @Override
    Backend newBackend() {
      return backend();
    }
  }

  @Nested
  class BackendFailures extends BackendFailureTest {
    @Override
    Backend newBackend() {
      return backend();
    }
  }
}
