package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.TestServer.Add;
import io.dgen.TestServer.AddAndGet;
import io.dgen.TestServer.Init;
import io.dgen.TestServer.Msg;
import io.dgen.admin.DGenAdmin;
import io.dgen.admin.ServerAdmin;
import io.dgen.admin.ServerControl;
import io.dgen.admin.TenantAdmin;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * No operation blocks forever: on a cluster that does not answer (every transaction waits longer
 * for its read version than the operation timeout), {@code cast}, the push of a {@code call},
 * {@code kill} and the admin calls fail after the operation timeout with {@link
 * OperationTimeoutException}, naming the server and the timeout.
 */
class OperationTimeoutTest extends RuntimeTestBase {

  private static final Duration TIMEOUT = Duration.ofMillis(300);

  /** How long the unreachable cluster makes every transaction wait: far beyond the timeout. */
  private static final Duration UNREACHABLE = Duration.ofSeconds(3);

  /** Well under {@link #UNREACHABLE}: the operation gave up, it did not wait the cluster out. */
  private static final Duration GAVE_UP_WITHIN = Duration.ofMillis(2_000);

  private static final Tuple ORDERS = Tuple.from("orders", 7L);

  @Override
  DGen newDGen() {
    return DGen.builder(backend)
        .retryBackoff(Duration.ofMillis(1), Duration.ofMillis(50))
        .operationTimeout(TIMEOUT)
        .build();
  }

  @AfterEach
  void reachableAgain() {
    faults().reset();
  }

  private ProcessRef<Msg> startOrders(boolean consume) {
    return dgen.start(
        new TestServer(hooks),
        new Init(0, ORDERS, null),
        StartOptions.builder(tenant).consume(consume).build());
  }

  private void unreachable() {
    faults().readVersionLatency(UNREACHABLE);
  }

  /** Runs {@code op}, which must fail with the timeout in time, naming the server. */
  private static void assertTimesOut(ThrowingCallable op, String operation, String server) {
    long start = System.nanoTime();
    assertThatThrownBy(op)
        .isInstanceOf(OperationTimeoutException.class)
        .hasMessageContaining(operation)
        .hasMessageContaining(server)
        .hasMessageContaining("timeout=" + TIMEOUT);
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(GAVE_UP_WITHIN);
  }

  @Test
  void castOnAnUnreachableCluster_failsAfterTheOperationTimeout_namingTheServer() {
    ProcessRef<Msg> ref = startOrders(false);
    unreachable();

    assertTimesOut(() -> ref.cast(new Add(1)), "cast", "tuid=(\"orders\", 7)");
    assertTimesOut(() -> ref.castAll(List.of(new Add(1))), "cast", "tuid=(\"orders\", 7)");
    assertTimesOut(
        () -> ref.castAfter(new Add(1), Duration.ofHours(1)), "castAfter", "tuid=(\"orders\", 7)");
    assertTimesOut(
        () -> ref.castEvery(new Add(1), Duration.ofHours(1)), "castEvery", "tuid=(\"orders\", 7)");
  }

  @ParameterizedTest(name = "consume={0}")
  @ValueSource(booleans = {false, true})
  void callOnAnUnreachableCluster_failsAfterTheOperationTimeout_namingTheServer(boolean consume) {
    ProcessRef<Msg> ref = startOrders(consume); // consume: an inline call; else a queued one
    unreachable();

    assertTimesOut(
        () -> ref.call(new AddAndGet(1), Duration.ofSeconds(30)), "call", "tuid=(\"orders\", 7)");
    CompletableFuture<Long> async = ref.callAsync(new AddAndGet(1), Duration.ofSeconds(30));
    assertThatThrownBy(() -> async.get(GAVE_UP_WITHIN.toMillis(), TimeUnit.MILLISECONDS))
        .isInstanceOf(ExecutionException.class)
        .cause()
        .isInstanceOf(OperationTimeoutException.class)
        .hasMessageContaining("tuid=(\"orders\", 7)");
  }

