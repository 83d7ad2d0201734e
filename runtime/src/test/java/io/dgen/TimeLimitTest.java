package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dgen.TestServer.Msg;
import io.dgen.TestServer.Slow;
import io.dgen.backend.BackendException;
import io.dgen.backend.memory.MemoryBackend;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class TimeLimitTest extends RuntimeTestBase {

  @Override
  MemoryBackend newBackend() {
    return MemoryBackend.builder()
        .ticker(() -> hooks.clock.get() + hooks.backendClock.get())
        .maxRetryDelay(Duration.ofMillis(2))
        .build();
  }

  @Override
  DGen newDGen() {
    return DGen.builder(backend)
        .ticker(hooks.clock::get)
        .retryBackoff(Duration.ofMillis(1), Duration.ofMillis(20))
        .build();
  }

  /** 4.5 s would pass a five-second check, then fail at commit with 1007 every time. */
  @ParameterizedTest
  @ValueSource(longs = {6_000, 4_500})
  void callbackPastTheFourSecondGuard_failsWithAClearError(long millis) {
    ServerRef<Msg> ref = start(b -> b.consume(false));
    assertThatThrownBy(() -> ref.priorityCall(new Slow(TimeUnit.MILLISECONDS.toNanos(millis))))
        .isInstanceOf(CallbackException.class)
        .cause()
        .isInstanceOf(TransactionTooLongException.class)
        .hasMessageContaining("past the 4000 ms allowed to callbacks")
        .hasMessageContaining("5000 ms transaction limit");
    assertThat(total(ref)).isZero();
  }

  @Test
  void queuedCallbackPastTheGuard_isTheItemsFailure_deadLettered_andTheQueueMovesOn() {
    ServerRef<Msg> ref = start(b -> b.deadLetterThreshold(2));
    ref.cast(new Slow(TimeUnit.MILLISECONDS.toNanos(4_900)));
    ref.cast(new TestServer.Add(1));
    awaitTotal(ref, 1);
    assertThat(ref.deadLetters())
        .singleElement()
        .satisfies(
            d -> {
              assertThat(d.message()).isEqualTo(new Slow(TimeUnit.MILLISECONDS.toNanos(4_900)));
              assertThat(d.attempts()).isEqualTo(2);
              assertThat(d.lastError()).contains("TransactionTooLongException");
            });
    assertThat(ref.queueLength()).isZero();
  }

  @Test
  void readThroughTxContext_failingWithTransactionTooOld_isRetried_notDeadLettered() {
    ServerRef<Msg> ref = start(b -> b.deadLetterThreshold(1));
    // the backend sees the attempt age past five seconds (a cluster-side delay); the callback
    // itself was fast
    ref.cast(new TestServer.ReadAfter("r", 1, TimeUnit.SECONDS.toNanos(6), true));
    awaitTotal(ref, 1);
    assertThat(ref.deadLetters()).isEmpty();
    assertThat(hooks.attempts.get("r")).hasValue(2);
    assertThat(ref.queueLength()).isZero();
    // inline: retried, not reported as CallbackException
    long reply = ref.call(new TestServer.ReadAfter("c", 1, TimeUnit.SECONDS.toNanos(6), true));
    assertThat(reply).isEqualTo(2);
    assertThat(hooks.attempts.get("c")).hasValue(2);
  }

  @Test
  void slowCallbackWhoseReadFailsTooOld_isTheItemsFailure_notATransientError() {
    // the read fails with the retryable 1007, but because the callback was slow: retrying would
    // run it slowly again, forever
    ServerRef<Msg> ref = start(b -> b.deadLetterThreshold(2));
    ref.cast(new TestServer.ReadAfter("slow", 5, TimeUnit.SECONDS.toNanos(6), false));
    await().atMost(Duration.ofSeconds(30)).until(() -> ref.deadLetters().size() == 1);
    assertThat(ref.deadLetters().get(0).lastError()).contains("TransactionTooLongException");
    assertThat(hooks.attempts.get("slow")).hasValue(2);
  }

  @Test
  void runThatKeepsRetrying_givesUpWithinAMinute_longBeforeItsCommitMarkerIsSwept() {
    ServerRef<Msg> ref = start(b -> b.consume(false));
    faults().failNextCommits(1_000); // every attempt conflicts, each one 3 s long
    assertThatThrownBy(() -> ref.priorityCast(new Slow(TimeUnit.SECONDS.toNanos(3))))
        .isInstanceOfSatisfying(
            BackendException.class,
            e -> assertThat(e.code()).isEqualTo(BackendException.TRANSACTION_TIMED_OUT))
        .hasMessageContaining("nothing was committed")
        .hasMessageContaining("60000 ms");
    long attempts = TimeUnit.NANOSECONDS.toSeconds(hooks.clock.get()) / 3;
    assertThat(attempts).isBetween(20L, 22L);
    faults().reset();
    assertThat(total(ref)).isZero();
  }

  @Test
  void callbackUnderFiveSeconds_commits() {
    ServerRef<Msg> ref = start(b -> b.consume(false));
    ref.priorityCast(new Slow(TimeUnit.SECONDS.toNanos(4)));
    assertThat(total(ref)).isEqualTo(1);
  }
}
