package io.dgen;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.backend.BackendException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;

/** A server whose behaviour is chosen by the message; shared by the runtime's tests. */
final class TestServer implements DGenServer<TestServer.State, TestServer.Msg> {

  /** The state: a total, per-publisher sequence tracking, and the order values were applied in. */
  record State(long total, Map<String, Long> lastSeq, long outOfOrder, List<Long> seen) {
    static State of(long total) {
      return new State(total, Map.of(), 0, List.of());
    }

    State add(long n) {
      List<Long> s = new ArrayList<>(seen);
      s.add(n);
      return new State(total + n, lastSeq, outOfOrder, s);
    }
  }

  /** The start argument: initial total and optional identity. */
  record Init(long total, @Nullable Tuple tuid, @Nullable String refuse) {}

  sealed interface Msg {}

  /** Adds n. (Sent as a call with a reply type, replies the new total, as every cast here.) */
  record Add(long n) implements Msg {}

  /**
   * Runs {@code message} as a priority call: every message here, sent as a call, replies the total
   * after it (a query replies its own answer). Only for a priority call to a process of this
   * runtime, which is never stored: the queue does not encode a field of an interface type. A
   * queued call of such a message names its reply type instead: {@code call(m, Long.class, t)}.
   */
  record Ask(Msg message) implements Msg, Call<Long> {}

  /** Adds n and replies the new total. */
  record AddAndGet(long n) implements Msg, Call<Long> {}

  /** Replies the total. */
  record Get() implements Msg, Call<Long> {}

  /** Replies the whole state. */
  record GetState() implements Msg, Call<State> {}

  /** Counts one message of a publisher's sequence, checking the order. */
  record Seq(String publisher, long seq) implements Msg {}

  /** Always throws. */
  record Boom(String why) implements Msg {}

  /** Throws for the first {@code times} executions with this id, then adds 1. */
  record FailFirst(String id, int times) implements Msg {}

  /** Advances the test clock by {@code nanos} while running, as a slow callback would. */
  record Slow(long nanos) implements Msg {}

  /** Returns Result.stop. */
  record Stop(String reason) implements Msg {}

  /** Writes a key of the tenant in the callback's transaction, then throws if asked. */
  record TxWrite(String key, String value, boolean thenFail) implements Msg {}

  /**
   * Adds 1 and returns post-commit actions: "rec:x" records x with the total, "fail", "halt",
   * "hook" (runs {@link Hooks#actionHook}).
   */
  record Act(List<String> steps) implements Msg {}

  /** As a call, replies the state's list of values applied: the live list, not a copy. */
  record GetSeen() implements Msg, Call<List<Long>> {}

  /** Appends {@code n} to the state's list of values applied, in place (and adds it). */
  record AppendInPlace(long n) implements Msg {}

  /**
   * As a call, replies the state's live list of values applied, with an action that appends {@code
   * n} to the committed state's list in place.
   */
  record GetSeenThenAppend(long n) implements Msg, Call<List<Long>> {}

  /** Runs and removes {@link Hooks#callbackHooks}{@code .get(id)}, if any, then changes nothing. */
  record Hook(String id) implements Msg {}

  /** Returns null instead of a Result. */
  record ReturnNull() implements Msg {}

  /**
   * Throws a {@link Throwable} of {@code kind} ({@link #throwable}) for its first {@code times}
   * executions with this id, then adds 1.
   */
  record Throw(String id, String kind, int times) implements Msg {}

  /**
   * Takes the lock; handleLocked throws a {@link Throwable} of {@code kind} ({@link #throwable})
   * for its first {@code times} runs with this id, then adds 1000 and replies "done-" + id.
   */
  record LockedThrow(String id, String kind, int times) implements Msg {}

  /**
   * A throwable of a kind: "runtime", "assertion", "stackoverflow", "oom" (an {@link
   * OutOfMemoryError}, thrown, not caused) or "internal" (an {@link InternalError}).
   */
  static Throwable throwable(String kind, String message) {
    return switch (kind) {
      case "runtime" -> new IllegalStateException(message);
      case "assertion" -> new AssertionError(message);
      case "stackoverflow" -> new StackOverflowError(message);
      case "oom" -> new OutOfMemoryError(message);
      case "internal" -> new InternalError(message);
      default -> throw new IllegalArgumentException("no such kind: " + kind);
    };
  }

  /** Throws {@code t}, checked or not. */
  @SuppressWarnings("unchecked")
  static <T extends Throwable> RuntimeException sneaky(Throwable t) throws T {
    throw (T) t;
  }

  /** Fails while {@link Hooks#poisoned} is set, then adds 1; counts its executions. */
  record Poison(String id) implements Msg {}

  /** Takes the lock; handleLocked adds 1000 and replies "done-" + id. */
  record Work(String id) implements Msg {}

  /** Replies a string of {@code size} characters. */
  record Echo(int size) implements Msg, Call<String> {}

