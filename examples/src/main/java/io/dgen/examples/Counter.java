package io.dgen.examples;

import io.dgen.Call;
import io.dgen.DGenServer;
import io.dgen.From;
import io.dgen.InitResult;
import io.dgen.Kind;
import io.dgen.Result;

/** A durable counter: the smallest useful server. Its servers are addressed by a string id. */
public final class Counter implements DGenServer<Counter.State, Counter.Msg> {

  /** The kind of server: its name, and the type of its messages. */
  public static final Kind<Msg> KIND = Kind.of("counter", Msg.class);

  /** The counter's state. */
  public record State(long value) {}

  /** What the counter understands. */
  public sealed interface Msg permits Increment, Get {}

  /** Adds {@code by} to the counter (a cast). */
  public record Increment(long by) implements Msg {}

  /** Reads the counter (a call, answered with the value). */
  public record Get() implements Msg, Call<Long> {}

  @Override
  public InitResult<State> init(Object id) { // the id a ref named: "clicks"
    return InitResult.ok(new State(0));
  }

  @Override
  public Result<State> handleCast(Msg message, State state) {
    if (message instanceof Increment inc) {
      return Result.noReply(new State(state.value() + inc.by()));
    }
    throw new IllegalArgumentException("unexpected cast: " + message);
  }

  @Override
  public Result<State> handleCall(Msg request, From from, State state) {
    if (request instanceof Get get) {
      return Result.reply(get, state.value(), state);
    }
    throw new IllegalArgumentException("unexpected call: " + request);
  }
}
