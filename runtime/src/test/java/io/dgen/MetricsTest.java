package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dgen.TestServer.Add;
import io.dgen.TestServer.Ask;
import io.dgen.TestServer.Boom;
import io.dgen.TestServer.Get;
import io.dgen.TestServer.Msg;
import io.dgen.TestServer.Work;
import io.dgen.admin.ServerControl;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Each meter of {@code DGen.Builder.meterRegistry} moves when it should (issue 16 item 1). */
class MetricsTest extends RuntimeTestBase {

  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  private final CountDownLatch gate = new CountDownLatch(1);

  @Override
  DGen newDGen() {
    return DGen.builder(backend)
        .retryBackoff(Duration.ofMillis(1), Duration.ofMillis(50))
        .meterRegistry(registry)
        .build();
  }

  @AfterEach
  void openGate() {
    gate.countDown();
  }

  private Tags tags() {
    return Tags.of("tenant", tenant.path().toString(), "server", TestServer.class.getName());
  }

  private double count(String name) {
    var c = registry.find(name).tags(tags()).counter();
    return c == null ? 0 : c.count();
  }

  private double gauge(String name, Tags tags) {
    var g = registry.find(name).tags(tags).gauge();
    return g == null ? Double.NaN : g.value();
  }

  private long calls(String route, String outcome) {
    var t =
        registry
            .find("dgen.calls")
            .tags(tags())
            .tag("route", route)
            .tag("outcome", outcome)
            .timer();
    return t == null ? 0 : t.count();
  }

  @Test
  void messagesAndBatchesAreCountedPerTenantAndBehaviour() {
    ServerRef<Msg> ref = start(b -> b.consumeK(8));
    ref.castAll(List.of(new Add(1), new Add(2), new Add(3)));
    awaitTotal(ref, 6);
    await().until(() -> count("dgen.messages.processed") == 3);

    var size = registry.find("dgen.batch.size").tags(tags()).summary();
    var time = registry.find("dgen.batch.duration").tags(tags()).timer();
    assertThat(size.totalAmount()).isEqualTo(3);
    assertThat(size.count()).isBetween(1L, 3L);
    assertThat(time.count()).isEqualTo(size.count());
    assertThat(count("dgen.messages.failed")).isZero();
    // no meter carries a tuid
    assertThat(registry.getMeters())
        .flatMap(m -> m.getId().getTags())
        .noneMatch(t -> t.getKey().equals("tuid") || t.getValue().contains("dgen_server"));
  }

  @Test
  void failuresAndDeadLettersAreCounted() {
    ServerRef<Msg> ref = start(b -> b.deadLetterThreshold(3));
    ref.cast(new Boom("no"));
    await().until(() -> count("dgen.dead.letters") == 1);
    assertThat(ServerControl.of(ref).deadLetters()).hasSize(1);
    assertThat(count("dgen.messages.failed")).isEqualTo(3);
    assertThat(count("dgen.messages.processed")).isZero();
  }

  @Test
  void callsAreTimedByRoute() {
    ServerRef<Msg> inline = start();
    assertThat(inline.<Long>call(new Get())).isZero();
    assertThat(calls("inline", "ok")).isEqualTo(1);

    ServerRef<Msg> queued = start(b -> b.consumeK(4).name("queued"));
    assertThat(queued.<Long>call(new Get())).isZero();
    assertThat(calls("queued", "ok")).isEqualTo(1);

    assertThat(queued.<Long>priorityCall(new Get())).isZero();
    assertThat(calls("priority", "ok")).isEqualTo(1);
    assertThatThrownBy(() -> queued.priorityCall(new Ask(new Boom("x"))))
        .isInstanceOf(DGenException.class);
    assertThat(calls("priority", "error")).isEqualTo(1);
    var inlineOk =
        registry
            .find("dgen.calls")
            .tags(tags())
            .tag("route", "inline")
            .tag("outcome", "ok")
            .timer();
    assertThat(inlineOk.totalTime(TimeUnit.NANOSECONDS)).isPositive();
  }

  @Test
  void locksAreCountedWhenTakenAndWhenBusted() throws Exception {
    hooks.lockGate = gate;
    ProcessRef<Msg> first = start(b -> b.lockTimeout(Duration.ofMillis(200)));
    first.cast(new Work("w"));
    assertThat(hooks.lockEntered.await(10, TimeUnit.SECONDS)).isTrue();
    assertThat(count("dgen.lock.acquisitions")).isEqualTo(1);
    assertThat(count("dgen.lock.busts")).isZero();
    first.stop(); // dies holding the lock

    ServerRef<Msg> second = start(b -> b.lockTimeout(Duration.ofMillis(200)));
    awaitTotal(second, 1000);
    assertThat(count("dgen.lock.busts")).isEqualTo(1);
    assertThat(count("dgen.lock.acquisitions")).isEqualTo(2);
  }

  @Test
  void processesQueuesAndWatchesAreGauged() {
    Tags none = Tags.empty();
    assertThat(gauge("dgen.processes", none)).isZero();
    ProcessRef<Msg> publisher = start(b -> b.consume(false));
    ProcessRef<Msg> other = start(b -> b.consume(false).name("other"));
    assertThat(gauge("dgen.processes", none)).isEqualTo(2);
    publisher.castAll(List.of(new Add(1), new Add(2), new Add(3)));
    // both processes are of one server: its queue is read once per sampled process
    assertThat(gauge("dgen.queue.sampled", tags())).isEqualTo(2);
    assertThat(gauge("dgen.queue.length", tags())).isEqualTo(6);

    other.stop();
    assertThat(gauge("dgen.processes", none)).isEqualTo(1);
    assertThat(gauge("dgen.queue.length", tags())).isEqualTo(3);

    ProcessRef<Msg> consumer = start(b -> b.name("consumer"));
    awaitTotal(consumer, 6);
    assertThat(gauge("dgen.queue.length", tags())).isZero();
    // the idle consumer waits on its bucket's doorbell, which also rings its bucket's timers
    await().until(() -> gauge("dgen.watches", none) == 1);
    consumer.stop();
    publisher.stop();
    assertThat(gauge("dgen.processes", none)).isZero();
    assertThat(gauge("dgen.queue.sampled", tags())).isZero();
  }

  @Test
  void transactionRetriesAreCountedByErrorCode() {
    ServerRef<Msg> ref = start();
    faults().failNextCommits(2);
    ref.cast(new Add(1));
    awaitTotal(ref, 1);
    var retries = registry.find("dgen.transaction.retries").tag("code", "1020").counter();
    assertThat(retries).isNotNull();
    assertThat(retries.count()).isEqualTo(2);
  }
}
