package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.TestServer.Add;
import io.dgen.TestServer.Msg;
import io.dgen.TestServer.Poison;
import io.dgen.admin.ServerControl;
import io.dgen.backend.CountingBackend;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** consumeK batching and dead letters. */
class ReliabilityTest extends RuntimeTestBase {

  @Test
  void consumeK64_processesTenThousandCastsInFewTransactions() {
    ServerRef<Msg> publisher = start(b -> b.consume(false));
    for (int chunk = 0; chunk < 10; chunk++) {
      List<Add> adds = new ArrayList<>();
      for (int i = 0; i < 1_000; i++) {
        adds.add(new Add(1));
      }
      publisher.castAll(adds);
    }
    CountingBackend.Counters before = counters();
    ServerRef<Msg> consumer = start(b -> b.consumeK(64));
    await()
        .atMost(Duration.ofSeconds(60))
        .until(() -> ServerControl.of(publisher).queueLength() == 0);
    long consumerTransactions = counters().minus(before).transactionsCommitted();
    assertThat(total(consumer)).isEqualTo(10_000);
    assertThat(consumerTransactions).isLessThanOrEqualTo((long) Math.ceil(10_000 / 64.0 * 1.05));
  }

  @Test
  void batch_isCappedByBytesWritten_whateverConsumeKSays() {
    ServerRef<Msg> publisher = start(b -> b.consume(false));
    List<TestServer.TxWrite> big = new ArrayList<>();
    for (int i = 0; i < 40; i++) {
      big.add(new TestServer.TxWrite("k" + i, "v".repeat(90_000), false)); // 90 KB per message
    }
    publisher.castAll(big);
    CountingBackend.Counters before = counters();
    ServerRef<Msg> consumer = start(b -> b.consumeK(1_000));
    awaitTotal(consumer, 40);
    long batches = counters().minus(before).transactionsCommitted();
    // 3.6 MB of writes cannot go in one ~1 MB batch: at least four batches, none near 10 MB
    assertThat(batches).isBetween(4L, 40L);
    assertThat(ServerControl.of(publisher).queueLength()).isZero();
  }

  @Test
  void poisonMessage_isDeadLetteredAfterThreeAttempts_neighboursAppliedOnce() throws Exception {
    ServerRef<Msg> publisher = start(b -> b.consume(false));
    publisher.cast(new Add(1));
    publisher.cast(new Add(2));
    CompletableFuture<Long> poisoned =
        publisher.callAsync(new Poison("p"), Long.class, Duration.ofSeconds(30));
    publisher.cast(new Add(4));
    publisher.cast(new Add(8));

    ServerRef<Msg> consumer = start(b -> b.consumeK(8).deadLetterThreshold(3));
    assertThat(poisoned)
        .failsWithin(Duration.ofSeconds(30))
        .withThrowableOfType(ExecutionException.class)
        .havingCause()
        .isInstanceOfSatisfying(
            DeadLetterException.class, e -> assertThat(e.attempts()).isEqualTo(3));
    awaitTotal(consumer, 15);
    assertThat(state(consumer).seen()).containsExactly(1L, 2L, 4L, 8L);
    assertThat(hooks.attempts.get("p")).hasValue(3);
    assertThat(hooks.deadLetters).containsExactly("Poison[id=p]x3");

    List<DeadLetter<Msg>> dead = ServerControl.of(consumer).deadLetters();
    assertThat(dead).hasSize(1);
    assertThat(dead.get(0).message()).isEqualTo(new Poison("p"));
    assertThat(dead.get(0).type()).isEqualTo(Event.Type.CALL);
    assertThat(dead.get(0).attempts()).isEqualTo(3);
    assertThat(dead.get(0).lastError()).contains("poisoned: p");

    hooks.poisoned.set(false); // fix the cause, then re-queue
    assertThat(ServerControl.of(consumer).requeueDeadLetter(dead.get(0).id(), true)).isTrue();
    awaitTotal(consumer, 16);
    assertThat(ServerControl.of(consumer).deadLetters()).isEmpty();
    assertThat(ServerControl.of(consumer).requeueDeadLetter(dead.get(0).id(), true)).isFalse();
  }

