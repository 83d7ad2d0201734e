package io.dgen.examples.spring;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.DGen;
import io.dgen.DGenServer;
import io.dgen.From;
import io.dgen.InitResult;
import io.dgen.Result;
import io.dgen.TxContext;
import io.dgen.spring.DGenHosted;
import org.jspecify.annotations.Nullable;
import org.springframework.stereotype.Component;

/**
 * One bank account, a durable server per account id: kind {@code account} in tenant {@code bank},
 * hosted by every instance of the service. An account exists once opened; money moves between
 * accounts through the outbox, in the transaction that debits, so it is never made or lost.
 *
 * <p>A singleton bean shared by every account this instance runs: it keeps nothing in fields but
 * the runtime, which it needs to address other accounts. An account's state is its durable state.
 */
@Component
@DGenHosted(
    kind = "account",
    tenant = "bank",
    idleTimeout = "5m",
    deadLetterThreshold = 5,
    allowTypes = Account.Reply.class) // a keyed call names no reply type: allow the one it gets
public class Account implements DGenServer<Account.State, Account.Msg> {

  /**
   * An account's state.
   *
   * @param open whether the account was opened
   * @param balance its balance, never negative
   */
  public record State(boolean open, long balance) {}

  /** What an account understands. */
  public sealed interface Msg permits Open, Deposit, Transfer, Credit, Balance {}

  /** Opens the account (a call). */
  public record Open() implements Msg {}

  /**
   * Adds money from outside (a call).
   *
   * @param amount positive
   */
  public record Deposit(long amount) implements Msg {}

  /**
   * Moves money to another account, if there is enough (a call).
   *
   * @param to the other account's id
   * @param amount positive
   */
  public record Transfer(long to, long amount) implements Msg {}

  /**
   * Money another account's transfer sent (a cast, queued through that account's outbox). An
   * account that is not open sends it back, marked returned.
   *
   * @param from the account that sent it
   * @param amount positive
   * @param returned whether it is a credit coming back from an account that was not open
   */
  public record Credit(long from, long amount, boolean returned) implements Msg {}

  /** Reads the balance (a call). */
  public record Balance() implements Msg {}

  /** How a call went. */
  public enum Outcome {
    /** Done. */
    OK,
    /** The account is not open. */
    NO_ACCOUNT,
    /** Open: the account was open already. */
    ALREADY_OPEN,
    /** Transfer: the balance is lower than the amount. */
    INSUFFICIENT_FUNDS,
    /** The amount is not positive, or a transfer names its own account. */
    INVALID
  }

  /**
   * Every call's reply.
   *
   * @param outcome how it went
   * @param balance the balance after it
   */
  public record Reply(Outcome outcome, long balance) {}

  private final DGen dgen;

  /**
   * Created by Spring.
   *
   * @param dgen the runtime, for the refs a transfer credits through
   */
  public Account(DGen dgen) {
    this.dgen = dgen;
  }

  @Override
  public InitResult<State> init(@Nullable Object id) {
    return InitResult.ok(new State(false, 0)); // its first message creates it, not yet open
  }

  @Override
  public Result<State> handleCallTx(TxContext tx, Msg request, From from, State s) {
    if (request instanceof Open) {
      return s.open()
          ? reply(Outcome.ALREADY_OPEN, s)
          : reply(Outcome.OK, new State(true, s.balance()));
    }
    if (!s.open()) {
      return reply(Outcome.NO_ACCOUNT, s);
    }
    if (request instanceof Deposit d) {
      return d.amount() <= 0
          ? reply(Outcome.INVALID, s)
          : reply(Outcome.OK, new State(true, s.balance() + d.amount()));
    }
    if (request instanceof Transfer t) {
      if (t.amount() <= 0 || t.to() == id(tx)) {
        return reply(Outcome.INVALID, s);
      }
      if (t.amount() > s.balance()) {
        return reply(Outcome.INSUFFICIENT_FUNDS, s);
      }
      // The debit and the credit's push commit together, or neither does.
      credit(tx, t.to(), new Credit(id(tx), t.amount(), false));
      return reply(Outcome.OK, new State(true, s.balance() - t.amount()));
    }
    return reply(Outcome.OK, s); // Balance
  }

  @Override
  public Result<State> handleCastTx(TxContext tx, Msg message, State s) {
    Credit c = (Credit) message;
    if (s.open()) {
      return Result.noReply(new State(true, s.balance() + c.amount()));
    }
    if (!c.returned()) {
      credit(tx, c.from(), new Credit(id(tx), c.amount(), true)); // back to the sender
    }
    return Result.noReply(s);
  }

  private void credit(TxContext tx, long to, Credit credit) {
    dgen.<Msg>ref(tx.tenant(), "account", Tuple.from(to)).outbox().cast(tx.transaction(), credit);
  }

  /** This account's id: its tuid is {@code ("account", id)}. */
  private static long id(TxContext tx) {
    return tx.tuid().getLong(1);
  }

  private static Result<State> reply(Outcome outcome, State s) {
    return Result.reply(new Reply(outcome, s.balance()), s);
  }
}
