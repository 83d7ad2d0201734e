package io.dgen.benchmarks;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.Action;
import io.dgen.Call;
import io.dgen.DGenServer;
import io.dgen.From;
import io.dgen.InitResult;
import io.dgen.Result;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * The benchmarks' counter: a one-field state, casts that add to it, calls that read it or add and
 * return the sum. Every applied cast reports itself to a {@link Progress} through a post-commit
 * action, which is how the harness knows, without reading the store, that a message was durably
 * applied.
 */
public final class CounterServer implements DGenServer<CounterServer.State, CounterServer.Msg> {

  /** The state: one number. */
  public record State(long value) {}

  /** The messages. */
  public sealed interface Msg permits Add, Get, AddAndGet {}

  /** Cast: add {@code by}. */
  public record Add(long by) implements Msg {}

  /** Call: reply with the value, change nothing. */
  public record Get() implements Msg, Call<Long> {}

  /** Call: add {@code by} and reply with the new value. */
  public record AddAndGet(long by) implements Msg, Call<Long> {}

  private final @Nullable Tuple tuid;
  private final List<Action<State>> reportApplied;
  private volatile long lastCallNanos;

  /**
   * A counter with the default identity, or {@code tuid} when many counters share a tenant.
   *
   * @param tuid the identity, or null for the default
   * @param progress where applied casts are reported
   */
  CounterServer(@Nullable Tuple tuid, Progress progress) {
    this.tuid = tuid;
    this.reportApplied = List.of(committed -> progress.add(1));
  }

  @Override
  public InitResult<State> init(@Nullable Object arg) {
    return tuid == null ? InitResult.ok(new State(0)) : InitResult.ok(tuid, new State(0));
  }

  @Override
  public Result<State> handleCast(Msg message, State state) {
    if (message instanceof Add a) {
      return Result.noReply(new State(state.value() + a.by()), reportApplied);
    }
    throw new IllegalArgumentException("not a cast: " + message);
  }

  /** When {@code handleCall} last ran ({@link System#nanoTime()}): splits a call's latency. */
  long lastCallNanos() {
    return lastCallNanos;
  }

  @Override
  public Result<State> handleCall(Msg request, From from, State state) {
    lastCallNanos = System.nanoTime();
    if (request instanceof Get g) {
      return Result.reply(g, state.value(), state);
    }
    if (request instanceof AddAndGet a) {
      State next = new State(state.value() + a.by());
      return Result.reply(a, next.value(), next);
    }
    throw new IllegalArgumentException("not a call: " + request);
  }
}
