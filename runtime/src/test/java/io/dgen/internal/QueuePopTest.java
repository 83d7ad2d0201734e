package io.dgen.internal;

import static org.assertj.core.api.Assertions.assertThat;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.backend.KeyValue;
import io.dgen.backend.Transaction;
import io.dgen.backend.memory.MemoryBackend;
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
      new ServerKeys(backend.directory("queue-pop"), Tuple.from("server"));

  private void push(Transaction tx, long lane, String value, int userVersion) {
    tx.setVersionstampedKey(
        keys.lanePrefix(lane),
        ServerKeys.newItemKey(userVersion),
        value.getBytes(StandardCharsets.UTF_8));
  }

  private List<String> queued() {
    return backend.run(
        tx ->
            tx.getRange(keys.items().range().begin, keys.items().range().end).stream()
                .map(kv -> new String(kv.value(), StandardCharsets.UTF_8))
                .toList());
  }

  /** Peeks the whole queue and pops it, running {@code meanwhile} once between the two. */
  private int popAll(Runnable meanwhile) {
    AtomicInteger attempts = new AtomicInteger();
    backend.run(
        tx -> {
          List<KeyValue> peeked =
              tx.snapshot().getRange(keys.items().range().begin, keys.items().range().end);
          if (attempts.incrementAndGet() == 1) {
            meanwhile.run();
          }
          ServerQueue.pop(tx, peeked.get(0).key(), peeked.get(peeked.size() - 1).key());
          return null;
        });
    return attempts.get();
  }

  @Test
  void aHeadLaneItemCommittedInsideThePoppedRun_makesTheBatchRunAgain() {
    backend.run(
        tx -> {
          push(tx, ServerKeys.LANE_HEAD, "h1", 0);
          push(tx, ServerKeys.LANE_NORMAL, "n1", 1);
          push(tx, ServerKeys.LANE_NORMAL, "n2", 2);
          return null;
        });

    int attempts =
        popAll(
            () ->
                backend.run(
                    tx -> {
                      push(tx, ServerKeys.LANE_HEAD, "late", 0);
                      return null;
                    }));

    assertThat(attempts)
        .isEqualTo(2); // the first attempt conflicted: "late" was not cleared unseen
    assertThat(queued()).isEmpty(); // the second attempt peeked it, and popped all four
  }

  @Test
  void anItemPushedBehindThePoppedRun_neitherConflictsNorIsCleared() {
    backend.run(
        tx -> {
          push(tx, ServerKeys.LANE_NORMAL, "n1", 0);
          push(tx, ServerKeys.LANE_NORMAL, "n2", 1);
          return null;
        });

    int attempts =
        popAll(
            () ->
                backend.run(
                    tx -> {
                      push(tx, ServerKeys.LANE_NORMAL, "n3", 0);
                      return null;
                    }));

    assertThat(attempts).isEqualTo(1);
    assertThat(queued()).containsExactly("n3");
  }

  @Test
  void aSingleItem_isPoppedWithAPointClear() {
    backend.run(
        tx -> {
          push(tx, ServerKeys.LANE_NORMAL, "only", 0);
          push(tx, ServerKeys.LANE_NORMAL, "next", 1);
          return null;
        });
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
