package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.TestServer.AddAndGet;
import io.dgen.TestServer.Init;
import io.dgen.TestServer.Msg;
import io.dgen.backend.Backend;
import io.dgen.backend.CountingBackend;
import io.dgen.backend.memory.MemoryBackend;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Calls in flight hold neither a thread nor a watch each: their pushes commit without a thread
 * waiting, and their callers wait on the tenant's doorbell, which the consumers ring with the
 * replies.
 */
class ConcurrentCallsTest extends RuntimeTestBase {

  private static final int SERVERS = 10;
  private static final int CALLS = 1_000;

  private MemoryBackend memory;

  /**
   * The memory backend completes commits and watches on its executor, by default a pool that grows
   * on demand; four threads here, so that the threads counted are the runtime's. Its own commit
   * latency holds no thread (the decorator's would take a thread per commit on two cores, where the
   * JDK's common pool is not used).
   */
  @Override
  Backend newBackend() {
    ThreadPoolExecutor completions =
        new ThreadPoolExecutor(
            4,
            4,
            1,
            TimeUnit.SECONDS,
            new LinkedBlockingQueue<>(),
            r -> {
              Thread t = new Thread(r, "memory-backend-completions");
              t.setDaemon(true);
              return t;
            });
    completions.allowCoreThreadTimeOut(true);
    memory = MemoryBackend.builder().executor(completions).build();
    return memory;
  }

  @Test
  void aThousandCallsInFlight_holdFewThreadsAndFewWatches_andAllAreAnswered() throws Exception {
    List<ServerRef<Msg>> refs = new ArrayList<>();
    for (int i = 0; i < SERVERS; i++) {
      refs.add(
          dgen.start(
              new TestServer(hooks),
              new Init(0, Tuple.from("called", i), null),
              StartOptions.builder(tenant).consumeK(16).build()));
    }
    await().atMost(Duration.ofSeconds(30)).until(() -> counters().readOnlyCommits() >= SERVERS);
    memory.faults().commitLatency(Duration.ofMillis(200));
    int threadsBefore = Thread.activeCount();
    CountingBackend.Counters before = counters();

    List<CompletableFuture<Long>> calls = new ArrayList<>();
    for (int i = 0; i < CALLS; i++) {
      calls.add(refs.get(i % SERVERS).callAsync(new AddAndGet(1), Duration.ofSeconds(60)));
    }
    // Every push has committed; the replies take at least one more commit.
    await()
        .atMost(Duration.ofSeconds(60))
        .until(() -> counters().minus(before).transactionsCommitted() >= CALLS);
    CountingBackend.Counters pushed = counters();
    int threadsWhileWaiting = Thread.activeCount() - threadsBefore;

    for (CompletableFuture<Long> c : calls) {
      assertThat(c.get(60, TimeUnit.SECONDS)).isBetween(1L, (long) CALLS / SERVERS);
    }
    assertThat(pushed.watchesArmed() - pushed.watchesFired()).as("watches held").isLessThan(32);
    assertThat(threadsWhileWaiting).as("threads added").isLessThan(16);
    long total = 0;
    for (ServerRef<Msg> ref : refs) {
      total += total(ref);
    }
    assertThat(total).isEqualTo(CALLS);
  }

  @Test
  void aCallThatStartsItsRuntimesWatcher_waitsForItsPushBeforeTakingItsSlot() throws Exception {
    // A publish-only process: its runtime watches this tenant only once the call listens, and a
    // new watcher rings everyone once, while the call's push is still on its way.
    ServerRef<Msg> publisher = start(b -> b.consume(false));
    try (DGen other = DGen.builder(backend).build()) {
      other.start(
          new TestServer(hooks),
          null,
          StartOptions.builder(other.tenant(tenant.path().toArray(String[]::new)))
              .consumeK(2)
              .build());
      await().atMost(Duration.ofSeconds(30)).until(() -> counters().readOnlyCommits() >= 1);
      memory.faults().commitLatency(Duration.ofMillis(200));

      Long reply =
          publisher
              .<Long>callAsync(new AddAndGet(5), Duration.ofSeconds(30))
              .get(30, TimeUnit.SECONDS);

      assertThat(reply).isEqualTo(5);
    }
  }
}
