package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.admin.ServerControl;
import java.time.Duration;
import java.util.List;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * Servers of one behaviour share what their declared types allow, but each has its own durable type
 * table: two servers whose tables numbered the same classes differently (they were first started
 * allowing different classes) still decode their own messages, side by side in one runtime.
 */
class SharedTypesTest extends RuntimeTestBase {

  record Small(long n) {}

  record Large(long n) {}

  /**
   * A total over messages of any allowed class: a {@link Small} adds n, a {@link Large} 1,000 n.
   */
  static final class AnyCounter implements DGenServer<Long, Object> {
    private final String id;

    AnyCounter(String id) {
      this.id = id;
    }

    @Override
    public InitResult<Long> init(@Nullable Object arg) {
      return InitResult.ok(Tuple.from("any", id), 0L);
    }

    @Override
    public Result<Long> handleCast(Object message, Long total) {
      if (message instanceof Small s) {
        return Result.noReply(total + s.n());
      }
      return Result.noReply(total + 1_000 * ((Large) message).n());
    }

    @Override
    public Result<Long> handleCall(Object request, From from, Long total) {
      return Result.reply(total, total);
    }
  }

  private ProcessRef<Object> start(DGen runtime, String id, Class<?>... allowed) {
    return runtime.start(
        new AnyCounter(id),
        null,
        StartOptions.builder(runtime.tenant(tenant.path().toArray(String[]::new)))
            .allowTypes(allowed)
            .build());
  }

  @Test
  void serversOfOneBehaviour_keepTheirOwnTypeTables() {
    // a's table gets Small first, b's Large first: the same index names different classes
    start(dgen, "a", Small.class).stop();
    start(dgen, "b", Large.class).stop();

    try (DGen runtime = DGen.builder(backend).build()) {
      ServerRef<Object> a = start(runtime, "a", Small.class, Large.class);
      ServerRef<Object> b = start(runtime, "b", Small.class, Large.class);
      for (ServerRef<Object> ref : List.of(a, b)) {
        ref.cast(new Small(1));
        ref.cast(new Large(2));
      }
      for (ServerRef<Object> ref : List.of(a, b)) {
        await()
            .atMost(Duration.ofSeconds(30))
            .until(() -> ref.call("total", Long.class, Duration.ofSeconds(10)) == 2_001L);
        assertThat(ServerControl.of(ref).deadLetters()).isEmpty();
      }
    }
  }
}
