package io.dgen;

import com.apple.foundationdb.tuple.Tuple;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;

/**
 * A test account that refuses what it cannot do with {@link TerminalException}: a withdrawal beyond
 * its balance (in a callback or in {@code handleLocked}), any info message, and, hosted, being
 * created for an id that was never opened ({@code init}). What it applies is recorded in the state
 * (ids, in order) and by a post-commit action per message, so that tests can tell a refused message
 * left nothing behind.
 */
final class Account implements DGenServer<Account.State, Account.Msg> {

  /** The kind a test hosts. */
  static final String KIND = "account";

  /** The balance, and the ids of the messages applied, in order. */
  record State(long balance, List<String> applied) {
    static final State EMPTY = new State(0, List.of());

    State plus(String id, long amount) {
      List<String> a = new ArrayList<>(applied);
      a.add(id);
      return new State(balance + amount, a);
    }
  }

  sealed interface Msg permits Deposit, Withdraw, WithdrawCall, LockedWithdraw, Statement {}

  /** Adds {@code amount}; as a call replies the new balance. */
  record Deposit(String id, long amount) implements Msg {}

  /**
   * Takes {@code amount} away; refused beyond the balance. With {@code tx}, the refusing callback
   * first writes through its transaction: a key of the tenant ({@link #mark}), a timer to itself
   * due in an hour, and a cast through {@link Hooks#sink}'s outbox.
   */
  record Withdraw(String id, long amount, boolean tx) implements Msg {}

  /** A {@link Withdraw} sent as a call: replies the new balance. */
  record WithdrawCall(String id, long amount, boolean tx) implements Msg, Call<Long> {
    Withdraw withdraw() {
      return new Withdraw(id, amount, tx);
    }
  }

  /** Takes the lock; {@code handleLocked} withdraws, refused beyond the balance. */
  record LockedWithdraw(String id, long amount) implements Msg {}

  /** Replies the state. */
  record Statement() implements Msg {}

  /** What the accounts of one test did, shared by their instances. */
  static final class Hooks {
    final Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
    final List<String> actions = new CopyOnWriteArrayList<>();
    final Set<Tuple> opened = ConcurrentHashMap.newKeySet();
    final AtomicInteger inits = new AtomicInteger();

    /** Whether a hosted {@code init} declines with {@link InitResult#error} rather than a throw. */
    volatile boolean declineByError;

    /** Where a refusing {@code tx} withdrawal sends its outbox cast. */
    volatile @Nullable ServerRef<Msg> sink;

    /** How many times a callback ran for message {@code id}. */
    int runs(String id) {
      AtomicInteger n = runs.get(id);
      return n == null ? 0 : n.get();
    }

    private void ran(String id) {
      runs.computeIfAbsent(id, k -> new AtomicInteger()).incrementAndGet();
    }
  }

  /** The key of the tenant that a refusing {@code tx} withdrawal {@code id} writes. */
  static byte[] mark(Tenant tenant, String id) {
    return tenant.subspace().pack(Tuple.from("mark", id));
  }

  private final Hooks hooks;
  private final boolean hosted;

  /**
   * @param hosted whether it is hosted ({@code DGen.host}): its {@code init} gets its id and
   *     creates only opened accounts; else {@code init} gets the tuid to start under
   */
  Account(Hooks hooks, boolean hosted) {
    this.hooks = hooks;
    this.hosted = hosted;
  }

  @Override
  public InitResult<State> init(@Nullable Object arg) {
    Tuple id = (Tuple) Objects.requireNonNull(arg);
    if (!hosted) {
      return InitResult.ok(id, State.EMPTY);
    }
    hooks.inits.incrementAndGet();
    if (hooks.opened.contains(id)) {
      return InitResult.ok(State.EMPTY);
    }
    if (hooks.declineByError) {
      return InitResult.error("no such account: " + id);
    }
    throw new TerminalException("no such account: " + id);
  }

  @Override
  public Result<State> handleCallTx(TxContext tx, Msg request, From from, State state) {
    return apply(tx, request, state);
  }

  @Override
  public Result<State> handleCastTx(TxContext tx, Msg message, State state) {
    return apply(tx, message, state);
  }

  @Override
  public Result<State> handleInfo(Object info, State state) {
    throw new TerminalException("info refused: " + info);
  }

  private Result<State> apply(TxContext tx, Msg request, State state) {
    Msg msg = request instanceof WithdrawCall c ? c.withdraw() : request;
    if (msg instanceof Deposit d) {
      hooks.ran(d.id());
      return applied(d.id(), state.plus(d.id(), d.amount()));
    }
    if (msg instanceof Withdraw w) {
      hooks.ran(w.id());
      if (w.amount() > state.balance()) {
        if (w.tx()) {
          tx.transaction().set(mark(tx.tenant(), w.id()), new byte[] {1});
          tx.castAfter(new Deposit(w.id() + "-timer", w.amount()), Duration.ofHours(1));
          Objects.requireNonNull(hooks.sink)
              .outbox()
              .cast(tx.transaction(), new Deposit(w.id() + "-outbox", w.amount()));
        }
        throw insufficient(state, w.amount());
      }
      return applied(w.id(), state.plus(w.id(), -w.amount()));
    }
    if (msg instanceof LockedWithdraw l) {
      hooks.ran(l.id() + ":lock");
      return Result.lock(state);
    }
    return Result.reply(state, state); // Statement
  }

  @Override
  public Result<State> handleLocked(DbContext db, Event<Msg> event, State state) {
    LockedWithdraw l = (LockedWithdraw) event.message();
    hooks.ran(l.id());
    if (l.amount() > state.balance()) {
      throw insufficient(state, l.amount());
    }
    return applied(l.id(), state.plus(l.id(), -l.amount()));
  }

  /** The refusal of a withdrawal of {@code amount}. */
  static TerminalException insufficient(State state, long amount) {
    return new TerminalException(
        "insufficient funds: balance=" + state.balance() + " amount=" + amount);
  }

  /** {@code state}, replied as its balance, with an action that records {@code id}. */
  private Result<State> applied(String id, State state) {
    return Result.reply(state.balance(), state, List.of(s -> hooks.actions.add(id)));
  }
}
