package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.apple.foundationdb.tuple.Tuple;
import com.apple.foundationdb.tuple.Versionstamp;
import io.dgen.TestServer.Add;
import io.dgen.TestServer.Msg;
import io.dgen.admin.ServerControl;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import tools.jackson.dataformat.smile.SmileMapper;

class SerializationTest extends RuntimeTestBase {

  /** A class that must never be loaded by decoding: its initializer would record it. */
  static final class Forbidden {
    static {
      System.setProperty("dgen.test.forbidden.loaded", "true");
    }
  }

  @Test
  void queueItemNamingAClassOutsideTheAllowedSet_isDeadLettered_andNeverLoaded() {
    ServerRef<Msg> publisher = start(b -> b.consume(false));
    // Write an envelope naming a forbidden class straight into the queue range.
    var mapper = SmileMapper.builder().build();
    var envelope = mapper.createObjectNode();
    envelope.put("k", 2);
    envelope.put("t", "io.dgen.SerializationTest$Forbidden");
    envelope.putObject("m");
    envelope.put("s", 0);
    byte[] bytes = mapper.writeValueAsBytes(envelope);
    backend.run(
        tx -> {
          tx.setVersionstampedKey(
              tenant.subspace().getKey(),
              publisher.tuid().addAll(Tuple.from("q", 0L, "i", 1L, Versionstamp.incomplete(0))),
              bytes);
          return null;
        });
    publisher.cast(new Add(5));

    ServerRef<Msg> consumer = start();
    awaitTotal(consumer, 5);
    assertThat(System.getProperty("dgen.test.forbidden.loaded")).isNull();
    var dead = tenant.subspace().subspace(publisher.tuid()).subspace(Tuple.from("d"));
    await()
        .atMost(Duration.ofSeconds(5))
        .until(
            () -> backend.run(tx -> tx.getRange(dead.range().begin, dead.range().end)).size() == 1);
  }

  @Test
  void messageOfAClassOutsideTheSealedType_isRefusedAtSend() {
    DGenServer<TestServer.State, Object> loose = new LooseServer();
    ServerRef<Object> ref =
        dgen.start(loose, null, StartOptions.builder(tenant).consume(false).build());
    assertThatThrownBy(() -> ref.cast(new java.util.ArrayList<String>()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("not allowed");
    ref.cast("a string is a JDK value type");
    assertThat(ServerControl.of(ref).queueLength()).isEqualTo(1);
  }

  @Test
  void allowTypes_admitsExtraMessageAndReplyClasses() {
    record Ping(String text) {}
    DGenServer<TestServer.State, Object> loose = new LooseServer();
    ServerRef<Object> ref =
        dgen.start(
            loose, null, StartOptions.builder(tenant).consumeK(2).allowTypes(Ping.class).build());
    Object reply = ref.awaitReply(ref.submit(new Ping("hi")), Duration.ofSeconds(10));
    assertThat(reply).as("decoded by its stored type name").isEqualTo(new Ping("hi"));
  }

  record Answer(long v) {}

  /** Replies with a record that is not among its allowed types. */
  static final class AnswerServer implements DGenServer<TestServer.State, String> {
    @Override
    public InitResult<TestServer.State> init(Object arg) {
      return InitResult.ok(TestServer.State.of(0));
    }

    @Override
    public Result<TestServer.State> handleCall(String request, From from, TestServer.State s) {
      return Result.reply(new Answer(7), s.add(1));
    }
  }

  @Test
  void replyOfAClassNotAllowed_failsTheCallerClearly_butNeverBlocksTheQueue() {
    ProcessRef<String> queued =
        dgen.start(new AnswerServer(), null, StartOptions.builder(tenant).consumeK(2).build());
    String asked = queued.submit("ask"); // a reply awaited by id is decoded by its type name
    assertThatThrownBy(() -> queued.awaitReply(asked, Duration.ofSeconds(10)))
        .isInstanceOf(UndecodableDataException.class)
        .hasMessageContaining(Answer.class.getName())
        .hasMessageContaining("allowTypes");
    assertThat(queued.call("ask", Answer.class, Duration.ofSeconds(10))).isEqualTo(new Answer(7));
    assertThat(ServerControl.of(queued).queueLength()).isZero();
    queued.stop();

    ServerRef<String> inline =
        dgen.start(new AnswerServer(), null, StartOptions.builder(tenant).build());
    assertThat(inline.call("ask", Answer.class, Duration.ofSeconds(10))).isEqualTo(new Answer(7));
  }

  @Test
  void records_andCollections_roundTripThroughTheQueue() {
    ServerRef<Msg> ref = start(b -> b.consumeK(3));
    ref.castAll(List.of(new Add(1), new Add(2)));
    TestServer.State s = ref.call(new TestServer.GetState());
    assertThat(s.seen()).containsExactly(1L, 2L);
  }

  /** A server over {@code Object} messages: echoes calls, ignores casts. */
  static final class LooseServer implements DGenServer<TestServer.State, Object> {
    @Override
    public InitResult<TestServer.State> init(Object arg) {
      return InitResult.ok(TestServer.State.of(0));
    }

    @Override
    public Result<TestServer.State> handleCall(Object request, From from, TestServer.State state) {
      return Result.reply(request, state);
    }

    @Override
    public Result<TestServer.State> handleCast(Object message, TestServer.State state) {
      return Result.noReply(state);
    }
  }
}
