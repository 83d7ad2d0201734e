package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.TestServer.Add;
import io.dgen.TestServer.AddAndGet;
import io.dgen.TestServer.Init;
import io.dgen.TestServer.Msg;
import io.dgen.admin.ServerControl;
import io.dgen.backend.memory.MemoryBackend;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Idle consumers and waiting callers hold no watch of their own: a push or a reply rings the
 * tenant's doorbell, and one watcher per tenant per runtime wakes them. A wake-up lost in any
 * interleaving leaves a message queued with every consumer of its server asleep, or a caller
 * waiting for a reply that came. So: several runtimes on one backend, running one or more consumers
 * of each server (with different batch sizes and bounds on batches in flight), publishers that
 * alternate bursts of casts and calls with idle pauses (so consumers park and wake over and over),
 * while the backend's commit latency changes and commits conflict or end in {@code
 * commit_unknown_result}. Every message must be applied exactly once, nothing may stay queued, and
 * every call must be answered.
 */
class NoLostWakeUpTest {

  private static final int RUNTIMES = 3;
  private static final int SERVERS = 40;
  private static final int PUBLISHERS = 6;
  private static final int BURSTS = 25;

  private final MemoryBackend backend = MemoryBackend.create();
  private final List<DGen> runtimes = new ArrayList<>();
  private final TestServer.Hooks hooks = new TestServer.Hooks();

  @AfterEach
  void close() {
    runtimes.forEach(DGen::close);
    backend.close();
  }

  @ParameterizedTest(name = "seed={0}")
  @ValueSource(longs = {1, 2, 3, 4, 5})
  void burstsAndPauses_acrossRuntimes_applyEveryMessageOnce_andLeaveNothingQueued(long seed)
      throws Exception {
    SplittableRandom random = new SplittableRandom(seed);
    String[] path = {"no-lost-wake-up", UUID.randomUUID().toString()};
    int[] inFlight = {1, 4, 256};
    List<List<ServerRef<Msg>>> refs = new ArrayList<>();
    for (int r = 0; r < RUNTIMES; r++) {
      DGen dgen =
          DGen.builder(backend)
              .workerThreads(1 + r % 2)
              .maxBatchesInFlight(inFlight[r])
              .retryBackoff(Duration.ofMillis(1), Duration.ofMillis(20))
              .build();
      runtimes.add(dgen);
      Tenant tenant = dgen.tenant(path);
      List<ServerRef<Msg>> mine = new ArrayList<>();
      for (int s = 0; s < SERVERS; s++) {
        // Half the servers have one consumer, in one runtime: another runtime's consumer must not
        // hide a wake-up lost in it. The others publish to them from publish-only processes.
        boolean consume = s % 2 == 0 ? r == s % RUNTIMES : r != s % RUNTIMES || s % 4 == 1;
        int k = new int[] {1, 2, 5}[random.nextInt(3)];
        mine.add(
            dgen.start(
                new TestServer(hooks),
                new Init(0, Tuple.from("server", s), null),
                StartOptions.builder(tenant).consume(consume).consumeK(k).build()));
      }
      refs.add(mine);
    }

    Map<Integer, AtomicLong> expected = new ConcurrentHashMap<>();
    List<CompletableFuture<Long>> calls = new ArrayList<>();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    AtomicBoolean publishing = new AtomicBoolean(true);
    CountDownLatch done = new CountDownLatch(PUBLISHERS);
    long[] seeds = new long[PUBLISHERS];
    for (int p = 0; p < PUBLISHERS; p++) {
      seeds[p] = random.nextLong();
    }
    for (int p = 0; p < PUBLISHERS; p++) {
      SplittableRandom mineRandom = new SplittableRandom(seeds[p]);
      Thread t =
          new Thread(
              () -> {
                try {
                  publish(mineRandom, refs, expected, calls);
                } catch (Throwable e) {
                  failure.compareAndSet(null, e);
                } finally {
                  done.countDown();
                }
              },
              "publisher-" + p);
      t.setDaemon(true);
      t.start();
    }
    Thread chaos = new Thread(() -> chaos(new SplittableRandom(seed * 31), publishing), "chaos");
    chaos.setDaemon(true);
    chaos.start();

    assertThat(done.await(120, TimeUnit.SECONDS)).as("publishers finished").isTrue();
    publishing.set(false);
    chaos.join();
    backend.faults().reset();
    assertThat(failure.get()).as("a publisher failed").isNull();

    List<ServerRef<Msg>> first = refs.get(0);
    try {
      await()
          .atMost(Duration.ofSeconds(60))
          .pollInterval(Duration.ofMillis(50))
          .until(() -> stuck(first, expected).isEmpty());
    } catch (org.awaitility.core.ConditionTimeoutException e) {
      throw new AssertionError(
          "servers left with work (total, queued, expected): " + stuck(first, expected), e);
    }
    for (CompletableFuture<Long> c : calls) {
      assertThat(c.get(30, TimeUnit.SECONDS)).as("a total with the call's amount").isPositive();
    }
    for (int s = 0; s < SERVERS; s++) {
      assertThat(ServerControl.of(first.get(s)).queueLength()).as("queue of server %d", s).isZero();
    }
  }