  /**
   * For its first {@code times} executions with this id, throws a backend error of {@code code}
   * wrapped by user code; then adds 1.
   */
  record Transient(String id, int times, int code) implements Msg {}

  /**
   * For its first {@code times} executions with this id, advances {@link Hooks#clock} (or, with
   * {@code backendOnly}, {@link Hooks#backendClock}) by {@code nanos}, then reads a key of the
   * tenant through the transaction; then adds 1.
   */
  record ReadAfter(String id, int times, long nanos, boolean backendOnly) implements Msg {}

  /** What the tests observe from outside the transaction. */
  static final class Hooks {
    final AtomicLong clock = new AtomicLong();

    /** Time only the backend sees pass (a cluster-side delay), on top of {@link #clock}. */
    final AtomicLong backendClock = new AtomicLong();

    final List<String> actions = new CopyOnWriteArrayList<>();
    final Map<String, AtomicInteger> attempts = new ConcurrentHashMap<>();
    final List<Object> infos = new CopyOnWriteArrayList<>();
    final java.util.concurrent.atomic.AtomicBoolean poisoned =
        new java.util.concurrent.atomic.AtomicBoolean(true);
    final List<String> deadLetters = new CopyOnWriteArrayList<>();

    /** handleLocked invocations started, and those whose handleLocked returned. */
    final AtomicInteger lockedStarted = new AtomicInteger();

    final AtomicInteger lockedReturned = new AtomicInteger();

    /** When set, the first handleLocked blocks on it (after counting down lockEntered). */
    volatile java.util.concurrent.@Nullable CountDownLatch lockGate;

    final java.util.concurrent.CountDownLatch lockEntered =
        new java.util.concurrent.CountDownLatch(1);

    /** What an action step "hook" runs, if set. */
    volatile @Nullable Runnable actionHook;

    /** What a {@link Hook} message's callback runs once, by id. */
    final Map<String, Runnable> callbackHooks = new ConcurrentHashMap<>();

    /** If set, handleDeadLetter throws a throwable of this kind after recording the message. */
    volatile @Nullable String deadLetterThrows;
  }

  private final Hooks hooks;

  TestServer(Hooks hooks) {
    this.hooks = hooks;
  }

  @Override
  public InitResult<State> init(@Nullable Object arg) {
    if (arg instanceof Init i) {
      if (i.refuse() != null) {
        return InitResult.error(i.refuse());
      }
      return i.tuid() != null
          ? InitResult.ok(i.tuid(), State.of(i.total()))
          : InitResult.ok(State.of(i.total()));
    }
    return InitResult.ok(State.of(0));
  }

  @Override
  public Result<State> handleCallTx(TxContext tx, Msg request, From from, State state)
      throws Exception {
    if (request instanceof Ask a) {
      return handleCallTx(tx, a.message(), from, state);
    }
    if (request instanceof AddAndGet a) {
      State added = state.add(a.n());
      return Result.reply(a, added.total(), added);
    }
    if (request instanceof Get g) {
      return Result.reply(g, state.total(), state);
    }
    if (request instanceof GetState g) {
      return Result.reply(g, state, state);
    }
    if (request instanceof Echo e) {
      return Result.reply(e, "x".repeat(e.size()), state);
    }
    if (request instanceof GetSeen g) {
      return Result.reply(g, state.seen(), state);
    }
    if (request instanceof GetSeenThenAppend g) {
      return Result.reply(
          g, state.seen(), state, List.of(committed -> committed.seen().add(g.n())));
    }
    Result<State> r = handleCastTx(tx, request, state);
    return r == null || r.kind() == Result.Kind.STOP || r.kind() == Result.Kind.LOCK
        ? r
        : Result.reply(r.state().total(), r.state(), r.actions());
  }

