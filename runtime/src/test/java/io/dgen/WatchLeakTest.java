package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.TestServer.Add;
import io.dgen.TestServer.Get;
import io.dgen.TestServer.Init;
import io.dgen.TestServer.Msg;
import io.dgen.internal.Buckets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import org.junit.jupiter.api.Test;

/**
 * Watches count against the client's limit (10,000 on FoundationDB) until they fire or are
 * cancelled: a watch replaced without being cancelled is a slot lost for good. An idle runtime
 * holds one per bucket its processes live in (the bucket's bell, which also rings its timers),
 * however many times its consumers parked and woke, its timers fired, or its calls timed out; a
 * closed runtime holds none.
 */
class WatchLeakTest extends RuntimeTestBase {

  /** The watches an idle runtime holds for these processes: one per bucket they live in. */
  private long idleWatches(ServerRef<?>... processes) {
    Buckets buckets = Buckets.of(tenant.bucketCount());
    return Arrays.stream(processes).mapToInt(p -> buckets.of(p.tuid())).distinct().count();
  }

  @Test
  void manyWakeUpsAndTimedOutCalls_leaveNoSpareWatches() {
    // consumeK 2: every call is queued, so each one wakes the parked consumer and parks it again
    ServerRef<Msg> ref = start(b -> b.consumeK(2));
    ServerRef<Msg> deaf =
        dgen.start(
            new TestServer(hooks),
            new Init(0, Tuple.from("deaf"), null),
            StartOptions.builder(tenant).consume(false).build());
    assertThat(ref.<Long>call(new Get())).isZero();
    long idle = idleWatches(ref, deaf);
    await().atMost(Duration.ofSeconds(30)).until(() -> pendingWatches() == idle);

    for (int i = 1; i <= 200; i++) {
      ref.cast(new Add(1));
      assertThat(ref.<Long>call(new Get())).isEqualTo(i);
      if (i % 20 == 0) {
        ref.castAfter(new Add(0), Duration.ofMillis(1)); // rings the bucket's timers, and fires
      }
    }
    List<CompletableFuture<Long>> calls = new ArrayList<>();
    for (int i = 0; i < 50; i++) {
      calls.add(deaf.callAsync(new Get(), Duration.ofMillis(50)));
    }
    for (CompletableFuture<Long> call : calls) {
      assertThat(call)
          .failsWithin(Duration.ofSeconds(30))
          .withThrowableOfType(ExecutionException.class)
          .withCauseInstanceOf(CallTimeoutException.class);
    }

    await().atMost(Duration.ofSeconds(30)).until(() -> pendingWatches() == idle);
  }

  @Test
  void aClosedRuntime_holdsNoWatches() {
    ServerRef<Msg> ref = start();
    ref.castAfter(new Add(1), Duration.ofMillis(1));
    awaitTotal(ref, 1);
    await().atMost(Duration.ofSeconds(30)).until(() -> pendingWatches() == idleWatches(ref));

    dgen.close();

    await().atMost(Duration.ofSeconds(30)).until(() -> pendingWatches() == 0);
  }
}
