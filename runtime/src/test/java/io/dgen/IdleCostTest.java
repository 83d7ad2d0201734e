package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.TestServer.Add;
import io.dgen.TestServer.Init;
import io.dgen.TestServer.Msg;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class IdleCostTest extends RuntimeTestBase {

  private static final int SERVERS = 10_000;

  @Test
  void tenThousandIdleServers_fitInAFewThreadsAFewWatchesAndLittleHeap_andStayResponsive() {
    int threadsBefore = Thread.activeCount();
    List<ServerRef<Msg>> refs = new ArrayList<>(SERVERS);
    for (int i = 0; i < SERVERS; i++) {
      refs.add(
          dgen.start(
              new TestServer(hooks),
              new Init(0, Tuple.from("idle", i), null),
              StartOptions.builder(tenant).build()));
    }
    // Each server's first batch finds its queue empty (a read-only commit), then it parks: no
    // watch of its own (the backend's default limit, 10,000, would not even hold them), only the
    // doorbells of its tenant's buckets: at most one watch per bucket, however many servers.
    await().atMost(Duration.ofSeconds(60)).until(() -> counters().readOnlyCommits() >= SERVERS);
    assertThat(pendingWatches()).as("watches held").isBetween(1, tenant.bucketCount());

    // The runtime's own threads. Not the JVM's count, which also holds what earlier test classes
    // left idle for up to a minute in pools shared by the JVM (fdb-java's callbacks, the memory
    // backend's, the bounded pool of blocking operations): 87 such threads at load 9.
    List<String> runtimeThreads =
        Thread.getAllStackTraces().keySet().stream()
            .map(Thread::getName)
            .filter(
                n ->
                    n.startsWith("dgen-worker-")
                        || n.startsWith("dgen-scheduler-")
                        || n.startsWith("dgen-blocking-")
                        || n.startsWith("dgen-placement-"))
            .toList();
    assertThat(runtimeThreads).as("live threads of runtimes").hasSizeLessThan(16);
    assertThat(Thread.activeCount() - threadsBefore).as("threads added").isLessThan(16);

    System.gc();
    long heap = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed() / (1024 * 1024);
    assertThat(heap).as("heap MB after GC").isLessThan(500);

    for (int i : new int[] {0, 4_999, SERVERS - 1}) {
      ServerRef<Msg> ref = refs.get(i);
      ref.cast(new Add(3));
      await().atMost(Duration.ofSeconds(5)).until(() -> total(ref) == 3);
    }
  }
}
