package io.dgen.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dgen.DGen;
import io.dgen.ProcessRef;
import io.dgen.ServerRef;
import io.dgen.StartOptions;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(DGenExtension.class)
class TestKitTest {

  /** The whole of a behaviour's test, in ten lines. */
  @Test
  void depositsAddUpAndARefusedOneIsDeadLettered(TestKit kit) {
    ServerRef<Account.Msg> account =
        kit.dgen()
            .start(
                new Account(),
                null,
                StartOptions.builder(kit.tenant()).deadLetterThreshold(3).build());
    account.castAll(
        List.of(new Account.Deposit(5), new Account.Deposit(-1), new Account.Deposit(7)));
    kit.drain(account);
    kit.assertQueueLength(account, 0);
    assertThat(kit.assertDeadLetters(account, 1).get(0).message())
        .isEqualTo(new Account.Deposit(-1));
    assertThat(account.call(new Account.Balance())).isEqualTo(12L);
  }

  @Test
  void aTimerIsQueuedWhenTheClockIsAdvancedPastItsDueTime_andRunByTheNextDrain(TestKit kit) {
    ServerRef<Account.Msg> account = kit.start(new Account(), null);
    account.castAfter(new Account.Deposit(4), Duration.ofMinutes(30));
    account.castAfter(new Account.Deposit(1), Duration.ofHours(2));

    kit.advance(Duration.ofMinutes(29));
    kit.assertQueueLength(account, 0);
    kit.advance(Duration.ofMinutes(1));
    kit.assertQueueLength(account, 1); // due now: queued before advance returned
    assertThat(kit.drain(account)).isEqualTo(1);
    assertThat(account.call(new Account.Balance())).isEqualTo(4L);
    kit.assertQueueLength(account, 0); // the two-hour one is still pending
  }

  @Test
  void aBatchTooLargeToCommit_isDrainedItemByItem_andOnlyTheMessageThatCausedItIsDeadLettered(
      TestKit kit) {
    ServerRef<Account.Msg> account =
        kit.dgen()
            .start(
                new Account(),
                null,
                StartOptions.builder(kit.tenant()).consumeK(8).deadLetterThreshold(1).build());
    account.castAll(
        List.of(new Account.Deposit(1), new Account.Memo(11_000_000), new Account.Deposit(2)));
    assertThat(kit.drain(account)).isEqualTo(3);
    kit.assertQueueLength(account, 0);
    assertThat(kit.assertDeadLetters(account, 1).get(0))
        .satisfies(
            d -> {
              assertThat(d.message()).isEqualTo(new Account.Memo(11_000_000));
              assertThat(d.lastError()).contains("transaction_too_large");
            });
    assertThat(kit.call(account, new Account.Balance())).isEqualTo(3L);
  }

  @Test
  void nothingIsConsumedUntilTheTestDrainsThenAllOfItInTheTestsThread(TestKit kit) {
    ServerRef<Account.Msg> account = kit.start(new Account(), null);
    account.castAll(List.of(new Account.Deposit(1), new Account.Deposit(2)));
    kit.assertQueueLength(account, 2);

    assertThat(kit.drain(account)).isEqualTo(2);

    kit.assertQueueLength(account, 0);
    assertThat(kit.drain(account)).isZero();
    assertThat(account.call(new Account.Balance())).isEqualTo(3L);
  }

  @Test
  void callbacksRunInTheDrainingThread(TestKit kit) {
    Account behaviour = new Account();
    ServerRef<Account.Msg> account =
        kit.dgen().start(behaviour, null, StartOptions.builder(kit.tenant()).consumeK(8).build());
    account.cast(new Account.Deposit(1));
    kit.drain(account);
    // a call with consumeK > 1 is queued: kit.call drains it in this thread
    assertThat(kit.call(account, new Account.Balance())).isEqualTo(1L);
    assertThat(behaviour.lastThread()).isEqualTo(Thread.currentThread().getName());
  }

