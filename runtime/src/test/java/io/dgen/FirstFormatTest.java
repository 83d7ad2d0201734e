package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.apple.foundationdb.tuple.Tuple;
import com.apple.foundationdb.tuple.Versionstamp;
import io.dgen.admin.ServerControl;
import io.dgen.internal.codec.Serde;
import io.dgen.internal.keys.Buckets;
import io.dgen.internal.keys.ServerKeys;
import java.time.Duration;
import java.util.List;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/**
 * Data written in the first format — queue items, lock records and dead letters as Smile documents
 * with the message as a tree and its class by name — is still read after the lean format came:
 * queued messages are consumed, failures counted, dead letters listed and re-queued, locks busted.
 */
class FirstFormatTest extends RuntimeTestBase {

  /** A queue item as the first format wrote it. */
  record FirstEnvelope(
      int k,
      @Nullable String t,
      JsonNode m,
      long s,
      @Nullable String i,
      int f,
      @Nullable String x) {}

  record FirstLock(String token, long acquiredAt, byte[] envelope) {}

  record FirstDead(byte[] envelope, int attempts, String error, long at, String by) {}

  private final Serde serde = new Serde(Serde.defaultMapper());

  private ServerKeys keys() {
    return new ServerKeys(
        tenant.subspace(),
        Buckets.of(tenant.bucketCount()),
        Tuple.from("dgen_server", TestServer.class.getName()));
  }

  private byte[] firstCast(TestServer.Msg message) {
    return serde.toBytes(
        new FirstEnvelope(
            2, message.getClass().getName(), serde.toTree(message), 0, null, 0, null));
  }

  private void pushFirst(byte[]... items) {
    ServerKeys keys = keys();
    backend.run(
        tx -> {
          for (int i = 0; i < items.length; i++) {
            tx.setVersionstampedKey(
                keys.lanePrefix(ServerKeys.LANE_NORMAL), ServerKeys.newItemKey(i), items[i]);
            tx.add(keys.pushCounter(), 1);
          }
          return null;
        });
  }

  @Test
  void itemsQueuedInTheFirstFormat_areConsumed_andTheirFailuresCounted() {
    start(b -> b.consume(false)).stop(); // the state exists, nothing consumes
    pushFirst(
        firstCast(new TestServer.Add(5)),
        firstCast(new TestServer.FailFirst("f", 2)),
        firstCast(new TestServer.Add(7)));
    ServerRef<TestServer.Msg> ref = start(b -> b.deadLetterThreshold(10));
    awaitTotal(ref, 13); // 5 + 1 (after two failures) + 7
    assertThat(ServerControl.of(ref).deadLetters()).isEmpty();
  }

  @Test
  void deadLettersOfTheFirstFormat_areListedAndRequeued() {
    ServerRef<TestServer.Msg> ref = start();
    ServerKeys keys = keys();
    Versionstamp stamp = Versionstamp.complete(new byte[10], 3);
    byte[] first =
        serde.toBytes(new FirstDead(firstCast(new TestServer.Add(40)), 5, "boom", 1_000L, "id"));
    backend.run(
        tx -> {
          tx.set(keys.dead().pack(Tuple.from(stamp)), first);
          return null;
        });
    List<DeadLetter<TestServer.Msg>> dead = ServerControl.of(ref).deadLetters();
    assertThat(dead).hasSize(1);
    assertThat(dead.get(0).message()).isEqualTo(new TestServer.Add(40));
    assertThat(dead.get(0).attempts()).isEqualTo(5);
    assertThat(dead.get(0).lastError()).isEqualTo("boom");
    assertThat(ServerControl.of(ref).requeueDeadLetter(dead.get(0).id(), false)).isTrue();
    awaitTotal(ref, 40);
  }

  @Test
  void aLockRecordOfTheFirstFormat_isBusted_andItsMessageRequeued() {
    start(b -> b.consume(false)).stop();
    ServerKeys keys = keys();
    byte[] lock = serde.toBytes(new FirstLock("old-token", 0L, firstCast(new TestServer.Add(9))));
    backend.run(
        tx -> {
          tx.set(keys.lockKey(), lock);
          return null;
        });
    ServerRef<TestServer.Msg> ref = start(b -> b.lockTimeout(Duration.ofMillis(50)));
    awaitTotal(ref, 9);
    await().atMost(Duration.ofSeconds(10)).until(() -> ServerControl.of(ref).queueLength() == 0);
  }
}
