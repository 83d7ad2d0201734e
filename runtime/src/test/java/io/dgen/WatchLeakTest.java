package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.TestServer.Add;
import io.dgen.TestServer.Get;
import io.dgen.TestServer.Init;
import io.dgen.TestServer.Msg;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import org.junit.jupiter.api.Test;

/**
 * Watches count against the client's limit (10,000 on FoundationDB) until they fire or are
 * cancelled: a watch replaced without being cancelled is a slot lost for good. An idle runtime
 * holds two per tenant (the doorbell's bell and the timers' alarm), however many times its
 * consumers parked and woke, its timers re-armed, or its calls timed out; a closed runtime holds
 * none.
 */
class WatchLeakTest extends RuntimeTestBase {

  /** The bell's watch and the alarm's, of the test's one tenant. */
  private static final int IDLE_WATCHES = 2;

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
    await().atMost(Duration.ofSeconds(30)).until(() -> pendingWatches() == IDLE_WATCHES);

    for (int i = 1; i <= 200; i++) {
      ref.cast(new Add(1));
      assertThat(ref.<Long>call(new Get())).isEqualTo(i);
      if (i % 20 == 0) {
        ref.castAfter(new Add(0), Duration.ofMillis(1)); // fires, and re-arms the alarm's watch
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

    await().atMost(Duration.ofSeconds(30)).until(() -> pendingWatches() == IDLE_WATCHES);
  }

  @Test
  void aClosedRuntime_holdsNoWatches() {
    ServerRef<Msg> ref = start();
    ref.castAfter(new Add(1), Duration.ofMillis(1));
    awaitTotal(ref, 1);
    await().atMost(Duration.ofSeconds(30)).until(() -> pendingWatches() == IDLE_WATCHES);

    dgen.close();

    await().atMost(Duration.ofSeconds(30)).until(() -> pendingWatches() == 0);
  }
}
