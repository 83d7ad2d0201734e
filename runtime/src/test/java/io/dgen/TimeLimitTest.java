package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dgen.TestServer.Msg;
import io.dgen.TestServer.Slow;
import io.dgen.backend.memory.MemoryBackend;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class TimeLimitTest extends RuntimeTestBase {

  @Override
  MemoryBackend newBackend() {
    return MemoryBackend.builder().ticker(hooks.clock::get).build();
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
  void callbackUnderFiveSeconds_commits() {
    ServerRef<Msg> ref = start(b -> b.consume(false));
    ref.priorityCast(new Slow(TimeUnit.SECONDS.toNanos(4)));
    assertThat(total(ref)).isEqualTo(1);
  }
}
