package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dgen.admin.ServerControl;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * Messages near the size limit: every record that will ever wrap a queued message (its own item
 * after failures, the lock record, the dead letter) must fit in one value, so such a message is
 * dead-lettered or locked like any other, never retried forever.
 */
class LargeMessageTest extends RuntimeTestBase {

  sealed interface Msg {}

  /** Fails every time. */
  record Fail(String payload) implements Msg {}

  /** Takes the lock. */
  record Lock(String payload) implements Msg {}

  /** Counts. */
  record Count() implements Msg {}

  /** Replies the count. */
  record Read() implements Msg, Call<Long> {}

  static final class Server implements DGenServer<Long, Msg> {
    final List<Integer> handled = new CopyOnWriteArrayList<>();

    @Override
    public InitResult<Long> init(@Nullable Object arg) {
      return InitResult.ok(0L);
    }

    @Override
    public Result<Long> handleCast(Msg message, Long state) {
      if (message instanceof Fail) {
        throw new IllegalStateException("always fails");
      }
      if (message instanceof Lock) {
        return Result.lock(state);
      }
      return Result.noReply(state + 1);
    }

    @Override
    public Result<Long> handleCall(Msg request, From from, Long state) {
      return Result.reply(state, state);
    }

    @Override
    public Result<Long> handleLocked(DbContext db, Event<Msg> event, Long state) {
      handled.add(((Lock) event.message()).payload().length());
      return Result.noReply(state + 1000);
    }
  }

  private final Server server = new Server();

  private ProcessRef<Msg> startServer() {
    return dgen.start(server, null, StartOptions.builder(tenant).deadLetterThreshold(2).build());
  }

  @Test
  void aMessageNearTheSizeLimitThatFails_isDeadLettered() {
    ServerRef<Msg> ref = startServer();
    ref.cast(new Fail("x".repeat(95_000)));
    ref.cast(new Count());
    await()
        .atMost(Duration.ofSeconds(30))
        .until(() -> ServerControl.of(ref).deadLetters().size() == 1);
    assertThat(((Fail) ServerControl.of(ref).deadLetters().get(0).message()).payload())
        .hasSize(95_000);
    assertThat(ServerControl.of(ref).deadLetters().get(0).attempts()).isEqualTo(2);
    await().atMost(Duration.ofSeconds(30)).until(() -> ref.priorityCall(new Read()) == 1);
  }

  @Test
  void aMessageNearTheSizeLimitThatTakesTheLock_isHandledLocked() {
    ServerRef<Msg> ref = startServer();
    ref.cast(new Lock("x".repeat(95_000)));
    ref.cast(new Count());
    await().atMost(Duration.ofSeconds(30)).until(() -> ref.priorityCall(new Read()) == 1001);
    assertThat(server.handled).containsExactly(95_000);
  }

  @Test
  void theLargestMessageAPushAccepts_stillFitsInEveryRecordThatWrapsIt() {
    ServerRef<Msg> ref = startServer();
    int largest = largestAccepted();
    assertThat(largest).isGreaterThan(95_000);
    ref.cast(new Fail("x".repeat(largest)));
    await()
        .atMost(Duration.ofSeconds(30))
        .until(() -> ServerControl.of(ref).deadLetters().size() == 1);
    ref.cast(new Lock("y".repeat(largest)));
    await().atMost(Duration.ofSeconds(30)).until(() -> server.handled.size() == 1);
    assertThat(server.handled).containsExactly(largest);
  }

  @Test
  void aMessageOverTheLimit_isRefusedAtThePush_andNothingIsWritten() {
    ServerRef<Msg> ref = startServer();
    assertThatThrownBy(() -> ref.cast(new Fail("x".repeat(100_000))))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("bytes");
    assertThat(ServerControl.of(ref).queueLength()).isZero();
  }

  /**
   * The longest payload a cast accepts, found by bisection on a publish-only process of the same
   * server in another tenant (its queue is never consumed).
   */
  private int largestAccepted() {
    ServerRef<Msg> probe =
        dgen.start(
            new Server(),
            null,
            StartOptions.builder(dgen.tenant("test", tenant.path().get(1) + "-probe"))
                .consume(false)
                .build());
    int lo = 90_000;
    int hi = 100_000;
    while (lo + 1 < hi) {
      int mid = (lo + hi) >>> 1;
      try {
        probe.cast(new Fail("p".repeat(mid)));
        lo = mid;
      } catch (IllegalArgumentException refused) {
        hi = mid;
      }
    }
    return lo;
  }
}
