package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dgen.TestServer.Add;
import io.dgen.TestServer.AddAndGet;
import io.dgen.TestServer.Boom;
import io.dgen.TestServer.Msg;
import io.dgen.admin.ServerControl;
import io.dgen.backend.Backend;
import io.dgen.backend.ForwardingBackend;
import io.dgen.backend.memory.MemoryBackend;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The non-blocking forms of {@link ServerRef}: each completes with what its blocking form returns
 * or throws, none blocks its caller while the store works, and a thousand in flight from one thread
 * need no thread each.
 */
class AsyncApiTest extends RuntimeTestBase {

  /** How long every commit takes in the tests that show the caller does not wait for it. */
  private static final Duration COMMIT_LATENCY = Duration.ofMillis(300);

  @AfterEach
  void fastAgain() {
    faults().reset();
  }

  @Test
  void eachAsyncForm_completesWithWhatItsBlockingFormReturns() throws Exception {
    ProcessRef<Msg> ref = start(b -> b.consume(false).deadLetterThreshold(1));

    ref.castAsync(new Add(1)).get(30, TimeUnit.SECONDS);
    ref.castAllAsync(List.of(new Add(2), new Add(3))).get(30, TimeUnit.SECONDS);
    assertThat(ref.castAsync(new Add(4), "key-1").get(30, TimeUnit.SECONDS)).isTrue();
    assertThat(ref.castAsync(new Add(4), "key-1").get(30, TimeUnit.SECONDS)).isFalse();
    String callId = ref.submitAsync(new TestServer.Get()).get(30, TimeUnit.SECONDS);
    assertThat(ServerControl.of(ref).queueLengthAsync().get(30, TimeUnit.SECONDS)).isEqualTo(5);

    String timer = ref.castAfterAsync(new Add(100), Duration.ofHours(1)).get(30, TimeUnit.SECONDS);
    assertThat(ref.cancelTimerAsync(timer).get(30, TimeUnit.SECONDS)).isTrue();
    assertThat(ref.cancelTimerAsync(timer).get(30, TimeUnit.SECONDS)).isFalse();
    String late =
        ref.castAtAsync(new Add(1000), java.time.Instant.now().plusSeconds(3600))
            .get(30, TimeUnit.SECONDS);
    assertThat(ref.cancelTimer(late)).isTrue();

    ProcessRef<Msg> consumer = start(b -> b.deadLetterThreshold(1));
    assertThat(consumer.<Long>awaitReplyAsync(callId, Duration.ofSeconds(30)).get())
        .isEqualTo(10L); // 1 + 2 + 3 + 4, the keyed cast once
    consumer.castAsync(new Boom("dead")).get(30, TimeUnit.SECONDS);
    await()
        .atMost(Duration.ofSeconds(30))
        .until(() -> ServerControl.of(consumer).deadLettersAsync().get().size() == 1);
    String dead = ServerControl.of(consumer).deadLettersAsync().get().get(0).id();
    assertThat(ServerControl.of(consumer).purgeDeadLetterAsync(dead).get()).isTrue();
    assertThat(ServerControl.of(consumer).purgeDeadLetterAsync(dead).get()).isFalse();
    assertThat(ServerControl.of(consumer).requeueDeadLetterAsync(dead, true).get()).isFalse();
    assertThat(ServerControl.of(consumer).purgeDeadLettersAsync().get()).isZero();
    assertThat(consumer.<Long>callAsync(new AddAndGet(5), "call-1", Duration.ofSeconds(30)).get())
        .isEqualTo(15L);
    assertThat(consumer.<Long>callAsync(new AddAndGet(5), "call-1", Duration.ofSeconds(30)).get())
        .isEqualTo(15L); // the first call's reply: it ran once

    ServerControl.of(consumer).killAsync("test").get(30, TimeUnit.SECONDS);
    assertThat(consumer.termination()).isDone();
    assertThat(ref.isAlive()).isFalse(); // the same server's other process stopped too
  }

