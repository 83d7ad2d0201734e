package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dgen.TestServer.Add;
import io.dgen.TestServer.Msg;
import io.dgen.TestServer.Seq;
import io.dgen.admin.ServerControl;
import io.dgen.backend.CountingBackend;
import io.dgen.backend.memory.MemoryBackend;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

class ConcurrencyTest extends RuntimeTestBase {

  @Test
  void fourConsumersAndFourPublishers_applyEveryCastOnce_inEachPublishersOrder() throws Exception {
    List<ProcessRef<Msg>> consumers = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      consumers.add(start());
    }
    ServerRef<Msg> publisher = start(b -> b.consume(false));
    int perPublisher = 2_500;
    ExecutorService pool = Executors.newFixedThreadPool(4);
    try {
      CountDownLatch go = new CountDownLatch(1);
      List<Future<?>> sent = new ArrayList<>();
      for (int p = 0; p < 4; p++) {
        String name = "p" + p;
        sent.add(
            pool.submit(
                () -> {
                  go.await();
                  for (long seq = 1; seq <= perPublisher; seq++) {
                    publisher.cast(new Seq(name, seq));
                  }
                  return null;
                }));
      }
      go.countDown();
      for (Future<?> f : sent) {
        f.get(BULK_WAIT.toSeconds(), TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
    }
    // Not a speed target: a liveness bound. On the memory backend draining takes 1 to 10 s, also
    // on a loaded machine. Consumers that backed off after every cache miss could fall into taking
    // turns, each missing after the others' writes and sleeping 50 ms: 10,000 messages then took
    // 100 to 130 s. On a real store (FoundationDB: 20 to 40 s) the bound stays the bulk one.
    Duration drain = store() instanceof MemoryBackend ? Duration.ofSeconds(60) : BULK_WAIT;
    await().atMost(drain).until(() -> total(publisher) == 10_000);
    TestServer.State s = state(publisher);
    assertThat(s.outOfOrder()).isZero();
    assertThat(s.lastSeq())
        .containsOnlyKeys("p0", "p1", "p2", "p3")
        .allSatisfy((k, v) -> assertThat(v).isEqualTo(2_500L));
    assertThat(ServerControl.of(publisher).queueLength()).isZero();
    consumers.forEach(c -> assertThat(c.isAlive()).isTrue());
  }

  @Test
  void pushes_neverAbortTheConsumersBatches() throws Exception {
    ServerRef<Msg> consumer = start();
    ServerRef<Msg> publisher = start(b -> b.consume(false));
    CountingBackend.Counters before = counters();
    AtomicBoolean stop = new AtomicBoolean();
    Thread pusher =
        new Thread(
            () -> {
              while (!stop.get()) {
                publisher.cast(new Add(1));
              }
            });
    pusher.start();
    await().atMost(BULK_WAIT).until(() -> total(consumer) >= 3_000);
    stop.set(true);
    pusher.join();
    CountingBackend.Counters used = counters().minus(before);
    // Every transaction here is a push, a consumer batch or a priority read; none may conflict,
    // and every conflict would be retried.
    assertThat(used.transactionsRetried()).isZero();
  }

  /** Rows read while a consumer with or without a cache drains 100 casts after a first one. */
  private CountingBackend.Counters drainHundredCasts(boolean cache) {
    ServerRef<Msg> publisher = start(b -> b.consume(false));
    ServerRef<Msg> consumer = start(b -> b.consumeK(1).cache(cache));
    publisher.cast(new Add(1));
    awaitTotal(publisher, 1); // with a cache, it is warm now
    CountingBackend.Counters before = counters();
    publisher.castAll(Collections.nCopies(100, new Add(1)));
    await()
        .atMost(Duration.ofSeconds(30))
        .until(() -> ServerControl.of(publisher).queueLength() == 0);
    CountingBackend.Counters used = counters().minus(before);
    assertThat(total(consumer)).isEqualTo(101);
    return used;
  }

  @Test
  void warmCache_consumerDoesNotReadTheStateRange() {
    // one queue peek per message plus the final empty peek (and slack for a late wake-up):
    // no state range read
    assertThat(drainHundredCasts(true).rangesRead()).isLessThanOrEqualTo(101 + 2);
  }

  @Test
  void coldCache_readsTheStateRangeEveryBatch() {
    assertThat(drainHundredCasts(false).rangesRead()).isGreaterThanOrEqualTo(200);
  }

  @Test
  void throwingCallback_neverKillsTheConsumer_itBacksOffAndRetries_andSaysSo() {
    // slf4j-simple writes to the current System.out (simplelogger.properties): capture it
    PrintStream original = System.out;
    ByteArrayOutputStream log = new ByteArrayOutputStream();
    System.setOut(new PrintStream(log, true, StandardCharsets.UTF_8));
    try {
      ProcessRef<Msg> ref = start();
      ref.cast(new TestServer.FailFirst("f", 4));
      ref.cast(new Add(10));
      awaitTotal(ref, 11);
      assertThat(hooks.attempts.get("f")).hasValue(5);
      assertThat(ref.isAlive()).isTrue();
    } finally {
      System.setOut(original);
    }
    String text = log.toString(StandardCharsets.UTF_8);
    assertThat(text)
        .contains("callback failed, transaction aborted (attempt 1); retrying in")
        .contains("(attempt 4); retrying in")
        .contains("tuid=(\"dgen_server\", \"io.dgen.TestServer\")")
        .contains("failing attempt 4 of f");
  }
}
