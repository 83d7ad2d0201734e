package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dgen.TestServer.Msg;
import io.dgen.TestServer.Slow;
import io.dgen.backend.memory.MemoryBackend;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

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

  @Test
  void callbackPastFiveSeconds_failsWithAClearError() {
    ServerRef<Msg> ref = start(b -> b.consume(false));
    assertThatThrownBy(() -> ref.priorityCall(new Slow(TimeUnit.SECONDS.toNanos(6))))
        .isInstanceOf(CallbackException.class)
        .cause()
        .isInstanceOf(TransactionTooLongException.class)
        .hasMessageContaining("5000 ms transaction limit");
    assertThat(total(ref)).isZero();
  }

  @Test
  void callbackUnderFiveSeconds_commits() {
    ServerRef<Msg> ref = start(b -> b.consume(false));
    ref.priorityCast(new Slow(TimeUnit.SECONDS.toNanos(4)));
    assertThat(total(ref)).isEqualTo(1);
  }
}
