package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.TestServer.Act;
import io.dgen.TestServer.Add;
import io.dgen.TestServer.AddAndGet;
import io.dgen.TestServer.Ask;
import io.dgen.TestServer.Boom;
import io.dgen.TestServer.Echo;
import io.dgen.TestServer.Get;
import io.dgen.TestServer.Msg;
import io.dgen.TestServer.TxWrite;
import io.dgen.admin.ServerControl;
import io.dgen.backend.CountingBackend;
import io.dgen.backend.KeyValue;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

class MessagingTest extends RuntimeTestBase {

  private byte[] userKey(String key) {
    return tenant.subspace().pack(Tuple.from("user", key));
  }

  private String readUserKey(String key) {
    byte[] v = backend.run(tx -> tx.get(userKey(key)));
    return v == null ? null : new String(v, StandardCharsets.UTF_8);
  }

  @Test
  void castAll_isOneTransaction_andKeepsOrder() {
    ServerRef<Msg> publisher = start(b -> b.consume(false));
    CountingBackend.Counters before = counters();
    publisher.castAll(List.of(new Add(1), new Add(2), new Add(3), new Add(4)));
    assertThat(counters().minus(before).transactionsCommitted()).isEqualTo(1);
    assertThat(ServerControl.of(publisher).queueLength()).isEqualTo(4);

    ServerRef<Msg> consumer = start();
    awaitTotal(consumer, 10);
    assertThat(state(consumer).seen()).containsExactly(1L, 2L, 3L, 4L);
  }

  @Test
  void casts_fromOneThread_areAppliedInSendOrder() {
    ProcessRef<Msg> ref = start();
    for (long i = 1; i <= 50; i++) {
      ref.cast(new Add(i));
    }
    awaitTotal(ref, 50 * 51 / 2);
    assertThat(state(ref).seen()).isSorted().hasSize(50);
  }

  @Test
  void queuedCall_isAnsweredThroughTheReplySlot() {
    ServerRef<Msg> consumer = start(b -> b.consumeK(4)); // consumeK > 1: never inline
    long reply = consumer.<Long>call(new AddAndGet(5));
    assertThat(reply).isEqualTo(5);
    assertThat(consumer.<Long>call(new Get())).isEqualTo(5);
    assertNoReplySlots(consumer);
  }

  @Test
  void callAsync_completesWithTheReply() throws Exception {
    ProcessRef<Msg> ref = start(b -> b.consumeK(2));
    CompletableFuture<Long> f = ref.callAsync(new AddAndGet(7), Duration.ofSeconds(10));
    assertThat(f.get(10, java.util.concurrent.TimeUnit.SECONDS)).isEqualTo(7);
  }

  @Test
  void queuedCall_largeReplySpansSeveralChunks() {
    ProcessRef<Msg> ref = start(b -> b.consumeK(2));
    String reply = ref.call(new Echo(250_000));
    assertThat(reply).hasSize(250_000);
    assertNoReplySlots(ref);
  }

  @Test
  void callTimeout_clearsTheSlot_andTheCallStillExecutes() {
    ServerRef<Msg> publisher = start(b -> b.consume(false));
    assertThatThrownBy(() -> publisher.call(new AddAndGet(3), Duration.ofMillis(100)))
        .isInstanceOf(CallTimeoutException.class)
        .hasMessageContaining("still execute");
    assertNoReplySlots(publisher);
    assertThat(ServerControl.of(publisher).queueLength()).isEqualTo(1);

    ServerRef<Msg> consumer = start();
    awaitTotal(consumer, 3);
    assertNoReplySlots(consumer);
  }

  @Test
  void inlineCall_isOneTransaction_withoutQueueWrites() {
    ProcessRef<Msg> ref = start();
    awaitIdle(ref);
    CountingBackend.Counters before = counters();
    long reply = ref.<Long>call(new AddAndGet(9));
    CountingBackend.Counters used = counters().minus(before);
    assertThat(reply).isEqualTo(9);
    assertThat(used.runs()).isEqualTo(1);
    assertThat(used.transactionsCommitted()).isEqualTo(1);
    assertThat(ServerControl.of(ref).queueLength()).isZero();
    var n = tenant.subspace().subspace(ref.tuid()).pack(Tuple.from("q", 0L, "n"));
    byte[] pushes = backend.run(tx -> tx.get(n));
    assertThat(pushes).isNull(); // nothing was ever pushed
  }

  @Test
  void inlineCall_thatThrows_raisesToTheCaller_andIsQueuedForRetry() {
    ProcessRef<Msg> ref = start(); // a consumer with consumeK 1: inline calls
    awaitIdle(ref);
    assertThatThrownBy(
            () ->
                ref.call(new TestServer.FailFirst("inline", 1), Long.class, Duration.ofSeconds(30)))
        .isInstanceOf(CallbackException.class)
        .hasMessageContaining("queued for retry")
        .hasRootCauseMessage("failing attempt 1 of inline");
    // the queued copy is retried by the consumer and succeeds on its second attempt
    awaitTotal(ref, 1);
    assertThat(hooks.attempts.get("inline")).hasValue(2);
  }

