package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;

import com.apple.foundationdb.subspace.Subspace;
import com.apple.foundationdb.tuple.Tuple;
import io.dgen.TestServer.Add;
import io.dgen.TestServer.Msg;
import java.time.Duration;
import java.util.Arrays;
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
      assertThat(ref.<Long>call(new Add(1), Duration.ofSeconds(30))).isEqualTo(i);
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
        assertThat(caller.<Long>call(new Add(1), Duration.ofSeconds(30))).isEqualTo(i);
      }

      assertThat(wakeLogEntries() - before).as("a ring per push and per reply").isEqualTo(10);
    }
  }
}
