package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.TestServer.Msg;
import io.dgen.admin.ServerControl;
import io.dgen.backend.CountingBackend;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Publisher group commit: the plain casts of one runtime's threads that wait while a push is in
 * flight share the next push transaction; each is acknowledged only after its commit, applied once,
 * in its publisher's order, and a failure fails exactly the casts it covers.
 */
class GroupCommitTest extends RuntimeTestBase {

  private static final int THREADS = 8;

  /** A publish-only process of server {@code ("group", i)}: its pushes are the only commits. */
  private ProcessRef<Msg> publisher(int i) {
    return dgen.start(
        new TestServer(hooks),
        new TestServer.Init(0, Tuple.from("group", i), null),
        StartOptions.builder(tenant).consume(false).build());
  }

  /** A consuming process of server {@code ("group", i)}, started after the casts. */
  private ProcessRef<Msg> consumer(int i) {
    return dgen.start(
        new TestServer(hooks),
        new TestServer.Init(0, Tuple.from("group", i), null),
        StartOptions.builder(tenant).build());
  }

  private static TestServer.State stateOf(ServerRef<Msg> ref) {
    return ref.call(new TestServer.GetState());
  }

  /** Runs {@code body(thread)} in {@link #THREADS} threads at once, and waits for them. */
  private static void inThreads(ThreadBody body) throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(THREADS);
    CountDownLatch go = new CountDownLatch(1);
    try {
      List<Future<?>> done = new ArrayList<>();
      for (int t = 0; t < THREADS; t++) {
        int thread = t;
        done.add(
            pool.submit(
                () -> {
                  go.await();
                  body.run(thread);
                  return null;
                }));
      }
      go.countDown();
      for (Future<?> f : done) {
        f.get(2, TimeUnit.MINUTES);
      }
    } finally {
      pool.shutdownNow();
    }
  }

  private interface ThreadBody {
    void run(int thread) throws Exception;
  }

  @Test
  void castsFromManyThreads_sharePushTransactions_andEachIsAppliedOnceInItsPublishersOrder()
      throws Exception {
    faults().commitLatency(Duration.ofMillis(2)); // a commit takes time, as on a cluster
    int servers = 20;
    int perThread = 200;
    List<ProcessRef<Msg>> refs = new ArrayList<>();
    for (int i = 0; i < servers; i++) {
      refs.add(publisher(i));
    }
    CountingBackend.Counters before = counters();

    inThreads(
        thread -> {
          long[] sentTo = new long[servers]; // a publisher's sequence per server: 1, 2, 3...
          for (int n = 1; n <= perThread; n++) {
            int server = (thread + n) % servers;
            refs.get(server).cast(new TestServer.Seq("p" + thread, ++sentTo[server]));
          }
        });

    CountingBackend.Counters pushes = counters().minus(before);
    int casts = THREADS * perThread;
    assertThat(pushes.transactionsCommitted())
        .as("%d casts from %d threads took %d commits", casts, THREADS, pushes)
        .isLessThan(casts / 2);
    long applied = 0;
    for (int i = 0; i < servers; i++) {
      TestServer.State s = stateOf(consumer(i));
      assertThat(s.outOfOrder())
          .as("server %d applied a publisher's casts out of order", i)
          .isZero();
      applied += s.total();
    }
    assertThat(applied).as("every cast applied once").isEqualTo(casts);
  }

  @Test
  void aCastToAKilledServer_failsAlone_andTheCastsGroupedWithItCommit() throws Exception {
    faults().commitLatency(Duration.ofMillis(5));
    int servers = THREADS;
    int perThread = 60;
    List<ProcessRef<Msg>> refs = new ArrayList<>();
    for (int i = 0; i < servers; i++) {
      refs.add(publisher(i));
    }
    ServerRef<Msg> doomed = refs.get(0);
    // killed from another runtime: this one learns it from its next push, whose group it shares
    DGen killer = newDGen();
    ProcessRef<Msg> there =
        killer.start(
            new TestServer(hooks),
            new TestServer.Init(0, Tuple.from("group", 0), null),
            StartOptions.builder(killer.tenant(tenant.path().toArray(String[]::new)))
                .consume(false)
                .build());
    AtomicInteger doomedAcked = new AtomicInteger();
    AtomicInteger doomedRefused = new AtomicInteger();

    inThreads(
        thread -> {
          for (int n = 1; n <= perThread; n++) {
            if (thread == 0 && n == perThread / 3) {
              ServerControl.of(there).kill("the test kills it");
            }
            if (thread == 0) {
              try {
                doomed.cast(new TestServer.Add(1));
                doomedAcked.incrementAndGet();
              } catch (ServerStoppedException killed) {
                doomedRefused.incrementAndGet();
              }
            } else {
              refs.get(thread).cast(new TestServer.Add(1)); // must never fail
            }
          }
        });

    killer.close();
    assertThat(doomedAcked.get()).isEqualTo(perThread / 3 - 1);
    assertThat(doomedRefused.get()).isEqualTo(perThread - perThread / 3 + 1);
    for (int i = 1; i < servers; i++) {
      assertThat(stateOf(consumer(i)).total()).isEqualTo(perThread);
    }
  }

  @Test
  void aCastAllTooLargeForATransaction_isRefusedAlone_whileTheOthersCommit() throws Exception {
    faults().commitLatency(Duration.ofMillis(5));
    List<ProcessRef<Msg>> refs = new ArrayList<>();
    for (int i = 0; i < THREADS; i++) {
      refs.add(publisher(i));
    }
    List<Msg> huge = new ArrayList<>();
    for (int i = 0; i < 120; i++) { // 120 × 95 kB: over the 10 MB transaction limit
      huge.add(new TestServer.Boom("x".repeat(95_000)));
    }
    int perThread = 40;
    List<Throwable> refused = Collections.synchronizedList(new ArrayList<>());

    inThreads(
        thread -> {
          for (int n = 0; n < perThread; n++) {
            if (thread == 0 && n == perThread / 2) {
              try {
                refs.get(0).castAll(huge);
              } catch (RuntimeException e) {
                refused.add(e);
              }
            }
            refs.get(thread).cast(new TestServer.Add(1));
          }
        });

    assertThat(refused).hasSize(1);
    assertThat(refused.get(0)).hasMessageContaining("transaction_too_large");
    for (int i = 0; i < THREADS; i++) {
      assertThat(stateOf(consumer(i)).total())
          .as("server %d: every small cast committed, no part of the large one", i)
          .isEqualTo(perThread);
      assertThat(ServerControl.of(refs.get(i)).queueLength()).isZero();
    }
  }

  @Test
  void castsWaitingForAGroupWhenTheRuntimeCloses_failAsStopped_andNothingOfThemIsQueued() {
    faults().commitLatency(Duration.ofMillis(50));
    DGen closing = newDGen();
    Tenant t = closing.tenant(tenant.path().toArray(String[]::new));
    ServerRef<Msg> ref =
        closing.start(
            new TestServer(hooks),
            new TestServer.Init(0, Tuple.from("group", 0), null),
            StartOptions.builder(t).consume(false).build());
    List<CompletableFuture<Void>> sent = new ArrayList<>();
    for (int i = 0; i < 200; i++) {
      sent.add(ref.castAsync(new TestServer.Add(1)));
    }

    closing.close();

    long acked = 0;
    int stopped = 0;
    for (CompletableFuture<Void> f : sent) {
      assertThat(f).as("closing settles every cast").isDone();
      try {
        f.join();
        acked++;
      } catch (CompletionException e) {
        assertThat(e.getCause()).isInstanceOf(ServerStoppedException.class);
        stopped++;
      }
    }
    assertThat(stopped).as("casts still waiting at the close").isPositive();
    assertThat(stateOf(consumer(0)).total())
        .as("exactly the acknowledged casts are queued")
        .isEqualTo(acked);
    assertThatThrownBy(() -> ref.cast(new TestServer.Add(1)))
        .isInstanceOf(ServerStoppedException.class);
  }
}
