package io.dgen.testkit;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.Call;
import io.dgen.DGenServer;
import io.dgen.DbContext;
import io.dgen.Event;
import io.dgen.From;
import io.dgen.InitResult;
import io.dgen.Result;
import io.dgen.TxContext;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jspecify.annotations.Nullable;

/** A bank account: the behaviour the kit's own tests drive. */
final class Account implements DGenServer<Account.State, Account.Msg> {

  record State(long balance) {}

  sealed interface Msg permits Deposit, Balance, Bounce, Audit, Memo {}

  /** Adds {@code amount}; a negative amount fails. */
  record Deposit(long amount) implements Msg {}

  /** Replies the balance. */
  record Balance() implements Msg, Call<Long> {}

  /** Always fails. */
  record Bounce() implements Msg {}

  /**
   * Writes a memo of {@code bytes} under the tenant in 100,000-byte values, changing no state: over
   * 10,000,000 bytes, its transaction cannot commit.
   */
  record Memo(int bytes) implements Msg {}

  /** A slow job in lock mode: adds 100 outside any transaction. */
  record Audit() implements Msg {}

  /**
   * Thrown by handleLocked to play a process that dies while it holds the lock: a fatal VM error
   * (any other {@code Error} is only that run's failure, and the lock would be released).
   */
  static final class Crash extends VirtualMachineError {
    private static final long serialVersionUID = 1L;
  }

  final AtomicBoolean crashInLock = new AtomicBoolean();
  private volatile @Nullable String lastThread;

  /** The thread the last deposit ran in. */
  @Nullable String lastThread() {
    return lastThread;
  }

  @Override
  public InitResult<State> init(@Nullable Object arg) {
    return InitResult.ok(new State(0));
  }

  @Override
  public Result<State> handleCastTx(TxContext tx, Msg message, State state) throws Exception {
    if (message instanceof Memo m) {
      for (int i = 0, left = m.bytes(); left > 0; i++, left -= 100_000) {
        tx.transaction()
            .set(
                tx.tenant().subspace().pack(Tuple.from("memo", i)),
                new byte[Math.min(100_000, left)]);
      }
      return Result.noReply(state);
    }
    return handleCast(message, state);
  }

  @Override
  public Result<State> handleCast(Msg message, State state) {
    if (message instanceof Deposit d && d.amount() >= 0) {
      lastThread = Thread.currentThread().getName();
      return Result.noReply(new State(state.balance() + d.amount()));
    }
    if (message instanceof Audit) {
      return Result.lock(state);
    }
    throw new IllegalArgumentException("refused: " + message);
  }

  @Override
  public Result<State> handleCall(Msg request, From from, State state) {
    if (request instanceof Balance b) {
      return Result.reply(b, state.balance(), state);
    }
    throw new IllegalArgumentException("unexpected call: " + request);
  }

  @Override
  public Result<State> handleLocked(DbContext db, Event<Msg> event, State state) {
    if (crashInLock.getAndSet(false)) {
      throw new Crash();
    }
    return Result.noReply(new State(state.balance() + 100));
  }
}
