package io.dgen.internal.queue;

import static org.assertj.core.api.Assertions.assertThat;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.backend.KeyValue;
import io.dgen.backend.memory.MemoryBackend;
import io.dgen.internal.keys.Buckets;
import io.dgen.internal.keys.ServerKeys;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * A batch pops the run of items it peeked with one read-conflict range and one range clear: an item
 * that a concurrent commit puts inside that run makes the batch conflict (it is never cleared
 * unseen), and one pushed behind it does not.
 */
class QueuePopTest {

  private final MemoryBackend backend = MemoryBackend.create();
  private final ServerKeys keys =
      new ServerKeys(backend.directory("queue-pop"), Buckets.of(1), Tuple.from("server"));

  /** Pushes {@code values} to {@code lane} in one transaction. */
  private void pushed(long lane, String... values) {
    backend.run(
        tx -> {
          for (int i = 0; i < values.length; i++) {
            tx.setVersionstampedKey(
                keys.lanePrefix(lane),
                ServerKeys.newItemKey(i),
                values[i].getBytes(StandardCharsets.UTF_8));
          }
          return null;
        });
  }

  private List<String> queued() {
    return backend.run(
        tx ->
            tx.getRange(keys.items().range().begin, keys.items().range().end).stream()
                .map(kv -> new String(kv.value(), StandardCharsets.UTF_8))
                .toList());
  }

  /**
   * Peeks the whole queue and pops it, pushing {@code late} to {@code lane} between the two in the
   * first attempt; returns the number of attempts.
   */
  private int popAllWhilePushing(long lane, String late) {
    AtomicInteger attempts = new AtomicInteger();
    backend.run(
        tx -> {
          List<KeyValue> peeked =
              tx.snapshot().getRange(keys.items().range().begin, keys.items().range().end);
          if (attempts.incrementAndGet() == 1) {
            pushed(lane, late);
          }
          ServerQueue.pop(tx, peeked.get(0).key(), peeked.get(peeked.size() - 1).key());
          return null;
        });
    return attempts.get();
  }

  @Test
  void aHeadLaneItemCommittedInsideThePoppedRun_makesTheBatchRunAgain() {
    pushed(ServerKeys.LANE_HEAD, "h1");
    pushed(ServerKeys.LANE_NORMAL, "n1", "n2");

    int attempts = popAllWhilePushing(ServerKeys.LANE_HEAD, "late");

    assertThat(attempts)
        .as("the first attempt conflicted: late was not cleared unseen")
        .isEqualTo(2);
    assertThat(queued()).as("the second peeked late too and popped all four").isEmpty();
  }

  @Test
  void anItemPushedBehindThePoppedRun_neitherConflictsNorIsCleared() {
    pushed(ServerKeys.LANE_NORMAL, "n1", "n2");

    int attempts = popAllWhilePushing(ServerKeys.LANE_NORMAL, "n3");

    assertThat(attempts).isEqualTo(1);
    assertThat(queued()).containsExactly("n3");
  }

  @Test
  void aRunOfOneItem_popsThatItemAlone() {
    pushed(ServerKeys.LANE_NORMAL, "only", "next");
    byte[] only =
        backend
            .run(tx -> tx.getRange(keys.items().range().begin, keys.items().range().end))
            .get(0)
            .key();

    backend.run(
        tx -> {
          ServerQueue.pop(tx, only, only);
          return null;
        });

    assertThat(queued()).containsExactly("next");
  }
}
