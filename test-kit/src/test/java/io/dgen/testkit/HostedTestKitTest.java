package io.dgen.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.HostOptions;
import io.dgen.ServerRef;
import io.dgen.testkit.Wallet.Balance;
import io.dgen.testkit.Wallet.Deposit;
import io.dgen.testkit.Wallet.Msg;
import io.dgen.testkit.Wallet.Owner;
import io.dgen.testkit.Wallet.Remind;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Hosted servers in the test kit: hosted, addressed, drained and advanced like started ones. */
@ExtendWith(DGenExtension.class)
class HostedTestKitTest {

  private static final Duration CALL = Duration.ofSeconds(5);

  @Test
  void aHostedServer_runsOnlyWhenDrained_inTheTestsThread_andItsInitGetsItsId(TestKit kit) {
    Wallet behaviour = new Wallet();
    kit.host(Wallet.KIND, () -> behaviour);
    ServerRef<Msg> alice = kit.ref(Wallet.KIND, "alice");

    alice.castAll(List.of(new Deposit(5), new Deposit(7)));
    kit.assertQueueLength(alice, 2);
    assertThat(behaviour.initThreads).as("nothing ran before the drain").isEmpty();

    assertThat(kit.drain(alice)).isEqualTo(2);

    kit.assertQueueLength(alice, 0);
    assertThat(behaviour.initThreads).containsExactly(Thread.currentThread().getName());
    assertThat(alice.call(new Balance(), CALL)).isEqualTo(12L);
    assertThat(alice.call(new Owner(), CALL)).isEqualTo("alice/alice");
    assertThat(kit.drain(alice)).isZero();
  }

  @Test
  void aHostedServerWithALongId_getsItAsALong(TestKit kit) {
    kit.host(Wallet.KIND, Wallet::new);
    ServerRef<Msg> wallet = kit.ref(Wallet.KIND, 42);

    wallet.cast(new Deposit(1));
    kit.drain(wallet);

    assertThat(wallet.call(new Owner(), CALL)).isEqualTo("42/42");
    assertThat((Object) kit.ref(Wallet.KIND, Tuple.from(42)).tuid())
        .as("the tuple form of the same id is the same server")
        .isEqualTo(wallet.tuid());
  }

  @Test
  void aHostedServersTimers_areQueuedWhenTheClockIsAdvancedPastThem_andRunByTheNextDrain(
      TestKit kit) {
    kit.host(Wallet.KIND, Wallet::new);
    ServerRef<Msg> bob = kit.ref(Wallet.KIND, "bob");
    bob.castAfter(new Deposit(4), Duration.ofMinutes(30));
    bob.cast(new Remind(1, Duration.ofHours(2))); // a timer scheduled by a callback
    assertThat(kit.drain(bob)).isEqualTo(1);

    kit.advance(Duration.ofMinutes(29));
    kit.assertQueueLength(bob, 0);
    kit.advance(Duration.ofMinutes(1));
    kit.assertQueueLength(bob, 1); // due now: queued before advance returned
    assertThat(kit.drain(bob)).isEqualTo(1);
    assertThat(bob.call(new Balance(), CALL)).isEqualTo(4L);

    kit.advance(Duration.ofHours(2));
    assertThat(kit.drain(bob)).isEqualTo(1);
    assertThat(bob.call(new Balance(), CALL)).isEqualTo(5L);
  }

  @Test
  void aQueuedCallToAHostedServer_isAnsweredByKitCall(TestKit kit) {
    kit.host(Wallet.KIND, Wallet::new, HostOptions.builder(kit.tenant()).consumeK(4).build());
    ServerRef<Msg> carol = kit.ref(Wallet.KIND, "carol");
    carol.cast(new Deposit(9));

    // with consumeK > 1 a call is queued: kit.call drains it in this thread
    assertThat(kit.call(carol, new Balance())).isEqualTo(9L);
    kit.assertQueueLength(carol, 0);
  }

  @Test
  void drainingARefOfAKindTheKitDoesNotHost_isRefusedClearly(TestKit kit) {
    ServerRef<Msg> nobody = kit.ref(Wallet.KIND, "nobody");
    nobody.cast(new Deposit(1));

    assertThatThrownBy(() -> kit.drain(nobody))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("does not host the kind");
    kit.assertQueueLength(nobody, 1);
  }
}
