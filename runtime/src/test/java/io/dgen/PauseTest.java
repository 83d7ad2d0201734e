package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.admin.ServerAdmin;
import io.dgen.admin.ServerControl;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;

/**
 * The operator's controls on one server's queue ({@link ServerAdmin#pause}, {@link
 * ServerAdmin#resume}, {@link ServerAdmin#cancelQueued}): a paused server applies nothing, across a
 * restart of its runtime, and everything in order once resumed; a cancelled queued message is never
 * applied. Runs on every backend (the behaviour suite).
 */
class PauseTest extends RuntimeTestBase {

  static List<Long> seen(ServerRef<TestServer.Msg> ref) {
    return ref.priorityCall(new TestServer.GetSeen()); // bypasses the queue: runs while paused
  }

  static void append(ServerRef<TestServer.Msg> ref, long from, long to) {
    List<TestServer.Msg> casts = new ArrayList<>();
    for (long i = from; i <= to; i++) {
      casts.add(new TestServer.AppendInPlace(i));
    }
    ref.castAll(casts);
  }

  static void awaitSeen(ServerRef<TestServer.Msg> ref, long n) {
    await().atMost(BULK_WAIT).until(() -> seen(ref).size() >= n);
  }

  static List<Long> oneTo(long n) {
    return LongStream.rangeClosed(1, n).boxed().toList();
  }

  @Test
  void aPausedServerAppliesNothing_thenEverythingInOrderAfterResume_acrossARestart() {
    ProcessRef<TestServer.Msg> ref = start();
    append(ref, 1, 3);
    awaitSeen(ref, 3);
    ServerAdmin admin = admin(ref);
    assertThat(admin.paused()).isEmpty();
    assertThat(admin.pause("maintenance")).isTrue();
    assertThat(admin.pause("again")).isFalse();
    assertThat(admin.paused()).get().extracting(ServerAdmin.Pause::reason).isEqualTo("maintenance");

    append(ref, 4, 10);
    // a queued call waits while paused: its timeout passes with the consumers rung and idle
    assertThatThrownBy(() -> ref.call(new TestServer.Get(), Duration.ofMillis(300)))
        .isInstanceOf(CallTimeoutException.class);
    assertThat(seen(ref)).isEqualTo(oneTo(3));
    assertThat(admin.peek(100)).hasSize(8); // seven casts and the call; the pause is not listed

    // a new runtime finds the pause too
    dgen.close();
    dgen = newDGen();
    tenant = dgen.tenant(tenant.path().toArray(String[]::new));
    ProcessRef<TestServer.Msg> again = start();
    append(again, 11, 20);
    assertThatThrownBy(() -> again.call(new TestServer.Get(), Duration.ofMillis(300)))
        .isInstanceOf(CallTimeoutException.class);
    assertThat(seen(again)).isEqualTo(oneTo(3));
    assertThat(ServerControl.of(again).queueLength()).isEqualTo(19);

    assertThat(admin.resume()).isTrue();
    assertThat(admin.resume()).isFalse();
    assertThat(admin.paused()).isEmpty();
    awaitSeen(again, 20);
    assertThat(seen(again)).isEqualTo(oneTo(20));
    await().atMost(BULK_WAIT).until(() -> ServerControl.of(again).queueLength() == 0);
  }

  /** The same with a hosted server, reached by a ref, whose holder restarts while it is paused. */
  @Test
  void aPausedHostedServerAppliesNothing_acrossItsHoldersRestart_thenEverythingInOrder() {
    dgen.host("counter", () -> new TestServer(hooks), HostOptions.builder(tenant).build());
    ServerRef<TestServer.Msg> ref = dgen.ref(tenant, "counter", Tuple.from("a"));
    append(ref, 1, 3);
    awaitSeen(ref, 3);
    ServerAdmin admin = admin(ref);
    assertThat(admin.pause("hosted")).isTrue();
    append(ref, 4, 10);
    assertThatThrownBy(() -> ref.call(new TestServer.Get(), Duration.ofMillis(300)))
        .isInstanceOf(CallTimeoutException.class);

    dgen.close();
    dgen = newDGen();
    tenant = dgen.tenant(tenant.path().toArray(String[]::new));
    dgen.host("counter", () -> new TestServer(hooks), HostOptions.builder(tenant).build());
    ServerRef<TestServer.Msg> again = dgen.ref(tenant, "counter", Tuple.from("a"));
    append(again, 11, 20);
    assertThatThrownBy(() -> again.call(new TestServer.Get(), Duration.ofMillis(300)))
        .isInstanceOf(CallTimeoutException.class);
    assertThat(seen(again)).isEqualTo(oneTo(3));

    assertThat(admin.resume()).isTrue();
    awaitSeen(again, 20);
    assertThat(seen(again)).isEqualTo(oneTo(20));
  }

  @Test
  void cancelQueued_removesOneMessage_andIsFalseForAnUnknownOrConsumedOne() {
    ProcessRef<TestServer.Msg> ref = start();
    ServerAdmin admin = admin(ref);
    assertThat(admin.pause("")).isTrue();
    append(ref, 1, 3);
    List<ServerAdmin.QueuedItem> queued = admin.peek(10);
    assertThat(queued).hasSize(3);
    String second = queued.get(1).id();
    assertThat(admin.cancelQueued(second)).isTrue();
    assertThat(admin.cancelQueued(second)).isFalse();
    assertThat(admin.cancelQueued("000000000000000000000000")).isFalse();
    assertThatThrownBy(() -> admin.cancelQueued("nope"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("not a queued message id");
    assertThat(admin.peek(10)).extracting(ServerAdmin.QueuedItem::id).doesNotContain(second);
    assertThat(ServerControl.of(ref).queueLength()).isEqualTo(2);

    assertThat(admin.resume()).isTrue();
    awaitSeen(ref, 2);
    await().atMost(BULK_WAIT).until(() -> ServerControl.of(ref).queueLength() == 0);
    assertThat(seen(ref)).containsExactly(1L, 3L);
    assertThat(admin.cancelQueued(queued.get(0).id())).as("consumed").isFalse();
  }

  @Test
  void pausingAServerThatDoesNotExist_isAClearError() {
    ProcessRef<TestServer.Msg> ref = start();
    ServerAdmin admin = admin(ref);
    ServerControl.of(ref).kill("test");
    assertThatThrownBy(() -> admin.pause("late"))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("no server")
        .hasMessageContaining("nothing to pause");
    assertThat(admin.resume()).isFalse();
  }
}
