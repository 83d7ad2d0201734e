package io.dgen;

import com.apple.foundationdb.tuple.Tuple;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A hosted test server: a running total and count of the casts it applied, which records what its
 * {@code init} received and which runtime applied each message, so that tests can check that a
 * server runs in one runtime at a time and that every message is applied once.
 */
final class Tally implements DGenServer<Tally.State, Tally.Msg> {

  record State(long total, long count) {}

  sealed interface Msg permits Add, AddAndGet, Get, Fail, Remind {}

  /** Adds {@code n} to the total. */
  record Add(long n) implements Msg {}

  /** Replies with the state. */
  record Get() implements Msg, Call<State> {}

  /** Adds n and replies the new total. */
  record AddAndGet(long n) implements Msg, Call<Long> {}

  /** Throws: for dead letters. */
  record Fail(String why) implements Msg {}

  /** Schedules an {@code Add} through the callback's own timers. */
  record Remind(long n, long afterMillis) implements Msg {}

  /** What the servers of one test saw, shared by every runtime of the test. */
  static final class Seen {
    final List<Tuple> inits = new CopyOnWriteArrayList<>();

    /** Where each server's casts and infos ran: only the runtime that consumes it. */
    final Map<Tuple, Set<String>> runtimes = new ConcurrentHashMap<>();

    /** Where each server's calls ran: the holder, or a runtime that ran one inline. */
    final Map<Tuple, Set<String>> called = new ConcurrentHashMap<>();

    void ranIn(TxContext tx, String runtime) {
      runtimes.computeIfAbsent(tx.tuid(), t -> ConcurrentHashMap.newKeySet()).add(runtime);
    }

    void calledIn(TxContext tx, String runtime) {
      called.computeIfAbsent(tx.tuid(), t -> ConcurrentHashMap.newKeySet()).add(runtime);
    }
  }

  private final Seen seen;
  private final String runtime;

  Tally(Seen seen, String runtime) {
    this.seen = seen;
    this.runtime = runtime;
  }

  @Override
  public InitResult<State> init(Object arg) {
    seen.inits.add((Tuple) arg);
    return InitResult.ok(new State(0, 0));
  }

  @Override
  public Result<State> handleCastTx(TxContext tx, Msg message, State state) {
    seen.ranIn(tx, runtime);
    if (message instanceof Add a) {
      return Result.noReply(new State(state.total() + a.n(), state.count() + 1));
    }
    if (message instanceof Fail f) {
      throw new IllegalStateException(f.why());
    }
    if (message instanceof Remind r) {
      tx.castAfter(new Add(r.n()), Duration.ofMillis(r.afterMillis()));
    }
    return Result.noReply(state);
  }

  @Override
  public Result<State> handleInfoTx(TxContext tx, Object info, State state) {
    seen.ranIn(tx, runtime);
    return Result.noReply(state);
  }

  @Override
  public Result<State> handleCallTx(TxContext tx, Msg request, From from, State state) {
    seen.calledIn(tx, runtime);
    if (request instanceof Add a) {
      State next = new State(state.total() + a.n(), state.count() + 1);
      return Result.reply(next.total(), next);
    }
    if (request instanceof AddAndGet a) {
      State next = new State(state.total() + a.n(), state.count() + 1);
      return Result.reply(a, next.total(), next);
    }
    return Result.reply(state, state);
  }
}
