package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dgen.TestServer.Add;
import io.dgen.TestServer.AddAndGet;
import io.dgen.TestServer.Ask;
import io.dgen.TestServer.LockedThrow;
import io.dgen.TestServer.Msg;
import io.dgen.TestServer.Work;
import io.dgen.admin.ServerControl;
import io.dgen.backend.BackendException;
import io.dgen.internal.keys.Buckets;
import io.dgen.internal.keys.ServerKeys;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class LockModeTest extends RuntimeTestBase {

  private final CountDownLatch gate = new CountDownLatch(1);

  /** What the runtime's listener heard: a late holder's commit refused. */
  private record Fenced(ServerRef<?> server, LockFencedException error) {}

  private final List<Fenced> fenced = new CopyOnWriteArrayList<>();

  @Override
  DGen newDGen() {
    return DGen.builder(backend)
        .retryBackoff(Duration.ofMillis(1), Duration.ofMillis(50))
        .listener(
            new DGenListener() {
              @Override
              public void lockFenced(ServerRef<?> server, LockFencedException error) {
                fenced.add(new Fenced(server, error));
              }
            })
        .build();
  }

  @AfterEach
  void openGate() {
    gate.countDown();
  }

  private void blockFirstHolder() {
    hooks.lockGate = gate;
  }

  private void awaitHolderBlocked() throws InterruptedException {
    assertThat(hooks.lockEntered.await(10, TimeUnit.SECONDS)).isTrue();
  }

  @Test
  void castsQueueBehindALock_andRunAfterIt() throws Exception {
    blockFirstHolder();
    ProcessRef<Msg> ref = start();
    ref.cast(new Work("a"));
    awaitHolderBlocked();
    ref.cast(new Add(1));
    assertThat(ServerControl.of(ref).queueLength()).isEqualTo(1);
    assertThat(total(ref)).isZero(); // priority messages still run while locked

    gate.countDown();
    awaitTotal(ref, 1001);
    assertThat(state(ref).seen()).containsExactly(1000L, 1L);
  }

  @Test
  void priorityMessageThatChangesTheState_whileLocked_isRefused_andNothingIsUndone()
      throws Exception {
    blockFirstHolder();
    ProcessRef<Msg> ref = start();
    ref.cast(new Work("p"));
    awaitHolderBlocked();
    // handleLocked's result replaces the state when it commits: a change made now would be lost
    assertThatThrownBy(() -> ref.priorityCast(new Add(1)))
        .isInstanceOf(ServerLockedException.class)
        .hasMessageContaining("handleCast");
    assertThatThrownBy(() -> ref.priorityCall(new Ask(new Add(1))))
        .isInstanceOf(ServerLockedException.class)
        .hasMessageContaining("handleCall");
    assertThatThrownBy(() -> ref.info("tick"))
        .isInstanceOf(ServerLockedException.class)
        .hasMessageContaining("handleInfo");
    assertThat(total(ref)).isZero(); // a priority message that only reads still runs

    gate.countDown();
    awaitTotal(ref, 1000);
    ref.priorityCast(new Add(1)); // unlocked again: accepted
    assertThat(total(ref)).isEqualTo(1001);
    assertThat(state(ref).seen()).containsExactly(1000L, 1L);
  }

  @Test
  void callThatTookTheLock_getsHandleLockedsReply() {
    ProcessRef<Msg> ref = start();
    String reply = ref.call(new Work("b"), String.class, Duration.ofSeconds(10));
    assertThat(reply).isEqualTo("done-b");
    assertThat(total(ref)).isEqualTo(1000);
  }

  @Test
  void queuedCall_waitsForTheLock() throws Exception {
    blockFirstHolder();
    ProcessRef<Msg> ref = start();
    ref.cast(new Work("c"));
    awaitHolderBlocked();
    CompletableFuture<Long> call = ref.callAsync(new AddAndGet(5), Duration.ofSeconds(10));
    assertThat(call).isNotDone();
    assertThat(ref.<Long>priorityCall(new TestServer.Get())).isZero();
    gate.countDown();
    assertThat(call.get(10, TimeUnit.SECONDS)).isEqualTo(1005);
  }

  @Test
  void bustedHolder_isFenced_staysInService_andTheMessageIsProcessedOnce() throws Exception {
    blockFirstHolder();
    List<ProcessRef<Msg>> processes =
        List.of(
            start(b -> b.lockTimeout(Duration.ofMillis(200))),
            start(b -> b.lockTimeout(Duration.ofMillis(200))));
    processes.get(0).cast(new Work("x"));
    awaitHolderBlocked();
    // the other process busts the lock after 200 ms and runs handleLocked again, to completion
    await().atMost(Duration.ofSeconds(10)).until(() -> hooks.lockedReturned.get() == 1);
    awaitTotal(processes.get(0), 1000);

    gate.countDown(); // the late holder returns and tries to commit
    await().atMost(Duration.ofSeconds(10)).until(() -> fenced.size() == 1);
    ProcessRef<Msg> holder =
        processes.stream().filter(p -> p == fenced.get(0).server()).findFirst().orElseThrow();
    assertThat(fenced.get(0).error()).hasMessageContaining("token=");
    assertThat(hooks.lockedReturned).hasValue(2);
    assertThat(total(processes.get(0))).isEqualTo(1000); // exactly one handleLocked committed
    assertThat(ServerControl.of(processes.get(0)).queueLength()).isZero();

    // the fenced holder stays in service: alone now, it consumes what comes next
    assertThat(processes).allMatch(ProcessRef::isAlive);
    processes.stream().filter(p -> p != holder).forEach(ProcessRef::stop);
    holder.cast(new Add(1));
    awaitTotal(holder, 1001);
    assertThat(holder.termination()).isNotDone();
  }

  @Test
  void processStoppedMidLock_isRecoveredByBusting() throws Exception {
    blockFirstHolder();
    ProcessRef<Msg> first = start(b -> b.lockTimeout(Duration.ofMillis(200)));
    first.cast(new Work("y"));
    awaitHolderBlocked();
    first.stop(); // no cleanup: the lock stays

    ServerRef<Msg> second = start(b -> b.lockTimeout(Duration.ofMillis(200)));
    awaitTotal(second, 1000);
    gate.countDown();
    await().atMost(Duration.ofSeconds(10)).until(() -> hooks.lockedReturned.get() == 2);
    second.cast(new Add(1));
    awaitTotal(second, 1001); // the late holder changed nothing and the lock is free
  }

  @Test
  void handleLockedThatKeepsFailing_isCounted_andDeadLetteredAtTheThreshold_andTheQueueMovesOn() {
    ProcessRef<Msg> ref = start(b -> b.deadLetterThreshold(3));
    LockedThrow poison = new LockedThrow("x", "runtime", Integer.MAX_VALUE);
    CompletableFuture<String> call = ref.callAsync(poison, String.class, Duration.ofMinutes(2));
    ref.cast(new Add(1));

    assertThat(call)
        .failsWithin(Duration.ofSeconds(60))
        .withThrowableOfType(ExecutionException.class)
        .havingCause()
        .isInstanceOfSatisfying(
            DeadLetterException.class, e -> assertThat(e.attempts()).isEqualTo(3));
    awaitTotal(ref, 1);
    assertThat(hooks.attempts.get("locked:x")).hasValue(3);
    List<DeadLetter<Msg>> dead = ServerControl.of(ref).deadLetters();
    assertThat(dead).hasSize(1);
    assertThat(dead.get(0).message()).isEqualTo(poison);
    assertThat(dead.get(0).attempts()).isEqualTo(3);
    assertThat(dead.get(0).lastError()).contains("handleLocked of x threw");
    await().atMost(Duration.ofSeconds(10)).until(() -> hooks.deadLetters.size() == 1);
    assertThat(hooks.deadLetters).containsExactly(poison + "x3");

    // the count lived in the message: re-queued, it gets the whole threshold again
    assertThat(ServerControl.of(ref).requeueDeadLetter(dead.get(0).id(), true)).isTrue();
    await().atMost(Duration.ofSeconds(60)).until(() -> hooks.deadLetters.size() == 2);
    assertThat(hooks.attempts.get("locked:x")).hasValue(6);
    assertThat(ServerControl.of(ref).queueLength()).isZero();
  }

  @Test
  void handleLockedThatFailsBelowTheThreshold_isRetried_andItsCountEndsWithItsSuccess() {
    ProcessRef<Msg> ref = start(b -> b.deadLetterThreshold(3));
    ref.cast(new LockedThrow("y", "runtime", 2));
    awaitTotal(ref, 1000);
    ref.cast(new LockedThrow("z", "runtime", 2)); // a fresh count: two failures again are fine
    awaitTotal(ref, 2000);
    assertThat(ServerControl.of(ref).deadLetters()).isEmpty();
    assertThat(hooks.attempts.get("locked:z")).hasValue(3);
  }

  /**
   * The holder's result commit fails with {@code transaction_timed_out} and does not apply, and so
   * does the next commit (before, its release): it must not leave its lock stored with nobody
   * holding it (no {@code lockTimeout}: nothing would ever bust it). It retries until it knows.
   */
  @Test
  void aHolderWhoseCommitsTimeOut_retriesUntilItKnows_andNeverLeavesItsLockBehind()
      throws Exception {
    blockFirstHolder();
    ProcessRef<Msg> ref = start();
    ref.cast(new Work("t"));
    awaitHolderBlocked();
    faults().failCommits(2, BackendException.TRANSACTION_TIMED_OUT, false);
    gate.countDown();

    awaitTotal(ref, 1000);
    ref.cast(new Add(1));
    awaitTotal(ref, 1001);
    assertThat(hooks.lockedStarted).hasValue(1); // handleLocked ran once; its commit was retried
    assertThat(ServerControl.of(ref).queueLength()).isZero();
  }

  /**
   * A batch takes the lock and commits, but fails with {@code transaction_timed_out}, and the look
   * for its marker fails too: the batch does not know it holds the lock. The next batch of the same
   * process meets the lock, recognises its own run in the token, and runs handleLocked.
   */
  @Test
  void aLockTakenByABatchThatDidNotLearnItsOutcome_isRecognised_andItsHandleLockedRuns() {
    ProcessRef<Msg> ref = start(b -> b.consumeK(4));
    ServerKeys keys =
        new ServerKeys(tenant.subspace(), Buckets.of(tenant.bucketCount()), ref.tuid());
    hooks.callbackHooks.put("arm", () -> hideTheNextCommitsOutcome(keys));
    ref.castAll(List.of(new TestServer.Hook("arm"), new Work("k")));

    awaitTotal(ref, 1000);
    ref.cast(new Add(1));
    awaitTotal(ref, 1001);
    assertThat(hooks.lockedReturned).hasValue(1);
  }

  /**
   * As above, but the process is stopped before any later batch of it could recognise the lock:
   * once its loop has ended, it looks for a lock of its own left behind and runs its handleLocked.
   * Before, the lock stayed, and without a {@code lockTimeout} every other process of the server
   * waited for it for ever.
   */
  @Test
  void aLockTakenByABatchThatDidNotLearnItsOutcome_isRun_evenIfItsProcessStoppedMeanwhile() {
    ProcessRef<Msg> ref = start(b -> b.consumeK(4));
    ServerKeys keys =
        new ServerKeys(tenant.subspace(), Buckets.of(tenant.bucketCount()), ref.tuid());
    hooks.callbackHooks.put(
        "arm",
        () -> {
          hideTheNextCommitsOutcome(keys);
          ref.stop(); // while its batch is in flight
        });
    ref.castAll(List.of(new TestServer.Hook("arm"), new Work("k")));

    await("the stopped process ran its lock's handleLocked")
        .atMost(Duration.ofSeconds(30))
        .until(() -> hooks.lockedReturned.get() == 1);
    ServerRef<Msg> again = start(); // and released the lock: nothing waits behind it
    again.cast(new Add(1));
    awaitTotal(again, 1001);
    assertThat(hooks.lockedReturned).hasValue(1);
  }

  /**
   * A consumer that meets a lock with a {@code lockTimeout} parks until a ring or the lock's
   * expiry. Every push while the lock is held wakes it to meet the lock again: the expiry must stay
   * one pending timer, not one more per push.
   */
  @Test
  void pushesWhileALockIsHeld_leaveOneExpiryTimerPerServer_notOnePerPush() throws Exception {
    blockFirstHolder();
    ProcessRef<Msg> holder = start(b -> b.lockTimeout(Duration.ofMinutes(10)));
    holder.cast(new Work("held"));
    awaitHolderBlocked();
    int before = dgen.core().scheduledTasks();
    ServerRef<Msg> waiter = start(b -> b.lockTimeout(Duration.ofMinutes(10)));
    for (int i = 0; i < 50; i++) {
      waiter.cast(new Add(1)); // each push rings: the waiter wakes, meets the lock, parks again
    }
    await()
        .during(Duration.ofMillis(500))
        .atMost(Duration.ofSeconds(20))
        .until(() -> dgen.core().scheduledTasks() <= before + 5);

    gate.countDown();
    awaitTotal(waiter, 1050);
  }

  @Test
  void withoutLockTimeout_theLockIsNeverBusted() throws Exception {
    blockFirstHolder();
    ProcessRef<Msg> first = start();
    first.cast(new Work("z"));
    awaitHolderBlocked();
    ServerRef<Msg> second = start();
    second.cast(new Add(1));
    // nothing can overtake the held lock; releasing it lets both messages through in order
    assertThat(ServerControl.of(second).queueLength()).isEqualTo(1);
    gate.countDown();
    awaitTotal(second, 1001);
    assertThat(hooks.lockedStarted).hasValue(1);
  }
}
