package io.dgen;

import static org.awaitility.Awaitility.await;

import io.dgen.admin.ServerControl;
import io.dgen.backend.Backend;
import io.dgen.backend.BackendException;
import io.dgen.backend.CountingBackend;
import io.dgen.backend.FaultInjectingBackend;
import io.dgen.backend.ForwardingBackend;
import io.dgen.backend.fdb.FdbBackend;
import io.dgen.backend.memory.MemoryBackend;
import io.dgen.internal.keys.ServerKeys;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.awaitility.core.ConditionTimeoutException;
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
    Backend b = store();
    if (b instanceof MemoryBackend m) {
      return m.pendingWatches();
    }
    if (b instanceof FdbBackend f) {
      return f.pendingWatches();
    }
    throw new IllegalStateException("no count of pending watches for " + b);
  }

  /** The test's backend under the counting and fault-injecting wrappers. */
  Backend store() {
    Backend b = backend;
    while (b instanceof ForwardingBackend f) {
      b = f.delegate();
    }
    return b;
  }

  /** The admin view of {@code ref}'s server, in the test's tenant, on the test's backend. */
  io.dgen.admin.ServerAdmin admin(ServerRef<?> ref) {
    return new io.dgen.admin.DGenAdmin(backend)
        .tenant(tenant.path().toArray(String[]::new))
        .orElseThrow()
        .server(ref.tuid())
        .orElseThrow();
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

  ProcessRef<TestServer.Msg> start() {
    return start(b -> {});
  }

  ProcessRef<TestServer.Msg> start(Consumer<StartOptions.Builder> options) {
    StartOptions.Builder b = StartOptions.builder(tenant);
    options.accept(b);
    return dgen.start(new TestServer(hooks), null, b.build());
  }

  static long total(ServerRef<TestServer.Msg> ref) {
    return ref.<Long>priorityCall(new TestServer.Get());
  }

  /**
   * How long {@link #awaitTotal} waits without a single message applied before it fails: a stuck or
   * lost message, not a slow drain.
   */
  static final Duration STALL_WAIT = Duration.ofSeconds(30);

  /**
   * Waits until the server's total is {@code expected}. Fails once the total has not moved for
   * {@link #STALL_WAIT} (nothing applied: a message stuck or lost) or after {@link #BULK_WAIT} in
   * all, so a slow drain on a loaded machine is waited for while it progresses. The failure says
   * how many were applied, are still queued and were dead-lettered, which tells a slow drain from a
   * lost message.
   */
  static void awaitTotal(ServerRef<TestServer.Msg> ref, long expected) {
    long start = System.nanoTime();
    long[] last = {Long.MIN_VALUE, start}; // the last total seen, and when it was first seen
    try {
      await()
          .atMost(BULK_WAIT)
          .until(
              () -> {
                long t = total(ref);
                long now = System.nanoTime();
                if (t != last[0]) {
                  last[0] = t;
                  last[1] = now;
                }
                if (t != expected && now - last[1] > STALL_WAIT.toNanos()) {
                  throw new AssertionError(
                      describeWait(
                          ref,
                          expected,
                          "nothing applied for " + STALL_WAIT.toSeconds() + " s",
                          start));
                }
                return t == expected;
              });
    } catch (ConditionTimeoutException e) {
      throw new AssertionError(
          describeWait(
              ref, expected, "still applying after " + BULK_WAIT.toMinutes() + " min", start),
          e);
    }
  }

  /** What a failed {@link #awaitTotal} found: applied, queued and dead-lettered. */
  private static String describeWait(
      ServerRef<TestServer.Msg> ref, long expected, String why, long startNanos) {
    return String.format(
        "expected a total of %d after %d ms, %s: applied %s, queued %s, dead-lettered %s",
        expected,
        TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNanos),
        why,
        orFailure(() -> total(ref)),
        orFailure(ServerControl.of(ref)::queueLength),
        orFailure(() -> ServerControl.of(ref).deadLetters().size()));
  }

  private static String orFailure(Callable<?> read) {
    try {
      return String.valueOf(read.call());
    } catch (Exception e) {
      return "unknown (" + e + ")";
    }
  }

  static TestServer.State state(ServerRef<TestServer.Msg> ref) {
    return ref.priorityCall(new TestServer.GetState());
  }
}
