package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.TestServer.Add;
import io.dgen.TestServer.AddAndGet;
import io.dgen.TestServer.Get;
import io.dgen.TestServer.Init;
import io.dgen.TestServer.Msg;
import io.dgen.TestServer.Stop;
import io.dgen.admin.ServerControl;
import io.dgen.backend.KeyValue;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class LifecycleTest extends RuntimeTestBase {

  private ProcessRef<Msg> startWith(long total, boolean reset) {
    return dgen.start(
        new TestServer(hooks),
        new Init(total, null, null),
        StartOptions.builder(tenant).reset(reset).build());
  }

  @Test
  void start_storedStateWinsOverInitialState() {
    ProcessRef<Msg> first = startWith(5, false);
    first.cast(new Add(2));
    awaitTotal(first, 7);
    first.stop();

    ServerRef<Msg> second = startWith(100, false);
    assertThat(total(second)).isEqualTo(7);
  }

  @Test
  void start_withReset_replacesStoredState() {
    ProcessRef<Msg> first = startWith(5, false);
    first.stop();
    ServerRef<Msg> second = startWith(100, true);
    assertThat(total(second)).isEqualTo(100);
  }

  @Test
  void init_customTuid_isTheServersIdentity() {
    Tuple tuid = Tuple.from("account", 42L);
    ServerRef<Msg> a =
        dgen.start(
            new TestServer(hooks), new Init(1, tuid, null), StartOptions.builder(tenant).build());
    ServerRef<Msg> other = start();
    assertThat((Object) a.tuid()).isEqualTo(tuid);
    assertThat((Object) other.tuid())
        .isEqualTo(Tuple.from("dgen_server", TestServer.class.getName()));
    a.cast(new Add(10));
    awaitTotal(a, 11);
    assertThat(total(other)).isZero();
  }

  @Test
  void init_error_refusesTheStartWithTheReason() {
    assertThatThrownBy(
            () ->
                dgen.start(
                    new TestServer(hooks),
                    new Init(0, null, "not today"),
                    StartOptions.builder(tenant).build()))
        .isInstanceOf(DGenException.class)
        .hasMessageContaining("not today");
  }

  @Test
  void name_registersForWhereis_andIsReleasedOnStop() {
    ProcessRef<Msg> ref = start(b -> b.name("counter"));
    assertThat(dgen.<Msg>whereis("counter")).containsSame(ref);
    assertThatThrownBy(() -> start(b -> b.name("counter")))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("counter");
    ref.stop();
    assertThat(dgen.whereis("counter")).isEmpty();
  }

  @Test
  void publishOnlyProcess_queuesUntilAConsumerStarts() {
    ProcessRef<Msg> publisher = start(b -> b.consume(false));
    publisher.cast(new Add(3));
    publisher.cast(new Add(4));
    assertThat(ServerControl.of(publisher).queueLength()).isEqualTo(2);
    assertThat(total(publisher)).isZero();

    ServerRef<Msg> consumer = start();
    awaitTotal(consumer, 7);
    assertThat(ServerControl.of(publisher).queueLength()).isZero();
  }

  @Test
  void stateOutlivesTheProcess_andASecondDGenSeesTheSameServer() {
    ProcessRef<Msg> ref = start();
    ref.cast(new Add(41));
    awaitTotal(ref, 41);
    ref.stop();
    assertThatThrownBy(() -> ref.cast(new Add(1))).isInstanceOf(ServerStoppedException.class);

    try (DGen other = DGen.builder(backend).build()) {
      Tenant same = other.existingTenant(tenant.path().toArray(String[]::new));
      ServerRef<Msg> again =
          other.start(new TestServer(hooks), null, StartOptions.builder(same).build());
      assertThat(again.<Long>call(new AddAndGet(1))).isEqualTo(42);
    }
  }

  @Test
  void resultStop_commitsTheStateThenStopsTheProcess() {
    ProcessRef<Msg> ref = start();
    ref.cast(new Stop("done"));
    org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> !ref.isAlive());
    ServerRef<Msg> again = start();
    assertThat(total(again)).isEqualTo(1);
  }

  @Test
  void kill_deletesStateQueueAndReplySlots_andFailsWaitingCallers() {
    ProcessRef<Msg> publisher = start(b -> b.consume(false));
    publisher.cast(new Add(1));
    var pending = publisher.<Long>callAsync(new Get(), Duration.ofSeconds(10));
    ServerControl.of(publisher).kill("test");

    assertThat(publisher.isAlive()).isFalse();
    assertThat(pending)
        .failsWithin(Duration.ofSeconds(10))
        .withThrowableOfType(java.util.concurrent.ExecutionException.class)
        .withCauseInstanceOf(ServerStoppedException.class);
    var root = tenant.subspace().subspace(publisher.tuid());
    List<KeyValue> rows = backend.run(tx -> tx.getRange(root.range().begin, root.range().end));
    assertThat(rows).isEmpty();
  }

  @Test
  void stop_isIdempotent_andRefusesFurtherMessages() {
    ProcessRef<Msg> ref = start();
    ref.stop();
    ref.stop();
    assertThatThrownBy(() -> ref.call(new Get()))
        .isInstanceOf(ServerStoppedException.class)
        .hasMessageContaining("tuid=");
    assertThatThrownBy(() -> ref.priorityCall(new Get()))
        .isInstanceOf(ServerStoppedException.class);
    assertThatThrownBy(ServerControl.of(ref)::queueLength)
        .isInstanceOf(ServerStoppedException.class);
  }

  @Test
  void close_waitsForTheBatchesInFlight() {
    ProcessRef<Msg> ref = start();
    hooks.poisoned.set(false);
    faults().commitLatency(Duration.ofMillis(500));
    ref.cast(new TestServer.Poison("in-flight"));
    // the callback has run; its batch's commit waits half a second
    await().atMost(Duration.ofSeconds(30)).until(() -> hooks.attempts.containsKey("in-flight"));

    dgen.close();

    faults().commitLatency(Duration.ZERO);
    try (DGen after = DGen.builder(backend).build()) {
      ServerRef<Msg> reader =
          after.start(
              new TestServer(hooks),
              null,
              StartOptions.builder(after.tenant(tenant.path().toArray(String[]::new)))
                  .consume(false)
                  .build());
      assertThat(total(reader)).as("committed before close returned").isEqualTo(1);
    }
  }

  @Test
  void close_failsTheCallsStillWaiting() {
    ProcessRef<Msg> publisher = start(b -> b.consume(false)); // nobody consumes: no reply comes
    CompletableFuture<Long> call = publisher.callAsync(new AddAndGet(1), Duration.ofMinutes(10));
    await()
        .atMost(Duration.ofSeconds(30))
        .until(() -> ServerControl.of(publisher).queueLength() == 1);

    dgen.close();

    assertThatThrownBy(() -> call.get(10, TimeUnit.SECONDS))
        .hasCauseInstanceOf(ServerStoppedException.class);
  }
}