  @Override
  public Result<State> handleCastTx(TxContext tx, Msg message, State state) throws Exception {
    if (message instanceof Add a) {
      return Result.noReply(state.add(a.n()));
    }
    if (message instanceof AppendInPlace a) {
      List<Long> seen =
          state.seen() instanceof ArrayList<Long> l ? l : new ArrayList<>(state.seen());
      seen.add(a.n());
      return Result.noReply(
          new State(state.total() + a.n(), state.lastSeq(), state.outOfOrder(), seen));
    }
    if (message instanceof Seq s) {
      long last = state.lastSeq().getOrDefault(s.publisher(), 0L);
      Map<String, Long> seqs = new HashMap<>(state.lastSeq());
      seqs.put(s.publisher(), s.seq());
      long bad = state.outOfOrder() + (s.seq() == last + 1 ? 0 : 1);
      return Result.noReply(new State(state.total() + 1, seqs, bad, state.seen()));
    }
    if (message instanceof Boom b) {
      throw new IllegalStateException("boom: " + b.why());
    }
    if (message instanceof FailFirst f) {
      int n = hooks.attempts.computeIfAbsent(f.id(), k -> new AtomicInteger()).incrementAndGet();
      if (n <= f.times()) {
        throw new IllegalStateException("failing attempt " + n + " of " + f.id());
      }
      return Result.noReply(state.add(1));
    }
    if (message instanceof Slow s) {
      hooks.clock.addAndGet(s.nanos());
      return Result.noReply(state.add(1));
    }
    if (message instanceof Stop s) {
      return Result.stop(s.reason(), state.add(1));
    }
    if (message instanceof TxWrite w) {
      tx.transaction()
          .set(
              tx.tenant().subspace().pack(Tuple.from("user", w.key())),
              w.value().getBytes(StandardCharsets.UTF_8));
      if (w.thenFail()) {
        throw new IllegalStateException("failing after a write");
      }
      return Result.noReply(state.add(1));
    }
    if (message instanceof Act a) {
      List<Action<State>> actions = new ArrayList<>();
      for (String step : a.steps()) {
        actions.add(
            committed -> {
              if (step.equals("fail")) {
                throw new IllegalStateException("action failed");
              }
              if (step.equals("halt")) {
                Action.halt();
              }
              if (step.startsWith("throw:")) {
                throw sneaky(throwable(step.substring(6), "action threw"));
              }
              Runnable hook = hooks.actionHook;
              if (step.equals("hook") && hook != null) {
                hook.run();
              }
              hooks.actions.add(step + "@" + committed.total());
            });
      }
      return Result.noReply(state.add(1), actions);
    }
    if (message instanceof Poison p) {
      hooks.attempts.computeIfAbsent(p.id(), k -> new AtomicInteger()).incrementAndGet();
      if (hooks.poisoned.get()) {
        throw new IllegalStateException("poisoned: " + p.id());
      }
      return Result.noReply(state.add(1));
    }
    if (message instanceof Work) {
      return Result.lock(state);
    }
    if (message instanceof Transient t) {
      int n = hooks.attempts.computeIfAbsent(t.id(), k -> new AtomicInteger()).incrementAndGet();
      if (n <= t.times()) {
        throw new IllegalStateException(
            "user code wrapped a backend error",
            new BackendException(t.code(), "thrown by the test, attempt " + n));
      }
      return Result.noReply(state.add(1));
    }
    if (message instanceof ReadAfter r) {
      int n = hooks.attempts.computeIfAbsent(r.id(), k -> new AtomicInteger()).incrementAndGet();
      if (n <= r.times()) {
        (r.backendOnly() ? hooks.backendClock : hooks.clock).addAndGet(r.nanos());
        tx.transaction().get(tx.tenant().subspace().pack(Tuple.from("user", r.id())));
      }
      return Result.noReply(state.add(1));
    }
    if (message instanceof ReturnNull) {
      return nullResult();
    }
    if (message instanceof Hook h) {
      Runnable hook = hooks.callbackHooks.remove(h.id());
      if (hook != null) {
        hook.run();
      }
      return Result.noReply(state);
    }
    if (message instanceof Throw t) {
      int n = hooks.attempts.computeIfAbsent(t.id(), k -> new AtomicInteger()).incrementAndGet();
      if (n <= t.times()) {
        throw sneaky(throwable(t.kind(), "thrown by " + t.id() + ", attempt " + n));
      }
      return Result.noReply(state.add(1));
    }
    if (message instanceof LockedThrow) {
      return Result.lock(state);
    }
    throw new IllegalArgumentException("unknown message " + message);
  }

  @SuppressWarnings("NullAway")
  private static Result<State> nullResult() {
    return null;
  }

  @Override
  public Result<State> handleLocked(DbContext db, Event<Msg> event, State state) throws Exception {
    int n = hooks.lockedStarted.incrementAndGet();
    var gate = hooks.lockGate;
    if (n == 1 && gate != null) {
      hooks.lockEntered.countDown();
      gate.await();
    }
    if (event.message() instanceof LockedThrow t) {
      String id = "locked:" + t.id();
      int attempt = hooks.attempts.computeIfAbsent(id, k -> new AtomicInteger()).incrementAndGet();
      if (attempt <= t.times()) {
        throw sneaky(throwable(t.kind(), "handleLocked of " + t.id() + " threw, run " + attempt));
      }
      hooks.lockedReturned.incrementAndGet();
      return Result.reply("done-" + t.id(), state.add(1000));
    }
    hooks.lockedReturned.incrementAndGet();
    return Result.reply("done-" + ((Work) event.message()).id(), state.add(1000));
  }

  @Override
  public void handleDeadLetter(Msg message, int attempts) {
    hooks.deadLetters.add(message + "x" + attempts);
    String kind = hooks.deadLetterThrows;
    if (kind != null) {
      throw sneaky(throwable(kind, "handleDeadLetter threw"));
    }
  }

  @Override
  public Result<State> handleInfo(Object info, State state) {
    hooks.infos.add(info);
    return Result.noReply(state.add(100));
  }
}
