package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dgen.TestServer.Act;
import io.dgen.TestServer.AddAndGet;
import io.dgen.TestServer.Msg;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The four-second guard on callbacks measures callback time from the transaction's read version, as
 * FoundationDB's five-second limit does: a cluster slow to hand out read versions (ratekeeper
 * throttling, a recovery) makes transactions wait, and that wait must not turn valid messages into
 * dead letters or callers' errors.
 */
class ReadLatencyTest extends RuntimeTestBase {

  /** Longer than the guard's four seconds, shorter than an operation or a call may wait. */
  private static final Duration SLOW_READ_VERSION = Duration.ofMillis(4_300);

  @AfterEach
  void fastAgain() {
    faults().reset();
  }

  @Test
  void aQueuedMessage_whoseBatchWaitedLongForItsReadVersion_isApplied_notDeadLettered() {
    ServerRef<Msg> ref = start(b -> b.consumeK(2).deadLetterThreshold(1));
    faults().readVersionLatency(SLOW_READ_VERSION);
    ref.cast(new Act(List.of("rec:applied")));

    // watched without a transaction: the action runs once the batch committed
    await()
        .atMost(Duration.ofSeconds(90))
        .until(() -> !hooks.actions.isEmpty() || !hooks.deadLetters.isEmpty());
    assertThat(hooks.deadLetters).isEmpty();
    assertThat(hooks.actions).containsExactly("rec:applied@1");
  }

  @Test
  void anInlineCallAndAPriorityCall_whoseTransactionsWaitedLongForTheirReadVersion_succeed() {
    ServerRef<Msg> ref = start(); // consumeK 1: calls run inline
    faults().readVersionLatency(SLOW_READ_VERSION);

    assertThat(ref.<Long>call(new AddAndGet(1), Duration.ofSeconds(30))).isEqualTo(1);
    assertThat(ref.<Long>priorityCall(new AddAndGet(2))).isEqualTo(3);
  }
}
