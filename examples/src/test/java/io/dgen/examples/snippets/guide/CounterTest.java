package io.dgen.examples.snippets.guide;

import static org.assertj.core.api.Assertions.assertThat;

import io.dgen.ServerRef;
import io.dgen.testkit.DGenExtension;
import io.dgen.testkit.TestKit;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

// snippet: gs-test-kit
@ExtendWith(DGenExtension.class)
class CounterTest {
  @Test
  void countsCastsAndTimers(TestKit kit) {
    ServerRef<Counter.Msg> counter = kit.start(new Counter(), null);
    counter.castAll(List.of(new Counter.Increment(2), new Counter.Increment(3)));
    counter.castAfter(new Counter.Increment(10), Duration.ofMinutes(30));
    kit.assertQueueLength(counter, 2);

    assertThat(kit.drain(counter)).isEqualTo(2); // every callback has run when drain returns
    assertThat(counter.call(new Counter.Get())).isEqualTo(5L);

    kit.advance(Duration.ofMinutes(30)); // the timer is due: queued before advance returns
    kit.drain(counter);
    assertThat(counter.call(new Counter.Get())).isEqualTo(15L);
  }
}
// end snippet
