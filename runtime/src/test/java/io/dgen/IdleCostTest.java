package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.TestServer.Add;
import io.dgen.TestServer.Init;
import io.dgen.TestServer.Msg;
import io.dgen.backend.memory.MemoryBackend;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class IdleCostTest extends RuntimeTestBase {

  private static final int SERVERS = 10_000;

  @Override
  MemoryBackend newBackend() {
    // every idle consumer holds one watch; leave room for calls in flight
    return MemoryBackend.builder().maxWatches(SERVERS + 1_000).build();
  }

  @Test
  void tenThousandIdleServers_fitInAFewThreadsAndLittleHeap_andStayResponsive() {
    int threadsBefore = Thread.activeCount();
    List<ServerRef<Msg>> refs = new ArrayList<>(SERVERS);
    for (int i = 0; i < SERVERS; i++) {
      refs.add(
          dgen.start(
              new TestServer(hooks),
              new Init(0, Tuple.from("idle", i), null),
              StartOptions.builder(tenant).build()));
    }
    await()
        .atMost(Duration.ofSeconds(60))
        .until(() -> counters().watchesArmed() - counters().watchesFired() >= SERVERS);

    int live = ManagementFactory.getThreadMXBean().getThreadCount();
    assertThat(live).as("live threads").isLessThan(64);
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