  @Test
  void keyedPushesAndSubmitOnAnUnreachableCluster_failAfterTheOperationTimeout() {
    ProcessRef<Msg> ref = startOrders(false);
    unreachable();

    assertTimesOut(() -> ref.cast(new Add(1), "key-1"), "cast", "tuid=(\"orders\", 7)");
    assertTimesOut(
        () -> ref.call(new AddAndGet(1), "key-2", Duration.ofSeconds(30)),
        "call",
        "tuid=(\"orders\", 7)");
    assertTimesOut(() -> ref.submit(new Add(1)), "submit", "tuid=(\"orders\", 7)");
  }

  @Test
  void managementCallsOnAnUnreachableCluster_failAfterTheOperationTimeout() {
    ProcessRef<Msg> ref = startOrders(false);
    String timer = ref.castAfter(new Add(1), Duration.ofHours(1));
    String noSuchDeadLetter = "00000000000000000000000a";
    unreachable();

    String server = "tuid=(\"orders\", 7)";
    assertTimesOut(ServerControl.of(ref)::queueLength, "queueLength", server);
    assertTimesOut(() -> ref.cancelTimer(timer), "cancelTimer", server);
    assertTimesOut(ServerControl.of(ref)::deadLetters, "deadLetters", server);
    assertTimesOut(
        () -> ServerControl.of(ref).requeueDeadLetter(noSuchDeadLetter, true), "requeue", server);
    assertTimesOut(
        () -> ServerControl.of(ref).purgeDeadLetter(noSuchDeadLetter), "purgeDeadLetter", server);
    assertTimesOut(ServerControl.of(ref)::purgeDeadLetters, "purgeDeadLetters", server);
  }

  @Test
  void killOnAnUnreachableCluster_failsAfterTheOperationTimeout_namingTheServer() {
    ProcessRef<Msg> ref = startOrders(false);
    unreachable();

    assertTimesOut(() -> ServerControl.of(ref).kill("test"), "kill", "tuid=(\"orders\", 7)");
  }

  @Test
  void adminCallsOnAnUnreachableCluster_failAfterTheOperationTimeout_namingTheServer() {
    startOrders(false);
    DGenAdmin admin = new DGenAdmin(backend, TIMEOUT);
    TenantAdmin tenantAdmin = admin.tenant(tenant.path().toArray(String[]::new)).orElseThrow();
    ServerAdmin server = tenantAdmin.server(ORDERS).orElseThrow();
    unreachable();

    assertTimesOut(server::queueLength, "queueLength", "tuid=(\"orders\", 7)");
    assertTimesOut(server::kill, "kill", "tuid=(\"orders\", 7)");
    assertTimesOut(tenantAdmin::servers, "servers", "tenant=" + tenant.path());
    assertTimesOut(() -> admin.tenant(tenant.path().toArray(String[]::new)), "tenant", "tenant=");
    assertTimesOut(admin::tenants, "tenants", "backend=");
  }

  @Test
  void aCastFromAnAction_whoseCommitIsRetried_doesNotWaitForTheBusyWorkers() {
    // One worker, busy running the action that casts: the cast's retry must not need it.
    try (DGen oneWorker =
        DGen.builder(backend).workerThreads(1).operationTimeout(Duration.ofSeconds(20)).build()) {
      Tenant t = oneWorker.tenant(tenant.path().toArray(String[]::new));
      ServerRef<Msg> target =
          oneWorker.start(
              new TestServer(hooks),
              new Init(0, ORDERS, null),
              StartOptions.builder(t).consume(false).build());
      ServerRef<Msg> source =
          oneWorker.start(new TestServer(hooks), null, StartOptions.builder(t).build());
      hooks.actionHook =
          () -> {
            faults().failNextCommits(1); // the cast's first commit conflicts
            target.cast(new Add(1));
          };

      source.cast(new TestServer.Act(List.of("hook", "rec:forwarded")));

      org.awaitility.Awaitility.await()
          .atMost(Duration.ofSeconds(10))
          .until(() -> hooks.actions.contains("rec:forwarded@1"));
      assertThat(ServerControl.of(target).queueLength()).isEqualTo(1);
    }
  }

