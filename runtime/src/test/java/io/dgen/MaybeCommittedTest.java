package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dgen.TestServer.Act;
import io.dgen.TestServer.Add;
import io.dgen.TestServer.AddAndGet;
import io.dgen.TestServer.Msg;
import io.dgen.TestServer.Work;
import io.dgen.admin.ServerControl;
import io.dgen.backend.BackendException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/**
 * Outcomes other than {@code commit_unknown_result} that may hide a commit: {@code
 * transaction_timed_out (1031)} raised while the commit was under way, and an interrupt of the
 * thread waiting for it. The runtime looks for the run's commit marker before it reports a failure,
 * so a committed push is not reported as failed and a committed batch's actions and lock are not
 * lost.
 */
class MaybeCommittedTest extends RuntimeTestBase {

  @Test
  void aCastWhoseCommitTimedOutAfterCommitting_returnsNormally_andIsQueuedOnce() {
    ServerRef<Msg> ref = start(b -> b.consume(false));
    faults().failCommits(1, BackendException.TRANSACTION_TIMED_OUT, true);

    ref.cast(new Add(1));

    faults().reset();
    assertThat(ServerControl.of(ref).queueLength()).isEqualTo(1);
  }

  @Test
  void aCastWhoseCommitTimedOutBeforeCommitting_throwsTheTimeout_andQueuesNothing() {
    ServerRef<Msg> ref = start(b -> b.consume(false));
    faults().failCommits(1, BackendException.TRANSACTION_TIMED_OUT, false);

    assertThatThrownBy(() -> ref.cast(new Add(1)))
        .isInstanceOfSatisfying(
            BackendFailureException.class,
            e -> assertThat(e.code()).isEqualTo(BackendException.TRANSACTION_TIMED_OUT));

    faults().reset();
    assertThat(ServerControl.of(ref).queueLength()).isZero();
  }

  @Test
  void aCastAllWhoseCommitTimedOutAfterCommitting_returnsNormally_andQueuesEachOnce() {
    ServerRef<Msg> ref = start(b -> b.consume(false));
    faults().failCommits(1, BackendException.TRANSACTION_TIMED_OUT, true);

    ref.castAll(List.of(new Add(1), new Add(2)));

    faults().reset();
    assertThat(ServerControl.of(ref).queueLength()).isEqualTo(2);
  }

  @Test
  void aCallWhosePushTimedOutAfterCommitting_getsItsReply() throws Exception {
    ServerRef<Msg> ref = start(b -> b.consume(false));
    faults().failCommits(1, BackendException.TRANSACTION_TIMED_OUT, true);

    CompletableFuture<Long> reply = ref.callAsync(new AddAndGet(5), Duration.ofSeconds(30));
    await().atMost(Duration.ofSeconds(10)).until(() -> ServerControl.of(ref).queueLength() == 1);
    faults().reset();
    start(); // a consumer; its start writes nothing (the server exists)

    assertThat(reply.get(30, TimeUnit.SECONDS)).isEqualTo(5L);
    assertThat(ServerControl.of(ref).queueLength()).isZero();
  }

  @Test
  void aBatchWhoseCommitTimedOutAfterCommitting_runsItsActionsOnce() {
    ServerRef<Msg> producer = start(b -> b.consume(false));
    producer.cast(new Act(List.of("rec:a")));
    faults().failCommits(1, BackendException.TRANSACTION_TIMED_OUT, true);

    ServerRef<Msg> consumer = start(); // its start writes nothing: the batch takes the fault

    awaitTotal(consumer, 1);
    await().atMost(Duration.ofSeconds(10)).until(() -> !hooks.actions.isEmpty());
    faults().reset();
    assertThat(hooks.actions).containsExactly("rec:a@1");
    assertThat(ServerControl.of(consumer).queueLength()).isZero();
  }

  @Test
  void aLockTakenByABatchWhoseCommitTimedOutAfterCommitting_isStillWorkedAndReleased() {
    ServerRef<Msg> producer = start(b -> b.consume(false));
    producer.cast(new Work("a"));
    faults().failCommits(1, BackendException.TRANSACTION_TIMED_OUT, true);

    ServerRef<Msg> consumer = start();

    // handleLocked adds 1000 and releases the lock: without it the server stays locked forever
    awaitTotal(consumer, 1000);
    faults().reset();
    assertThat(hooks.lockedReturned.get()).isEqualTo(1);
    consumer.cast(new Add(1));
    awaitTotal(consumer, 1001);
  }

  @Test
  void anInterruptWhileACastWaitsForItsCommit_reportsTheCommittedOutcome_andKeepsTheFlag()
      throws Exception {
    ServerRef<Msg> ref = start(b -> b.consume(false));
    faults().commitLatency(Duration.ofMillis(500));
    AtomicBoolean flagAfterCast = new AtomicBoolean();
    CompletableFuture<Void> casting = new CompletableFuture<>();
    Thread caster =
        new Thread(
            () -> {
              try {
                ref.cast(new Add(1));
                flagAfterCast.set(Thread.currentThread().isInterrupted());
                casting.complete(null);
              } catch (Throwable t) {
                casting.completeExceptionally(t);
              }
            });
    caster.start();
    await()
        .atMost(Duration.ofSeconds(10))
        .until(
            () ->
                caster.getState() == Thread.State.TIMED_WAITING
                    || caster.getState() == Thread.State.WAITING);
    caster.interrupt();

    casting.get(30, TimeUnit.SECONDS); // the cast returned normally
    faults().reset();
    assertThat(flagAfterCast).isTrue();
    assertThat(ServerControl.of(ref).queueLength()).isEqualTo(1);
  }

  @Test
  void anInterruptAfterACommitThatApplied_reportsTheOutcome_andKeepsTheFlag() {
    ServerRef<Msg> ref = start(b -> b.consume(false));
    faults().interruptAfterCommit(1);

    boolean interrupted;
    try {
      ref.priorityCast(new Add(7)); // commits in this thread, which waits for the commit
    } finally {
      interrupted = Thread.interrupted(); // and clears the flag for the rest of the test
    }

    faults().reset();
    assertThat(interrupted).isTrue();
    assertThat(total(ref)).isEqualTo(7); // applied once
  }

  @Test
  void aTimerCancelInterruptedAfterItsCommitApplied_returnsTrue_once() {
    ServerRef<Msg> ref = start(b -> b.consume(false));
    String timer = ref.castAfter(new Add(1), Duration.ofHours(1));
    faults().interruptAfterCommit(1);

    boolean cancelled = ref.cancelTimer(timer);

    faults().reset();
    assertThat(cancelled).isTrue();
    assertThat(ref.cancelTimer(timer)).isFalse(); // it was cancelled, once
  }
}
