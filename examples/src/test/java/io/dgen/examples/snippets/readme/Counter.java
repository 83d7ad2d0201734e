package io.dgen.examples.snippets.readme;

import io.dgen.Call;
import io.dgen.DGenServer;
import io.dgen.From;
import io.dgen.InitResult;
import io.dgen.Kind;
import io.dgen.Result;

// The README's server, kept in its compact form (spotless leaves it alone).
// spotless:off
// snippet: readme-counter
public final class Counter implements DGenServer<Counter.State, Counter.Msg> {
  public static final Kind<Msg> KIND = Kind.of("counter", Msg.class); // a kind of server
  public sealed interface Msg permits Increment, Get {}
  public record Increment(long by) implements Msg {}  // a cast
  public record Get() implements Msg, Call<Long> {}   // a call, answered with a Long
  public record State(long value) {}

  @Override public InitResult<State> init(Object id) { return InitResult.ok(new State(0)); }

  @Override public Result<State> handleCast(Msg m, State s) {
    return Result.noReply(new State(s.value() + ((Increment) m).by()));
  }

  @Override public Result<State> handleCall(Msg m, From from, State s) {
    return Result.reply((Get) m, s.value(), s);
  }
}
// end snippet
// spotless:on
