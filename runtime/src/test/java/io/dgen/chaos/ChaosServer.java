package io.dgen.chaos;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.Call;
import io.dgen.DGenServer;
import io.dgen.DbContext;
import io.dgen.Event;
import io.dgen.From;
import io.dgen.InitResult;
import io.dgen.Outbox;
import io.dgen.Result;
import io.dgen.Tenant;
import io.dgen.TerminalException;
import io.dgen.TxContext;
import io.dgen.backend.Transaction;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BiConsumer;
import java.util.function.IntFunction;
import org.jspecify.annotations.Nullable;

/**
 * The behaviour of the chaos workload's servers. Every message leaves evidence of its application
 * in the same transaction that applies it, next to the servers in the tenant's keyspace, so that
 * the verifier can count applications exactly:
 *
 * <ul>
 *   <li>{@link Apply}, and {@link Ask} (its call): adds 1 to {@code ("chaos-applied", id)}; {@code
 *       Ask} replies its id;
 *   <li>{@link Transfer}: adds 1 to {@code ("chaos-applied", id)}; if the balance covers it, debits
 *       it, records {@code ("chaos-debited", id)} and casts a {@link Credit} to the target server
 *       through its outbox, in the same transaction;
 *   <li>{@link Credit}: adds 1 to {@code ("chaos-applied", id + "/credit")} and credits the
 *       balance;
 *   <li>{@link Take} and {@link Give}, the two calls of an atomic transfer ({@code DGen.transact}):
 *       {@code Take} adds 1 to {@code ("chaos-applied", id)} and debits the balance (refused beyond
 *       it), {@code Give} adds 1 to {@code ("chaos-applied", id + "/credit")} and credits it; both
 *       commit in one transaction or neither does;
 *   <li>{@link Work}: takes the lock; {@code handleLocked} works for a while, adds 1 to {@code
 *       ("chaos-locked-runs", id)} in a transaction of its own (a side effect: at least once) and
 *       returns a state that lists the id in {@link State#worked}; the next callback moves the list
 *       to {@code ("chaos-applied", id)} counters (a fenced holder's result never commits, so each
 *       id reaches the list once);
 *   <li>{@link Poison}: always throws, so it is dead-lettered at the threshold.
 * </ul>
 */
final class ChaosServer implements DGenServer<ChaosServer.State, ChaosServer.Msg> {

  /** The state: a balance, and the lock-mode work committed since the last callback. */
  record State(long balance, List<String> worked) {
    State {
      worked = List.copyOf(worked);
    }
  }

  /** The workload's messages. */
  sealed interface Msg {}

  /** Counted once per application; a call replies {@code id}. */
  record Apply(String id) implements Msg {}

  /** An {@link Apply} sent as a call: counted the same way, and replies its id. */
  record Ask(String id) implements Msg, Call<String> {}

  /** Moves {@code amount} from this server to server {@code to}, if the balance covers it. */
  record Transfer(String id, int to, long amount) implements Msg {}

  /** The receiving half of a {@link Transfer}. */
  record Credit(String id, long amount) implements Msg {}

  /** The debit of an atomic transfer: refused ({@link TerminalException}) beyond the balance. */
  record Take(String id, long amount) implements Msg, Call<Long> {}

  /** The credit of an atomic transfer, in the same transaction as its {@link Take}. */
  record Give(String id, long amount) implements Msg, Call<Long> {}

  /** Lock-mode work of {@code millis} milliseconds. */
  record Work(String id, long millis) implements Msg {}

  /** Always fails: meant to be dead-lettered. */
  record Poison(String id) implements Msg {}

  static final String APPLIED = "chaos-applied";
  static final String DEBITED = "chaos-debited";
  static final String LOCKED_RUNS = "chaos-locked-runs";

  /** Each server's balance at start; the total is conserved. */
  static final long INITIAL_BALANCE = 100_000;

  private static final byte[] ONE =
      ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(1).array();

  private final IntFunction<Outbox<Msg>> outboxes;
  private final BiConsumer<String, String> events;

  /**
   * @param outboxes the outbox of server {@code i}, for transfers
   * @param events told ({@code event}, {@code id}) when {@code handleLocked} starts and ends and
   *     when a message is dead-lettered, for the journal
   */
  ChaosServer(IntFunction<Outbox<Msg>> outboxes, BiConsumer<String, String> events) {
    this.outboxes = outboxes;
    this.events = events;
  }

