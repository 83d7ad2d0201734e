package io.dgen.examples.snippets.guide;

import io.dgen.Call;
import io.dgen.DGenServer;
import io.dgen.From;
import io.dgen.InitResult;
import io.dgen.Result;

// snippet: gs-counter
public final class Counter implements DGenServer<Counter.State, Counter.Msg> {
  public record State(long value) {}

  public sealed interface Msg permits Increment, Get {}

  public record Increment(long by) implements Msg {} // a cast: no reply

  public record Get() implements Msg, Call<Long> {} // a call: its reply is a Long

  @Override
  public InitResult<State> init(Object arg) {
    return InitResult.ok(new State(0));
  }

  @Override
  public Result<State> handleCast(Msg m, State s) {
    return Result.noReply(new State(s.value() + ((Increment) m).by()));
  }

  @Override
  public Result<State> handleCall(Msg m, From from, State s) {
    return Result.reply((Get) m, s.value(), s); // Get is a Call<Long>: the reply must be a Long
  }
}
// end snippet
