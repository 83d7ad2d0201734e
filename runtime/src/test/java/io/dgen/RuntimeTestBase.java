package io.dgen;

import static org.awaitility.Awaitility.await;

import io.dgen.backend.Backend;
import io.dgen.backend.BackendException;
import io.dgen.backend.CountingBackend;
import io.dgen.backend.FaultInjectingBackend;
import io.dgen.backend.ForwardingBackend;
import io.dgen.backend.fdb.FdbBackend;
import io.dgen.backend.memory.MemoryBackend;
import io.dgen.internal.ServerKeys;
import java.time.Duration;
import java.util.UUID;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

/**
 * A backend and a runtime per test, in a fresh tenant. The backend ({@link #newBackend()}: memory,
 * or FoundationDB in {@code FdbRuntimeBehaviourTest}) is wrapped in a {@link FaultInjectingBackend}
 * and, outside it, a {@link CountingBackend}, so that every test may inject faults and read cost
 * counters whatever backend it runs on.
 */
abstract class RuntimeTestBase {

  /**
   * How long a test may wait for bulk work (thousands of messages) to be applied. Generous on
   * purpose: on FoundationDB every transaction costs milliseconds, and the machine may be shared,
   * so this bounds a hang rather than measuring speed.
   */
  static final Duration BULK_WAIT = Duration.ofMinutes(5);

  /** The backend every runtime of the test uses: the decorated one. */
  Backend backend;

  private FaultInjectingBackend faults;
  private CountingBackend counting;
  DGen dgen;
  Tenant tenant;
  final TestServer.Hooks hooks = new TestServer.Hooks();

  @BeforeEach
  void setUpRuntime() {
    faults = FaultInjectingBackend.wrap(newBackend());
    counting = CountingBackend.wrap(faults);
    backend = counting;
    dgen = newDGen();
    tenant = dgen.tenant("test", UUID.randomUUID().toString());
  }

  /** The backend of each test: the memory backend, or FoundationDB in FdbRuntimeBehaviourTest. */
  Backend newBackend() {
    return MemoryBackend.builder().build();
  }

  /** Fault injection into the test's backend (forced conflicts, 1021, latency). */
  FaultInjectingBackend faults() {
    return faults;
  }

  /**
   * Makes the next commit apply but report a timeout, and the next read of the server's commit
   * markers fail too: the run that made it can never learn that it committed.
   */
  void hideTheNextCommitsOutcome(ServerKeys keys) {
    faults.failCommits(1, BackendException.TRANSACTION_TIMED_OUT, true);
    faults.failReads(
        keys.markers().range().begin,
        keys.markers().range().end,
        1,
        BackendException.TRANSACTION_TIMED_OUT);
  }

  /**
   * The cost counters of the test's backend. They count what the runtime asks of the backend,
   * including the re-run of a body after an injected {@code commit_unknown_result} as a retry.
   */
  CountingBackend.Counters counters() {
    return counting.counters();
  }

  /**
   * The watches the test's backend handed out that have not fired, failed or been cancelled: each
   * holds a slot of the client's watch limit.
   */
  int pendingWatches() {
    Backend b = backend;
    while (b instanceof ForwardingBackend f) {
      b = f.delegate();
    }
    if (b instanceof MemoryBackend m) {
      return m.pendingWatches();
    }
    if (b instanceof FdbBackend f) {
      return f.pendingWatches();
    }
    throw new IllegalStateException("no count of pending watches for " + b);
  }

  DGen newDGen() {
    return DGen.builder(backend).retryBackoff(Duration.ofMillis(1), Duration.ofMillis(50)).build();
  }

  @AfterEach
  void tearDownRuntime() {
    dgen.close();
    backend.removeDirectory(tenant.path().toArray(String[]::new));
    backend.close();
  }

  ServerRef<TestServer.Msg> start() {
    return start(b -> {});
  }

  ServerRef<TestServer.Msg> start(Consumer<StartOptions.Builder> options) {
    StartOptions.Builder b = StartOptions.builder(tenant);
    options.accept(b);
    return dgen.start(new TestServer(hooks), null, b.build());
  }

  static long total(ServerRef<TestServer.Msg> ref) {
    return ref.<Long>priorityCall(new TestServer.Get());
  }

  static void awaitTotal(ServerRef<TestServer.Msg> ref, long expected) {
    await().atMost(Duration.ofSeconds(30)).until(() -> total(ref) == expected);
  }

  static TestServer.State state(ServerRef<TestServer.Msg> ref) {
    return ref.priorityCall(new TestServer.GetState());
  }
}