  static byte[] key(Tenant tenant, String kind, String id) {
    return tenant.subspace().pack(Tuple.from(kind, id));
  }

  @Override
  public InitResult<State> init(@Nullable Object arg) {
    // a started server gets its index; a hosted one, at its first message, its id within its kind
    return arg instanceof Tuple hostedId
        ? InitResult.ok(hostedId, initial())
        : InitResult.ok(ChaosServers.tuid((Integer) arg), initial());
  }

  static State initial() {
    return new State(INITIAL_BALANCE, List.of());
  }

  @Override
  public Result<State> handleCallTx(TxContext tx, Msg request, From from, State state) {
    State s = settleWork(tx, state);
    if (request instanceof Ask a) {
      count(tx, APPLIED, a.id());
      return Result.reply(a, a.id(), s);
    }
    if (request instanceof Take t) {
      if (s.balance() < t.amount()) {
        throw new TerminalException("balance " + s.balance() + " does not cover " + t.amount());
      }
      count(tx, APPLIED, t.id());
      State next = new State(s.balance() - t.amount(), s.worked());
      return Result.reply(t, next.balance(), next);
    }
    if (request instanceof Give g) {
      count(tx, APPLIED, g.id() + "/credit");
      State next = new State(s.balance() + g.amount(), s.worked());
      return Result.reply(g, next.balance(), next);
    }
    throw new IllegalArgumentException("not a call: " + request);
  }

  @Override
  public Result<State> handleCastTx(TxContext tx, Msg message, State state) {
    State s = settleWork(tx, state);
    if (message instanceof Apply a) {
      count(tx, APPLIED, a.id());
      return Result.noReply(s);
    }
    if (message instanceof Transfer t) {
      count(tx, APPLIED, t.id());
      if (s.balance() < t.amount()) {
        return Result.noReply(s);
      }
      tx.transaction().set(key(tx.tenant(), DEBITED, t.id()), ONE);
      outboxes.apply(t.to()).cast(tx.transaction(), new Credit(t.id(), t.amount()));
      return Result.noReply(new State(s.balance() - t.amount(), s.worked()));
    }
    if (message instanceof Credit c) {
      count(tx, APPLIED, c.id() + "/credit");
      return Result.noReply(new State(s.balance() + c.amount(), s.worked()));
    }
    if (message instanceof Work) {
      return Result.lock(s);
    }
    if (message instanceof Poison p) {
      throw new IllegalStateException("poison " + p.id());
    }
    throw new IllegalArgumentException("unknown message " + message);
  }

  @Override
  public Result<State> handleLocked(DbContext db, Event<Msg> event, State state)
      throws InterruptedException {
    Work w = (Work) event.message();
    events.accept("locked-start", w.id());
    Thread.sleep(w.millis()); // the work itself: this is the workload, not a wait for anything
    db.backend()
        .run(
            tx -> {
              tx.add(key(db.tenant(), LOCKED_RUNS, w.id()), 1);
              return null;
            });
    events.accept("locked-end", w.id());
    List<String> worked = new ArrayList<>(state.worked());
    worked.add(w.id());
    return Result.noReply(new State(state.balance(), worked));
  }

  @Override
  public void handleDeadLetter(Msg message, int attempts) {
    events.accept("dead-letter", id(message));
  }

  static String id(Msg message) {
    if (message instanceof Apply a) {
      return a.id();
    }
    if (message instanceof Ask a) {
      return a.id();
    }
    if (message instanceof Transfer t) {
      return t.id();
    }
    if (message instanceof Credit c) {
      return c.id() + "/credit";
    }
    if (message instanceof Work w) {
      return w.id();
    }
    if (message instanceof Take t) {
      return t.id();
    }
    if (message instanceof Give g) {
      return g.id() + "/credit";
    }
    return ((Poison) message).id();
  }

  /** Moves the work committed by {@code handleLocked} into counters, in this transaction. */
  private static State settleWork(TxContext tx, State state) {
    if (state.worked().isEmpty()) {
      return state;
    }
    for (String id : state.worked()) {
      count(tx, APPLIED, id);
    }
    return new State(state.balance(), List.of());
  }

  private static void count(TxContext tx, String kind, String id) {
    Transaction t = tx.transaction();
    t.add(key(tx.tenant(), kind, id), 1);
  }
}
