package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.TestServer.Add;
import io.dgen.TestServer.AddAndGet;
import io.dgen.TestServer.Get;
import io.dgen.TestServer.Init;
import io.dgen.TestServer.Msg;
import io.dgen.admin.ServerControl;
import io.dgen.internal.keys.Buckets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import org.junit.jupiter.api.Test;

/**
 * Watches count against the client's limit (10,000 on FoundationDB) until they fire or are
 * cancelled: a watch replaced without being cancelled is a slot lost for good. An idle runtime
 * holds one per bucket its processes live in (the bucket's bell, which also rings its timers),
 * however many times its consumers parked and woke, its timers fired, or its calls timed out; a
 * closed runtime holds none.
 */
class WatchLeakTest extends RuntimeTestBase {

  /** The watches an idle runtime holds for these processes: one per bucket they live in. */
  private long idleWatches(ServerRef<?>... processes) {
    Buckets buckets = Buckets.of(tenant.bucketCount());
    return Arrays.stream(processes).mapToInt(p -> buckets.of(p.tuid())).distinct().count();
  }

  @Test
  void manyWakeUpsAndTimedOutCalls_leaveNoSpareWatches() {
    // consumeK 2: every call is queued, so each one wakes the parked consumer and parks it again
    ProcessRef<Msg> ref = start(b -> b.consumeK(2));
    ServerRef<Msg> deaf =
        dgen.start(
            new TestServer(hooks),
            new Init(0, Tuple.from("deaf"), null),
            StartOptions.builder(tenant).consume(false).build());
    assertThat(ref.<Long>call(new Get())).isZero();
    long idle = idleWatches(ref, deaf);
    await().atMost(Duration.ofSeconds(30)).until(() -> pendingWatches() == idle);

    for (int i = 1; i <= 200; i++) {
      ref.cast(new Add(1));
      assertThat(ref.<Long>call(new Get())).isEqualTo(i);
      if (i % 20 == 0) {
        ref.castAfter(new Add(0), Duration.ofMillis(1)); // rings the bucket's timers, and fires
      }
    }
    List<CompletableFuture<Long>> calls = new ArrayList<>();
    for (int i = 0; i < 50; i++) {
      calls.add(deaf.callAsync(new Get(), Duration.ofMillis(50)));
    }
    for (CompletableFuture<Long> call : calls) {
      assertThat(call)
          .failsWithin(Duration.ofSeconds(30))
          .withThrowableOfType(ExecutionException.class)
          .withCauseInstanceOf(CallTimeoutException.class);
    }

    await().atMost(Duration.ofSeconds(30)).until(() -> pendingWatches() == idle);
  }

  @Test
  void aClosedRuntime_holdsNoWatches() {
    ProcessRef<Msg> ref = start();
    ref.castAfter(new Add(1), Duration.ofMillis(1));
    awaitTotal(ref, 1);
    await().atMost(Duration.ofSeconds(30)).until(() -> pendingWatches() == idleWatches(ref));

    dgen.close();

    await().atMost(Duration.ofSeconds(30)).until(() -> pendingWatches() == 0);
  }

  /**
   * A runtime that touched many tenants must not keep their watches (one per bucket used; 10,000 is
   * FoundationDB's default limit per client) once their processes stopped; a later start in one of
   * them works, and watches again.
   */
  @Test
  void aTenantsWatches_areReleasedWithItsLastProcess_andComeBackWithTheNextStart() {
    List<ProcessRef<Msg>> refs = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      Tenant t = otherTenant();
      ProcessRef<Msg> ref =
          dgen.start(new TestServer(hooks), null, StartOptions.builder(t).build());
      ref.castAfter(new Add(1), Duration.ofMillis(1)); // the bucket's timers fire too
      awaitTotal(ref, 1);
      refs.add(ref);
    }
    await().atMost(Duration.ofSeconds(30)).until(() -> pendingWatches() == refs.size());

    refs.forEach(ProcessRef::stop);
    await().atMost(Duration.ofSeconds(30)).until(() -> pendingWatches() == 0);

    ServerRef<Msg> again =
        dgen.start(new TestServer(hooks), null, StartOptions.builder(refs.get(0).tenant()).build());
    again.cast(new Add(1));
    awaitTotal(again, 2);
    await().atMost(Duration.ofSeconds(30)).until(() -> pendingWatches() == idleWatches(again));
  }

  /** A call that waits keeps its bucket's doorbell although its process stopped meanwhile. */
  @Test
  void aCallThatOutlivesItsProcess_keepsItsTenantsDoorbell_untilItsReplyComes() throws Exception {
    ProcessRef<Msg> caller = start(b -> b.consume(false));
    CompletableFuture<Long> call = caller.callAsync(new AddAndGet(5), Duration.ofSeconds(30));
    await().atMost(Duration.ofSeconds(10)).until(() -> ServerControl.of(caller).queueLength() == 1);
    caller.stop(); // the tenant's last process here; the call still waits

    try (DGen other = DGen.builder(backend).build()) {
      ProcessRef<Msg> consumer =
          other.start(
              new TestServer(hooks),
              null,
              StartOptions.builder(other.tenant(tenant.path().toArray(String[]::new)))
                  .consumeK(2)
                  .build());
      assertThat(call.get(30, java.util.concurrent.TimeUnit.SECONDS)).isEqualTo(5);
      consumer.stop();
    }
    await().atMost(Duration.ofSeconds(30)).until(() -> pendingWatches() == 0);
  }

  /**
   * Processes of one tenant start and stop from several threads while others use the tenant: a
   * start racing the last stop must get a doorbell that works (its consumer is woken by pushes, so
   * its calls are answered), never one being closed; and nothing is left once all stopped.
   */
  @Test
  void startsAndStopsInOneTenantFromManyThreads_alwaysGetAWorkingDoorbell() throws Exception {
    Tenant shared = otherTenant();
    java.util.concurrent.ExecutorService pool =
        java.util.concurrent.Executors.newFixedThreadPool(4);
    try {
      List<java.util.concurrent.Future<?>> runs = new ArrayList<>();
      for (int thread = 0; thread < 4; thread++) {
        int id = thread;
        runs.add(
            pool.submit(
                () -> {
                  for (int i = 0; i < 15; i++) {
                    ProcessRef<Msg> ref =
                        dgen.start(
                            new TestServer(hooks),
                            new Init(0, Tuple.from("racer", id, i), null),
                            StartOptions.builder(shared).consumeK(2).build());
                    assertThat(ref.<Long>call(new AddAndGet(1), Duration.ofSeconds(30)))
                        .isEqualTo(1);
                    ref.stop();
                  }
                  return null;
                }));
      }
      for (java.util.concurrent.Future<?> run : runs) {
        run.get(5, java.util.concurrent.TimeUnit.MINUTES);
      }
    } finally {
      pool.shutdownNow();
    }
    await().atMost(Duration.ofSeconds(30)).until(() -> pendingWatches() == 0);
  }

  private final List<Tenant> others = new ArrayList<>();

  private Tenant otherTenant() {
    Tenant t = dgen.tenant("test", java.util.UUID.randomUUID().toString());
    others.add(t);
    return t;
  }

  @org.junit.jupiter.api.AfterEach
  void removeOtherTenants() {
    for (Tenant t : others) {
      backend.removeDirectory(t.path().toArray(String[]::new));
    }
  }
}