  @Test
  void aQueuedCallWaitsForTheDrain(TestKit kit) {
    ServerRef<Account.Msg> account =
        kit.dgen()
            .start(new Account(), null, StartOptions.builder(kit.tenant()).consumeK(4).build());
    account.cast(new Account.Deposit(9));
    CompletableFuture<Long> balance = account.callAsync(new Account.Balance());
    assertThat(balance).isNotDone();
    kit.drain(account);
    assertThat(balance).isCompletedWithValue(9L);
  }

  @Test
  void aMessageThatKeepsFailingWithoutAThresholdStopsTheDrain(TestKit kit) {
    ServerRef<Account.Msg> account = kit.start(new Account(), null);
    account.cast(new Account.Bounce());
    assertThatThrownBy(() -> kit.drain(account))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("failed " + TestKit.MAX_FAILURES + " times")
        .hasRootCauseMessage("refused: " + new Account.Bounce());
    kit.assertQueueLength(account, 1);
    kit.assertDeadLetters(account, 0);
  }

  @Test
  void aLockOfADeadHolderIsBustedOnceTheClockPassesLockTimeout(TestKit kit) {
    Account behaviour = new Account();
    StartOptions options =
        StartOptions.builder(kit.tenant()).lockTimeout(Duration.ofSeconds(30)).build();
    ServerRef<Account.Msg> dying = kit.dgen().start(behaviour, null, options);
    behaviour.crashInLock.set(true);
    dying.castAll(List.of(new Account.Audit(), new Account.Deposit(1)));
    assertThatThrownBy(() -> kit.drain(dying)).isInstanceOf(Account.Crash.class);

    // the process died holding the lock; a new process of the server meets it
    ServerRef<Account.Msg> account = kit.dgen().start(new Account(), null, options);
    assertThat(kit.drain(account)).isZero(); // locked by the holder that died
    kit.advance(Duration.ofSeconds(29));
    assertThat(kit.drain(account)).isZero();
    kit.assertQueueLength(account, 1);

    kit.advance(Duration.ofSeconds(1));
    assertThat(kit.drain(account)).isEqualTo(2); // the audit again, then the deposit
    assertThat(account.call(new Account.Balance())).isEqualTo(101L);
  }

  @Test
  void theParametersOfOneTestShareOneKit(TestKit kit, DGen dgen, ManualClock clock) {
    assertThat(dgen).isSameAs(kit.dgen());
    assertThat(clock).isSameAs(kit.clock());
    long before = clock.millis();
    kit.advance(Duration.ofMillis(1500));
    assertThat(clock.millis()).isEqualTo(before + 1500);
    assertThat(clock.nanoTime()).isEqualTo((before + 1500) * 1_000_000L);
    assertThatThrownBy(() -> clock.advance(Duration.ofMillis(-1)))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void aFailedAssertion_isAnAssertionErrorNamingExpectedAndActual(TestKit kit) {
    ServerRef<Account.Msg> account = kit.start(new Account(), null);
    account.cast(new Account.Deposit(1));
    assertThatThrownBy(() -> kit.assertQueueLength(account, 0))
        .isExactlyInstanceOf(AssertionError.class)
        .hasMessageContaining("expected 0 but was 1");
    assertThatThrownBy(() -> kit.assertDeadLetters(account, 2))
        .isExactlyInstanceOf(AssertionError.class)
        .hasMessageContaining("expected 2 but were []");
  }

  @Test
  void closingTheKitStopsItsProcesses() {
    ProcessRef<Account.Msg> account;
    try (TestKit kit = TestKit.create()) {
      account = kit.start(new Account(), null);
      assertThat(account.isAlive()).isTrue();
    }
    assertThat(account.isAlive()).isFalse();
  }

  @Test
  void drainRefusesARuntimeWithBackgroundConsumers() {
    try (var backend = io.dgen.backend.memory.MemoryBackend.create();
        DGen dgen = DGen.builder(backend).build()) {
      ServerRef<Account.Msg> account =
          dgen.start(new Account(), null, StartOptions.builder(dgen.tenant("t")).build());
      assertThatThrownBy(
              () -> ((io.dgen.internal.process.ServerProcess<?, ?>) account).drainInCaller(1))
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("backgroundConsumers(false)");
    }
  }
}