  @Test
  void operationTimeout_mustBePositive() {
    DGen.Builder builder = DGen.builder(backend);
    assertThatThrownBy(() -> builder.operationTimeout(Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("operationTimeout must be positive");
    assertThatThrownBy(() -> builder.operationTimeout(Duration.ofSeconds(-1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("operationTimeout must be positive");
    assertThatThrownBy(() -> new DGenAdmin(backend, Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("operationTimeout must be positive");
  }

  @Test
  void operationsOnAReachableCluster_completeWithinTheirTimeout() {
    // a bound a shared machine's FoundationDB meets (300 ms is for the unreachable cases)
    try (DGen roomy = DGen.builder(backend).operationTimeout(Duration.ofSeconds(10)).build()) {
      ProcessRef<Msg> ref =
          roomy.start(
              new TestServer(hooks),
              new Init(0, ORDERS, null),
              StartOptions.builder(roomy.tenant(tenant.path().toArray(String[]::new))).build());
      ref.cast(new Add(1));
      ref.castAll(List.of(new Add(1)));
      assertThat(ref.cast(new Add(1), "key")).isTrue();
      assertThat(ref.<Long>call(new AddAndGet(1), Duration.ofSeconds(30))).isEqualTo(4L);
      ServerControl.of(ref).kill("test");
      assertThat(ref.isAlive()).isFalse();
    }
  }

  /**
   * A timed-out blocking operation (the admin's, whose reads block) leaves its thread blocked on
   * the cluster until the backend gives up: on a cluster that does not answer, many of them must
   * not grow the JVM's threads without bound. Past the bound they queue, and past the queue they
   * fail at once, saying so.
   */
  @Test
  void blockingOperationsOnAnUnreachableCluster_holdABoundedNumberOfThreads() throws Exception {
    startOrders(false);
    ServerAdmin server =
        new DGenAdmin(backend, TIMEOUT)
            .tenant(tenant.path().toArray(String[]::new))
            .orElseThrow()
            .server(ORDERS)
            .orElseThrow();
    unreachable();
    int operations =
        io.dgen.internal.base.OperationTimeouts.MAX_BLOCKING_THREADS
            + io.dgen.internal.base.OperationTimeouts.MAX_QUEUED_OPERATIONS
            + 100;
    java.util.concurrent.ExecutorService callers =
        java.util.concurrent.Executors.newFixedThreadPool(64);
    List<Throwable> failures = new java.util.concurrent.CopyOnWriteArrayList<>();
    try {
      List<java.util.concurrent.Future<?>> kills = new java.util.ArrayList<>();
      for (int i = 0; i < operations; i++) {
        kills.add(
            callers.submit(
                () -> {
                  try {
                    server.kill();
                  } catch (RuntimeException e) {
                    failures.add(e);
                  }
                }));
      }
      for (java.util.concurrent.Future<?> kill : kills) {
        kill.get(1, TimeUnit.MINUTES);
      }
      long blocked =
          Thread.getAllStackTraces().keySet().stream()
              .filter(t -> t.getName().startsWith("dgen-operation-"))
              .count();
      assertThat(blocked)
          .isLessThanOrEqualTo(io.dgen.internal.base.OperationTimeouts.MAX_BLOCKING_THREADS);
    } finally {
      callers.shutdownNow();
    }
    assertThat(failures).hasSize(operations).allMatch(OperationTimeoutException.class::isInstance);
    assertThat(failures).anySatisfy(e -> assertThat(e).hasMessageContaining("threads are busy"));
  }
}