  @Test
  void inlineCall_failure_discardsTheCallbacksWrites() {
    ProcessRef<Msg> ref = start();
    awaitIdle(ref);
    assertThatThrownBy(
            () -> ref.call(new TxWrite("k", "v", true), Long.class, Duration.ofSeconds(30)))
        .isInstanceOf(CallbackException.class);
    assertThat(readUserKey("k")).isNull();
    ref.stop();
  }

  @Test
  void priorityCall_bypassesTheQueue() {
    ServerRef<Msg> publisher = start(b -> b.consume(false));
    publisher.cast(new Add(5));
    assertThat(publisher.<Long>priorityCall(new AddAndGet(1)))
        .isEqualTo(1); // ahead of the queued cast
    publisher.priorityCast(new Add(2));
    assertThat(ServerControl.of(publisher).queueLength()).isEqualTo(1);
    assertThat(total(publisher)).isEqualTo(3);
  }

  @Test
  void priorityCall_failure_isNotRetried_andCommitsNothing() {
    ProcessRef<Msg> ref = start(b -> b.consume(false));
    assertThatThrownBy(() -> ref.priorityCall(new Ask(new Boom("now"))))
        .isInstanceOf(CallbackException.class)
        .hasRootCauseMessage("boom: now");
    assertThatThrownBy(() -> ref.priorityCast(new TxWrite("p", "v", true)))
        .isInstanceOf(CallbackException.class);
    assertThat(readUserKey("p")).isNull();
    assertThat(ServerControl.of(ref).queueLength()).isZero();
  }

  @Test
  void info_runsHandleInfo() {
    ProcessRef<Msg> ref = start(b -> b.consume(false));
    Object anything = new Object();
    ref.info(anything);
    assertThat(hooks.infos).containsExactly(anything);
    assertThat(total(ref)).isEqualTo(100);
  }

  @Test
  void txCallbacks_writeOtherKeysAtomically() {
    ProcessRef<Msg> ref = start();
    ref.cast(new TxWrite("a", "1", false));
    awaitTotal(ref, 1);
    assertThat(readUserKey("a")).isEqualTo("1");
    ref.priorityCast(new TxWrite("b", "2", false));
    assertThat(readUserKey("b")).isEqualTo("2");
  }

  @Test
  void actions_runInOrderAfterCommit_withTheCommittedState() {
    ProcessRef<Msg> ref = start();
    ref.cast(new Act(List.of("rec:a", "rec:b")));
    await().atMost(Duration.ofSeconds(10)).until(() -> hooks.actions.size() == 2);
    assertThat(hooks.actions).containsExactly("rec:a@1", "rec:b@1");
  }

  @Test
  void failingAction_stopsTheRest_andTheCommitStands() {
    ProcessRef<Msg> ref = start();
    ref.priorityCast(new Act(List.of("rec:a", "fail", "rec:never")));
    assertThat(hooks.actions).containsExactly("rec:a@1");
    assertThat(total(ref)).isEqualTo(1);
  }

  @Test
  void haltingAction_stopsTheRest() {
    ProcessRef<Msg> ref = start(b -> b.consume(false));
    ref.priorityCast(new Act(List.of("rec:a", "halt", "rec:never")));
    assertThat(hooks.actions).containsExactly("rec:a@1");
  }

  @Test
  void outbox_enqueuesOnlyWhenTheUsersTransactionCommits() {
    ProcessRef<Msg> ref = start(b -> b.consume(false));
    Outbox<Msg> out = ref.outbox();
    backend.run(
        tx -> {
          tx.set(userKey("order"), "placed".getBytes(StandardCharsets.UTF_8));
          out.cast(tx, new Add(1));
          out.cast(tx, new Add(2));
          return null;
        });
    assertThat(ServerControl.of(ref).queueLength()).isEqualTo(2);

    assertThatThrownBy(
            () ->
                backend.run(
                    tx -> {
                      out.cast(tx, new Add(100));
                      throw new IllegalStateException("user aborts");
                    }))
        .hasMessage("user aborts");
    assertThat(ServerControl.of(ref).queueLength()).isEqualTo(2);

    ServerRef<Msg> consumer = start();
    awaitTotal(consumer, 3);
    assertThat(state(consumer).seen()).containsExactly(1L, 2L);
    assertThat(readUserKey("order")).isEqualTo("placed");
  }

  /** Waits until the consumer has found its queue empty: it then holds a watch and is quiet. */
  private void awaitIdle(ProcessRef<Msg> ref) {
    await()
        .atMost(Duration.ofSeconds(10))
        .until(() -> ServerControl.of(ref).queueLength() == 0 && counters().watchesArmed() >= 1);
  }

  /**
   * No reply slot is left behind. A slot whose reply was read is cleared a few milliseconds later,
   * with others in one transaction (the caller does not wait for that commit); a slot of a call
   * that timed out is cleared by the caller at once.
   */
  private void assertNoReplySlots(ServerRef<Msg> ref) {
    var calls = tenant.subspace().subspace(ref.tuid()).subspace(Tuple.from("c"));
    await()
        .atMost(Duration.ofSeconds(10))
        .untilAsserted(
            () -> {
              List<KeyValue> rows =
                  backend.run(tx -> tx.getRange(calls.range().begin, calls.range().end));
              assertThat(rows).isEmpty();
            });
  }
}
