package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.apple.foundationdb.subspace.Subspace;
import com.apple.foundationdb.tuple.Tuple;
import io.dgen.TestServer.Add;
import io.dgen.TestServer.AddAndGet;
import io.dgen.TestServer.AppendInPlace;
import io.dgen.TestServer.GetSeen;
import io.dgen.TestServer.GetSeenThenAppend;
import io.dgen.TestServer.Msg;
import io.dgen.admin.ServerControl;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * How a queued call's reply reaches its caller: a consumer hands it to a caller in its own runtime
 * after the commit; a caller in another runtime is rung through the tenant's doorbell (a wake log
 * entry) and reads the reply from its slot.
 */
class ReplyDeliveryTest extends RuntimeTestBase {

  /** The tenant's wake logs, all buckets: one entry per ring (see docs/key-layout.md). */
  private long wakeLogEntries() {
    byte[] t = tenant.subspace().getKey();
    byte[] prefix = Arrays.copyOf(t, t.length + 1);
    prefix[t.length] = (byte) 0xFF;
    Subspace log = new Subspace(prefix).subspace(Tuple.from(6)); // every bucket's log
    return backend.run(tx -> tx.getRange(log.range().begin, log.range().end)).size();
  }

  @Test
  void callerInTheConsumersRuntime_getsTheReplyHandedOver_withoutARing() {
    ServerRef<Msg> ref = start(b -> b.consumeK(4)); // consumeK > 1: never inline
    long before = wakeLogEntries();

    for (int i = 1; i <= 5; i++) {
      assertThat(ref.<Long>call(new AddAndGet(1), Duration.ofSeconds(30))).isEqualTo(i);
    }

    assertThat(wakeLogEntries() - before).as("one ring per push, none per reply").isEqualTo(5);
  }

  @Test
  void callerInAnotherRuntime_isRungAndReadsTheReply() {
    start(b -> b.consumeK(4)); // the consumer, in this test's runtime
    try (DGen other = DGen.builder(backend).build()) {
      ServerRef<Msg> caller =
          other.start(
              new TestServer(hooks),
              null,
              StartOptions.builder(other.tenant(tenant.path().toArray(String[]::new)))
                  .consume(false)
                  .build());
      long before = wakeLogEntries();

      for (int i = 1; i <= 5; i++) {
        assertThat(caller.<Long>call(new AddAndGet(1), Duration.ofSeconds(30))).isEqualTo(i);
      }

      assertThat(wakeLogEntries() - before).as("a ring per push and per reply").isEqualTo(10);
    }
  }

  /**
   * A reply that shares structure with the state (here the state's own list) and a later callback
   * of the same batch that changes that structure in place: the caller in the consumer's runtime,
   * handed the reply without a read, must see it as it was when the callback replied, as a caller
   * in another runtime, which reads it from its slot, does.
   */
  @Test
  void aReplyHandedOverInTheConsumersRuntime_isTheValueAsItWasWhenTheCallbackReplied()
      throws Exception {
    ServerRef<Msg> publisher = start(b -> b.consume(false));
    publisher.cast(new Add(1));
    CompletableFuture<List<Long>> call = publisher.callAsync(new GetSeen(), Duration.ofSeconds(30));
    // callAsync returns before its push commits: the cast must be queued behind it
    await()
        .atMost(Duration.ofSeconds(30))
        .until(() -> ServerControl.of(publisher).queueLength() == 2);
    publisher.cast(new AppendInPlace(5));

    ServerRef<Msg> consumer = start(b -> b.consumeK(8)); // the three in one batch
    assertThat(call.get(30, TimeUnit.SECONDS)).containsExactly(1L);
    assertThat(state(consumer).seen()).containsExactly(1L, 5L);
  }

  /** An inline call's reply is handed over after its actions ran: they must not change it. */
  @Test
  void anInlineCallsReply_isTheValueAsItWasWhenTheCallbackReplied_whateverItsActionsDo() {
    ServerRef<Msg> ref = start(); // consumeK 1: calls run inline
    ref.cast(new Add(1));
    awaitTotal(ref, 1);

    List<Long> seen = ref.call(new GetSeenThenAppend(5), Duration.ofSeconds(30));
    assertThat(seen).containsExactly(1L);
    List<Long> priority = ref.priorityCall(new GetSeenThenAppend(7));
    assertThat(priority).containsExactly(1L);
  }
}