  @Test
  void aStoppedProcess_failsTheFuture_andBadArgumentsThrowAtOnce() {
    ProcessRef<Msg> ref = start(b -> b.consume(false));
    assertThatThrownBy(() -> ref.castAsync(null)).isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> ref.cancelTimerAsync("not-a-timer"))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> ServerControl.of(ref).purgeDeadLetterAsync("xyz"))
        .isInstanceOf(IllegalArgumentException.class);

    String callId = ref.submit(new Add(1));
    ref.stop();

    for (CompletableFuture<?> f :
        List.of(
            ref.castAsync(new Add(1)),
            ref.castAsync(new Add(1), "key"),
            ref.castAllAsync(List.of(new Add(1))),
            ref.castAfterAsync(new Add(1), Duration.ofSeconds(1)),
            ref.callAsync(new AddAndGet(1)),
            ref.submitAsync(new Add(1)),
            ref.awaitReplyAsync(callId, Duration.ofSeconds(1)),
            ServerControl.of(ref).queueLengthAsync(),
            ServerControl.of(ref).deadLettersAsync(),
            ServerControl.of(ref).purgeDeadLettersAsync(),
            ServerControl.of(ref).killAsync("late"))) {
      assertThatThrownBy(f::get)
          .isInstanceOf(ExecutionException.class)
          .cause()
          .isInstanceOf(ServerStoppedException.class);
    }
    assertThatThrownBy(() -> ref.cast(new Add(1))).isInstanceOf(ServerStoppedException.class);
  }

  @Test
  void anAsyncCast_returnsBeforeItsCommit_andTheBlockingOneWaitsForIt() throws Exception {
    ProcessRef<Msg> ref = start(b -> b.consume(false));
    faults().commitLatency(COMMIT_LATENCY);

    long start = System.nanoTime();
    CompletableFuture<Void> queued = ref.castAsync(new Add(1));
    Duration returnedAfter = Duration.ofNanos(System.nanoTime() - start);
    assertThat(queued).isNotDone();
    assertThat(returnedAfter).isLessThan(COMMIT_LATENCY);
    queued.get(30, TimeUnit.SECONDS);

    start = System.nanoTime();
    ref.cast(new Add(1));
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isGreaterThanOrEqualTo(COMMIT_LATENCY);
    faults().reset();
    assertThat(ServerControl.of(ref).queueLength()).isEqualTo(2);
  }

  @Test
  void aThousandConcurrentAsyncCasts_fromOneThread_useAtMostSixteenThreads() throws Exception {
    ProcessRef<Msg> ref = start(b -> b.consume(false));
    ref.cast(new Add(0)); // the server's first push is behind us: its types are stored
    // On the memory engine, commits that take a while (as on a cluster) without a thread each;
    // FoundationDB's take a while of their own.
    MemoryBackend memory = memoryEngine();
    if (memory != null) {
      memory.faults().commitLatency(Duration.ofMillis(50));
    }
    ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    int before = threads.getThreadCount();
    Set<Thread> old = Thread.getAllStackTraces().keySet();
    threads.resetPeakThreadCount();
    Set<Thread> completing = ConcurrentHashMap.newKeySet();

    List<CompletableFuture<Void>> casts = new ArrayList<>();
    for (int i = 0; i < 1_000; i++) {
      casts.add(ref.castAsync(new Add(1)).whenComplete((v, e) -> completing.add(currentThread())));
    }
    assertThat(casts.stream().filter(CompletableFuture::isDone).count())
        .as("casts whose commit waited in the caller's thread")
        .isLessThan(1_000);
    CompletableFuture.allOf(casts.toArray(CompletableFuture[]::new)).get(2, TimeUnit.MINUTES);

    int peak = threads.getPeakThreadCount();
    assertThat(peak - before)
        .as(
            "threads started while 1,000 casts were in flight: %s",
            Thread.getAllStackTraces().keySet().stream()
                .filter(t -> !old.contains(t))
                .map(Thread::getName)
                .toList())
        .isLessThanOrEqualTo(16);
    assertThat(completing).as("threads that completed the casts").hasSizeLessThanOrEqualTo(16);
    if (memory != null) {
      memory.faults().reset();
    }
    assertThat(ServerControl.of(ref).queueLength()).isEqualTo(1_001);
  }

  private @Nullable MemoryBackend memoryEngine() {
    Backend b = backend;
    while (b instanceof ForwardingBackend f) {
      b = f.delegate();
    }
    return b instanceof MemoryBackend m ? m : null;
  }

  private static Thread currentThread() {
    return Thread.currentThread();
  }
}
