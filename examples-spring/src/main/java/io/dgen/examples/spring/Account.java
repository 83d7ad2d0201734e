package io.dgen.examples.spring;

import io.dgen.Call;
import io.dgen.DGen;
import io.dgen.DGenServer;
import io.dgen.From;
import io.dgen.InitResult;
import io.dgen.Kind;
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
@DGenHosted(kind = "account", tenant = "bank", idleTimeout = "5m", deadLetterThreshold = 5)
public class Account implements DGenServer<Account.State, Account.Msg> {

  /**
   * The kind, with its message type: the starter hosts it by this constant, so an account's id
   * arrives as a {@code Long}, and every ref of it checks its messages.
   */
  public static final Kind<Msg> KIND = Kind.of("account", Msg.class);

  /**
   * An account's state.
   *
   * @param open whether the account was opened
   * @param balance its balance, never negative
   */
  public record State(boolean open, long balance) {}

  /** What an account understands: the requests of its clients, and credits. */
  public sealed interface Msg permits Request, Credit {}

  /** A client's request: a call, answered with a {@link Reply}. */
  public sealed interface Request extends Msg, Call<Reply>
      permits Open, Deposit, Transfer, Balance {}

  /** Opens the account. */
  public record Open() implements Request {}

  /**
   * Adds money from outside.
   *
   * @param amount positive
   */
  public record Deposit(long amount) implements Request {}

  /**
   * Moves money to another account, if there is enough.
   *
   * @param to the other account's id
   * @param amount positive
   */
  public record Transfer(long to, long amount) implements Request {}

  /**
   * Money another account's transfer sent (a cast, queued through that account's outbox). An
   * account that is not open sends it back, marked returned.
   *
   * @param from the account that sent it
   * @param amount positive
   * @param returned whether it is a credit coming back from an account that was not open
   */
  public record Credit(long from, long amount, boolean returned) implements Msg {}

  /** Reads the balance. */
  public record Balance() implements Request {}

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
   * Every request's reply.
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
  public Result<State> handleCallTx(TxContext tx, Msg message, From from, State s) {
    Request request = (Request) message; // every call is a Request; a Credit is a cast
    if (request instanceof Open) {
      return s.open()
          ? reply(request, Outcome.ALREADY_OPEN, s)
          : reply(request, Outcome.OK, new State(true, s.balance()));
    }
    if (!s.open()) {
      return reply(request, Outcome.NO_ACCOUNT, s);
    }
    if (request instanceof Deposit d) {
      return d.amount() <= 0
          ? reply(request, Outcome.INVALID, s)
          : reply(request, Outcome.OK, new State(true, s.balance() + d.amount()));
    }
    if (request instanceof Transfer t) {
      if (t.amount() <= 0 || t.to() == id(tx)) {
        return reply(request, Outcome.INVALID, s);
      }
      if (t.amount() > s.balance()) {
        return reply(request, Outcome.INSUFFICIENT_FUNDS, s);
      }
      // The debit and the credit's push commit together, or neither does.
      credit(tx, t.to(), new Credit(id(tx), t.amount(), false));
      return reply(request, Outcome.OK, new State(true, s.balance() - t.amount()));
    }
    return reply(request, Outcome.OK, s); // Balance
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
    dgen.ref(tx.tenant(), KIND, to).outbox().cast(tx.transaction(), credit);
  }

  /** This account's id, as its ref named it: its tuid is {@code ("account", id)}. */
  private static long id(TxContext tx) {
    return (Long) tx.id();
  }

  /** Answers {@code request} with {@code outcome} and the balance of {@code s}, its new state. */
  private static Result<State> reply(Request request, Outcome outcome, State s) {
    return Result.reply(request, new Reply(outcome, s.balance()), s);
  }
}