  /** Servers whose total differs from what was sent, with their totals and queue lengths. */
  private static Map<Integer, List<Long>> stuck(
      List<ServerRef<Msg>> refs, Map<Integer, AtomicLong> expected) {
    Map<Integer, List<Long>> out = new TreeMap<>();
    for (int s = 0; s < SERVERS; s++) {
      long want = expected.getOrDefault(s, new AtomicLong()).get();
      long total = refs.get(s).<Long>priorityCall(new TestServer.Get());
      if (total != want) {
        out.put(s, List.of(total, ServerControl.of(refs.get(s)).queueLength(), want));
      }
    }
    return out;
  }

  /**
   * Bursts of casts, castAlls and calls to random servers through random runtimes, then a pause.
   */
  private static void publish(
      SplittableRandom random,
      List<List<ServerRef<Msg>>> refs,
      Map<Integer, AtomicLong> expected,
      List<CompletableFuture<Long>> calls) {
    for (int burst = 0; burst < BURSTS; burst++) {
      int ops = 1 + random.nextInt(12);
      for (int i = 0; i < ops; i++) {
        int s = random.nextInt(SERVERS);
        ServerRef<Msg> ref = refs.get(random.nextInt(RUNTIMES)).get(s);
        long n = 1 + random.nextInt(9);
        int kind = random.nextInt(10);
        if (kind < 6) {
          ref.cast(new Add(n));
          expected.computeIfAbsent(s, x -> new AtomicLong()).addAndGet(n);
        } else if (kind < 8) {
          ref.castAll(List.of(new Add(n), new Add(n)));
          expected.computeIfAbsent(s, x -> new AtomicLong()).addAndGet(2 * n);
        } else {
          CompletableFuture<Long> reply = ref.callAsync(new AddAndGet(n), Duration.ofSeconds(60));
          expected.computeIfAbsent(s, x -> new AtomicLong()).addAndGet(n);
          synchronized (calls) {
            calls.add(reply);
          }
        }
      }
      // an idle phase, long enough for consumers to drain and park
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(random.nextInt(30)));
    }
  }

  /** Changes the commit latency, and makes a commit conflict or end in 1021 now and then. */
  private void chaos(SplittableRandom random, AtomicBoolean publishing) {
    while (publishing.get()) {
      int what = random.nextInt(10);
      if (what < 4) {
        backend.faults().commitLatency(Duration.ofMillis(random.nextInt(4)));
      } else if (what < 6) {
        backend.faults().failNextCommits(1);
      } else if (what < 8) {
        backend.faults().commitUnknownResult(1, random.nextBoolean());
      }
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5 + random.nextInt(20)));
    }
  }
}
