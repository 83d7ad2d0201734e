package io.dgen.testkit;

import io.dgen.Call;
import io.dgen.DGenServer;
import io.dgen.From;
import io.dgen.InitResult;
import io.dgen.Kind;
import io.dgen.Result;
import io.dgen.TxContext;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.jspecify.annotations.Nullable;

/** A hosted wallet, named by its owner: the behaviour the kit's hosted tests drive. */
final class Wallet implements DGenServer<Wallet.State, Wallet.Msg> {

  static final Kind<Msg> KIND = Kind.of("wallet", Msg.class);

  record State(String owner, long balance) {}

  sealed interface Msg permits Deposit, Balance, Owner, Remind {}

  /** Adds {@code amount}. */
  record Deposit(long amount) implements Msg {}

  /** Replies the balance. */
  record Balance() implements Msg, Call<Long> {}

  /** Replies the owner {@code init} recorded and the id the callback got, joined by "/". */
  record Owner() implements Msg, Call<String> {}

  /** Schedules a deposit of {@code amount} after {@code after}, from the callback. */
  record Remind(long amount, Duration after) implements Msg {}

  /** The threads that ran {@code init}, for the tests. */
  final List<String> initThreads = new CopyOnWriteArrayList<>();

  @Override
  public InitResult<State> init(@Nullable Object id) {
    initThreads.add(Thread.currentThread().getName());
    return InitResult.ok(new State(String.valueOf(id), 0));
  }

  @Override
  public Result<State> handleCastTx(TxContext tx, Msg message, State state) {
    if (message instanceof Deposit d) {
      return Result.noReply(new State(state.owner(), state.balance() + d.amount()));
    }
    if (message instanceof Remind r) {
      tx.castAfter(new Deposit(r.amount()), r.after());
    }
    return Result.noReply(state);
  }

  @Override
  public Result<State> handleCallTx(TxContext tx, Msg request, From from, State state) {
    if (request instanceof Owner o) {
      return Result.reply(o, state.owner() + "/" + tx.id(), state);
    }
    return Result.reply((Balance) request, state.balance(), state);
  }
}
