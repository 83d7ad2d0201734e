package io.dgen.spring;

import io.dgen.DGenServer;
import io.dgen.From;
import io.dgen.InitResult;
import io.dgen.Kind;
import io.dgen.Result;
import org.jspecify.annotations.Nullable;

/** A test behaviour that declares its {@link Kind}, and replies what its {@code init} got. */
public class Ledger implements DGenServer<Ledger.State, Ledger.Msg> {

  /** The kind the starter hosts a {@code @DGenHosted(kind = "ledger")} bean of this class by. */
  public static final Kind<Msg> KIND = Kind.of("ledger", Msg.class);

  /** The id {@code init} got, as {@code value:SimpleClassName}. */
  public record State(String id) {}

  /** What a ledger understands. */
  public sealed interface Msg permits Id {}

  /** Replies the state's id (a call). */
  public record Id() implements Msg {}

  @Override
  public InitResult<State> init(@Nullable Object id) {
    return InitResult.ok(
        new State(id + ":" + (id == null ? "null" : id.getClass().getSimpleName())));
  }

  @Override
  public Result<State> handleCall(Msg request, From from, State state) {
    return Result.reply(state.id(), state);
  }
}
