package io.dgen.examples.snippets.guide;

import io.dgen.Call;
import io.dgen.DGenServer;
import io.dgen.From;
import io.dgen.InitResult;
import io.dgen.Kind;
import io.dgen.Result;
import io.dgen.TerminalException;
import io.dgen.TxContext;
import java.time.Duration;

// getting-started's service, kept in a compact form (spotless leaves it alone).
// spotless:off
// snippet: gs-account-kind
public final class Account implements DGenServer<Account.State, Account.Msg> {
  public static final Kind<Msg> KIND = Kind.of("account", Msg.class);

  public sealed interface Msg permits Deposit, Withdraw, Balance, NewDay {}
  public record Deposit(long amount) implements Msg {}                   // a cast: no reply
  public record Withdraw(long amount) implements Msg, Call<Withdrawn> {} // a call, answered
  public record Withdrawn(long amount, long balance) {}                  //   with a Withdrawn
  public record Balance() implements Msg, Call<Long> {}                  // a call, with a Long
  record NewDay() implements Msg {}                                      // sent by a timer

  public record State(long balance, long withdrawnToday) {}
// end snippet

// snippet: gs-account-behaviour
  @Override public InitResult<State> init(Object id) { // id: "alice", as the ref named it
    return InitResult.ok(new State(0, 0));
  }

  @Override public Result<State> handleCast(Msg m, State s) {
    if (m instanceof Deposit d) {
      return Result.noReply(new State(s.balance() + d.amount(), s.withdrawnToday()));
    }
    return Result.noReply(new State(s.balance(), 0)); // NewDay: a new day, a new limit
  }

  @Override public Result<State> handleCallTx(TxContext tx, Msg m, From from, State s) {
    if (m instanceof Withdraw w) {
      if (w.amount() > s.balance()) {
        throw new TerminalException("insufficient funds: balance " + s.balance());
      }
      if (s.withdrawnToday() + w.amount() > 500) {
        throw new TerminalException("daily limit of 500 reached");
      }
      if (s.withdrawnToday() == 0) { // the day's first withdrawal: a new day in 24 hours
        tx.castAfter(new NewDay(), Duration.ofDays(1)); // stored if this transaction commits
      }
      State next = new State(s.balance() - w.amount(), s.withdrawnToday() + w.amount());
      return Result.reply(w, new Withdrawn(w.amount(), next.balance()), next);
    }
    return Result.reply((Balance) m, s.balance(), s);
  }
}
// end snippet
// spotless:on