  @Test
  void requeuedDeadLetter_startsWithAFreshFailureCount() {
    ServerRef<Msg> ref = start(b -> b.deadLetterThreshold(3));
    ref.cast(new Poison("again"));
    await()
        .atMost(Duration.ofSeconds(30))
        .until(() -> ServerControl.of(ref).deadLetters().size() == 1);
    assertThat(hooks.attempts.get("again")).hasValue(3);

    // still poisoned: the re-queued message gets three more attempts, not one
    assertThat(
            ServerControl.of(ref)
                .requeueDeadLetter(ServerControl.of(ref).deadLetters().get(0).id(), true))
        .isTrue();
    await()
        .atMost(Duration.ofSeconds(30))
        .until(() -> ServerControl.of(ref).deadLetters().size() == 1);
    assertThat(hooks.attempts.get("again")).hasValue(6);
    assertThat(ServerControl.of(ref).deadLetters().get(0).attempts()).isEqualTo(3);
    await().atMost(Duration.ofSeconds(10)).until(() -> hooks.deadLetters.size() == 2);
    assertThat(hooks.deadLetters).containsExactly("Poison[id=again]x3", "Poison[id=again]x3");
    assertThat(ServerControl.of(ref).queueLength()).isZero();
  }

  @Test
  void deadLetters_canBePurged() {
    ServerRef<Msg> ref = start(b -> b.deadLetterThreshold(1));
    ref.cast(new Poison("a"));
    ref.cast(new Poison("b"));
    await()
        .atMost(Duration.ofSeconds(10))
        .until(() -> ServerControl.of(ref).deadLetters().size() == 2);
    String first = ServerControl.of(ref).deadLetters().get(0).id();
    assertThat(ServerControl.of(ref).purgeDeadLetter(first)).isTrue();
    assertThat(ServerControl.of(ref).purgeDeadLetter(first)).isFalse();
    assertThat(ServerControl.of(ref).purgeDeadLetters()).isEqualTo(1);
    assertThat(ServerControl.of(ref).deadLetters()).isEmpty();
    assertThatThrownBy(() -> ServerControl.of(ref).purgeDeadLetter("not-hex"))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void withoutThreshold_aFailingMessageIsRetriedUntilItSucceeds_thenTheQueueBehindItMovesOn() {
    ServerRef<Msg> ref = start();
    ref.cast(new TestServer.FailFirst("slow-to-heal", 6));
    ref.cast(new Add(1));
    awaitTotal(ref, 2);
    assertThat(hooks.attempts.get("slow-to-heal")).hasValue(7);
    assertThat(ServerControl.of(ref).deadLetters()).isEmpty();
  }

  /**
   * The docs' promise for a message that fails without a threshold: it is retried (never
   * dead-lettered), the messages behind it in its own queue wait (FIFO), and other servers of the
   * same runtime go on.
   */
  @Test
  void withoutThreshold_aFailingMessageHoldsBackItsOwnQueue_andNoOtherServer() {
    ServerRef<Msg> failing = start();
    failing.cast(new TestServer.FailFirst("never-heals", Integer.MAX_VALUE));
    failing.cast(new Add(1));
    ServerRef<Msg> other =
        dgen.start(
            new TestServer(hooks),
            new TestServer.Init(0, Tuple.from("other"), null),
            StartOptions.builder(tenant).build());
    other.cast(new Add(3));

    awaitTotal(other, 3);
    await()
        .atMost(Duration.ofSeconds(30))
        .until(() -> hooks.attempts.getOrDefault("never-heals", new AtomicInteger()).get() >= 5);
    assertThat(total(failing)).isZero();
    assertThat(ServerControl.of(failing).queueLength()).isEqualTo(2);
    assertThat(ServerControl.of(failing).deadLetters()).isEmpty();
  }

  /**
   * purgeDeadLetters works with any number of dead letters: a bounded number per transaction, each
   * page counted once even when its commit raises commit_unknown_result after applying.
   */
  @Test
  void purgeDeadLetters_removesThemAPageATransaction_eachCountedOnce() {
    int count = 250;
    ServerRef<Msg> ref = start(b -> b.consumeK(16).deadLetterThreshold(1));
    List<TestServer.Throw> poison = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      poison.add(new TestServer.Throw("p" + i, "runtime", Integer.MAX_VALUE));
    }
    ref.castAll(poison);
    await().atMost(BULK_WAIT).until(() -> ServerControl.of(ref).deadLetters().size() == count);

    faults().commitUnknownResult(2, true);
    CountingBackend.Counters before = counters();
    assertThat(ServerControl.of(ref).purgeDeadLetters()).isEqualTo(count);
    CountingBackend.Counters purge = counters().minus(before);
    faults().reset();

    assertThat(ServerControl.of(ref).deadLetters()).isEmpty();
    assertThat(purge.runs()).isGreaterThanOrEqualTo(3); // 100 + 100 + 50, a transaction each
    assertThat(purge.rowsRead()).isLessThanOrEqualTo(count + 2 * 100L); // the re-runs' re-reads
  }
}
