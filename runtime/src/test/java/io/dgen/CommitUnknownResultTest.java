package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dgen.TestServer.Act;
import io.dgen.TestServer.Add;
import io.dgen.TestServer.AddAndGet;
import io.dgen.TestServer.Hook;
import io.dgen.TestServer.Msg;
import io.dgen.TestServer.Work;
import io.dgen.admin.ServerControl;
import io.dgen.backend.CountingBackend;
import io.dgen.backend.FaultInjectingBackend;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * {@code commit_unknown_result (1021)} makes {@code run} execute a body again although its commit
 * may have applied. Every runtime transaction writes a commit marker keyed by its run, so nothing
 * is pushed, applied, replied or acted on twice.
 */
class CommitUnknownResultTest extends RuntimeTestBase {

  @ParameterizedTest(name = "consumeK={0} applied={1}")
  @CsvSource({"1, true", "1, false", "4, true", "4, false"})
  void everyMessageReplyAndActionHappensOnce(int consumeK, boolean applied) throws Exception {
    ServerRef<Msg> ref = start(b -> b.consumeK(consumeK));
    FaultInjectingBackend faults = faults();
    CountingBackend.Counters before = counters();

    // Before each message, the next two writing commits (its push, a consumer batch, an inline
    // call, a reply read) raise 1021, after applying or not.
    List<CompletableFuture<Long>> calls = new ArrayList<>();
    for (int i = 1; i <= 10; i++) {
      faults.commitUnknownResult(2, applied);
      ref.cast(new Act(List.of("rec:" + i)));
      faults.commitUnknownResult(2, applied);
      calls.add(ref.callAsync(new AddAndGet(100), Duration.ofSeconds(30)));
    }
    faults.commitUnknownResult(2, applied);
    ref.castAll(List.of(new Add(1000), new Add(2000)));
    awaitTotal(ref, 10 + 10 * 100 + 3000);
    faults().reset();

    assertThat(counters().minus(before).transactionsRetried()).isPositive();
    List<Long> replies = new ArrayList<>();
    for (CompletableFuture<Long> c : calls) {
      replies.add(c.get(30, TimeUnit.SECONDS));
    }
    // Each call saw the state after its own Add, exactly once: no two calls saw one state, so the
    // replies step by at least 100. The calls were in flight together (callAsync does not wait
    // for its push), so a call whose push was retried may be queued after a later one: the steps
    // are checked in the order the server applied them.
    Collections.sort(replies);
    for (int i = 1; i < replies.size(); i++) {
      assertThat(replies.get(i) - replies.get(i - 1)).isGreaterThanOrEqualTo(100);
    }
    await().atMost(Duration.ofSeconds(10)).until(() -> hooks.actions.size() >= 10);
    List<String> expected = new ArrayList<>();
    for (int i = 1; i <= 10; i++) {
      expected.add("rec:" + i);
    }
    assertThat(hooks.actions)
        .map(a -> a.substring(0, a.indexOf('@')))
        .containsExactlyElementsOf(expected);
    assertThat(ServerControl.of(ref).queueLength()).isZero();
  }

  @ParameterizedTest(name = "applied={0}")
  @CsvSource({"true", "false"})
  void outboxPushesStaySingle(boolean applied) {
    ServerRef<Msg> ref = start(b -> b.consume(false));
    Outbox<Msg> out = ref.outbox();
    faults().commitUnknownResult(3, applied);
    for (int i = 0; i < 3; i++) {
      backend.run(
          tx -> {
            out.cast(tx, new Add(1));
            out.cast(tx, new Add(2));
            return null;
          });
    }
    assertThat(ServerControl.of(ref).queueLength()).isEqualTo(6);
    ServerRef<Msg> consumer = start();
    awaitTotal(consumer, 9);
    assertThat(state(consumer).seen()).containsExactly(1L, 2L, 1L, 2L, 1L, 2L);
  }

  /**
   * An attempt took the lock and raised 1021 with its commit still in flight; the next attempt ran
   * before it landed, took the lock again and conflicted with it; the third found the marker. The
   * lock handed to {@code handleLocked} must be the one that committed, or it is fenced by a lock
   * that nobody holds, and the server stays locked (no {@code lockTimeout}) for good.
   */
  @Test
  void aLockTakenByAnAttemptThatLandedLate_isTheOneHandleLockedRuns() {
    ServerRef<Msg> ref = start(b -> b.consumeK(4));
    hooks.callbackHooks.put("arm", () -> faults().commitUnknownResultLate(1));
    ref.castAll(List.of(new Hook("arm"), new Work("w")));

    awaitTotal(ref, 1000);
    ref.cast(new Add(1));
    awaitTotal(ref, 1001);
    assertThat(hooks.lockedReturned).hasValue(1);
    assertThat(ServerControl.of(ref).queueLength()).isZero();
  }
}
