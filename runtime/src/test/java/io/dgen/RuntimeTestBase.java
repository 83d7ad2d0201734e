package io.dgen;

import static org.awaitility.Awaitility.await;

import io.dgen.backend.Backend;
import io.dgen.backend.memory.MemoryBackend;
import java.time.Duration;
import java.util.UUID;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;

/** A memory backend and a runtime per test, in a fresh tenant. */
abstract class RuntimeTestBase {

  Backend backend;
  DGen dgen;
  Tenant tenant;
  final TestServer.Hooks hooks = new TestServer.Hooks();

  @BeforeEach
  void setUpRuntime() {
    backend = newBackend();
    dgen = newDGen();
    tenant = dgen.tenant("test", UUID.randomUUID().toString());
  }

  /** The backend of each test: the memory backend, or FoundationDB in FdbRuntimeBehaviourTest. */
  Backend newBackend() {
    return MemoryBackend.builder().build();
  }

  /**
   * The memory backend, for tests that read its counters or inject faults; on another backend the
   * test is skipped with that reason.
   */
  MemoryBackend memory() {
    Assumptions.assumeTrue(
        backend instanceof MemoryBackend, "needs the memory backend's counters or fault injection");
    return (MemoryBackend) backend;
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
