package io.dgen.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.DGen;
import io.dgen.DGenServer;
import io.dgen.From;
import io.dgen.HostOptions;
import io.dgen.InitResult;
import io.dgen.Result;
import io.dgen.ServerRef;
import io.dgen.Tenant;
import io.dgen.admin.DGenAdmin;
import io.dgen.admin.ServerControl;
import io.dgen.backend.memory.MemoryBackend;
import java.lang.reflect.Field;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Rescans of ready indexes when the pool for blocking work refuses them: they are queued there, at
 * most eight at once, and a refusal must neither lose the rescan nor its slot.
 */
class HostingRescanTest {

  private static final int BUCKETS = 8;

  private final MemoryBackend backend = MemoryBackend.create();
  private final List<DGen> runtimes = new ArrayList<>();
  private final String[] path = {"rescans", UUID.randomUUID().toString()};

  @AfterEach
  void close() {
    runtimes.forEach(DGen::close);
    backend.close();
  }

  /** Adds what it is cast; a call answers the sum. */
  static final class Sum implements DGenServer<Long, Long> {
    @Override
    public InitResult<Long> init(@Nullable Object id) {
      return InitResult.ok(0L);
    }

    @Override
    public Result<Long> handleCast(Long n, Long sum) {
      return Result.noReply(sum + n);
    }

    @Override
    public Result<Long> handleCall(Long n, From from, Long sum) {
      return Result.reply(sum, sum);
    }
  }

  private DGen runtime() {
    DGen d =
        DGen.builder(backend)
            .buckets(BUCKETS)
            .retryBackoff(Duration.ofMillis(1), Duration.ofMillis(50))
            .build();
    runtimes.add(d);
    return d;
  }

  private static RuntimeCore core(DGen d) throws ReflectiveOperationException {
    Field f = DGen.class.getDeclaredField("core");
    f.setAccessible(true);
    return (RuntimeCore) f.get(d);
  }

  /**
   * A hosting runtime takes its buckets while its pool for blocking work is full (a cluster that
   * stopped answering holds every thread): each bucket's rescan is refused. Once the pool drains,
   * the rescans run and the server that was ready in a taken bucket is loaded. Before, each refusal
   * kept one of the eight rescan slots for ever, and the refused rescans were never run: no rescan
   * ran again in that tenant.
   */
  @Test
  void rescansRefusedByAFullPool_areRunOnceItDrains_andLoadTheReadyServers() throws Exception {
    DGen client = runtime(); // hosts nothing
    Tenant tenant = client.tenant(path);
    List<ServerRef<Long>> refs = new ArrayList<>();
    for (long id = 0; id < 2 * BUCKETS; id++) {
      ServerRef<Long> r = client.ref(tenant, "sum", Tuple.from(id));
      r.cast(1L); // ready, and nobody holds its bucket: its activation is not heard
      refs.add(r);
    }
    DGen holder = runtime();
    ThreadPoolExecutor pool = (ThreadPoolExecutor) core(holder).services().blocking();
    CountDownLatch stalled = new CountDownLatch(1);
    try {
      for (int i = 0; i < pool.getMaximumPoolSize(); i++) {
        pool.execute(() -> awaitQuietly(stalled));
      }
      try {
        while (true) {
          pool.execute(() -> {}); // fills the queue behind the stalled threads
        }
      } catch (RejectedExecutionException full) {
        // every thread busy and the queue full
      }
      holder.host("sum", Sum::new, HostOptions.builder(holder.tenant(path)).build());
      await("the holder takes every bucket while its pool refuses the rescans")
          .atMost(Duration.ofSeconds(30))
          .until(
              () ->
                  new DGenAdmin(backend)
                          .tenant(path).orElseThrow().leases().stream()
                              .filter(
                                  l ->
                                      l.kind().equals("sum")
                                          && holder.memberId().equals(l.holder()))
                              .count()
                      == BUCKETS);
    } finally {
      stalled.countDown();
    }

    for (ServerRef<Long> r : refs) {
      await().atMost(Duration.ofSeconds(30)).until(() -> ServerControl.of(r).queueLength() == 0);
      assertThat(r.call(0L, Long.class, Duration.ofSeconds(30))).isEqualTo(1L);
    }
  }

  private static void awaitQuietly(CountDownLatch latch) {
    try {
      latch.await(2, TimeUnit.MINUTES);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
