package io.dgen.examples.snippets.guide;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dgen.CallRejectedException;
import io.dgen.ServerRef;
import io.dgen.testkit.DGenExtension;
import io.dgen.testkit.TestKit;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

// snippet: gs-account-test
@ExtendWith(DGenExtension.class)
class AccountTest {
  @Test
  void withdrawsWithinTheBalanceAndTheDailyLimit(TestKit kit) {
    kit.host(Account.KIND, Account::new);
    ServerRef<Account.Msg> alice = kit.ref(Account.KIND, "alice");
    alice.cast(new Account.Deposit(1_000));
    kit.assertQueueLength(alice, 1);
    assertThat(kit.drain(alice)).isEqualTo(1); // every callback has run when drain returns

    assertThat(alice.call(new Account.Withdraw(400)).balance()).isEqualTo(600);
    assertThatThrownBy(() -> alice.call(new Account.Withdraw(2_000)))
        .isInstanceOf(CallRejectedException.class)
        .hasMessageContaining("insufficient funds: balance 600");
    assertThatThrownBy(() -> alice.call(new Account.Withdraw(200)))
        .hasMessageContaining("daily limit of 500 reached");

    kit.advance(Duration.ofDays(1)); // the timer is due: queued before advance returns
    kit.drain(alice);
    assertThat(alice.call(new Account.Withdraw(200)).balance()).isEqualTo(400);
  }
}
// end snippet
