package io.dgen.benchmarks;

import io.dgen.Action;
import io.dgen.DGenServer;
import io.dgen.From;
import io.dgen.InitResult;
import io.dgen.Result;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * The wide state as Java code most often writes it: a record holding a {@link HashMap} that each
 * cast copies and changes one entry of. The copy shares every key and value but the changed one
 * with the state before, yet it is a new map, so identity alone tells the runtime nothing. Takes
 * {@link WideServer}'s messages; applied casts are reported to a {@link Progress}.
 */
public final class MutableWideServer
    implements DGenServer<MutableWideServer.State, WideServer.Msg> {

  /** The state: {@code fields} named {@code field0000}, {@code field0001}, … in a HashMap. */
  public record State(Map<String, String> fields) {}

  private final int fieldCount;
  private final List<Action<State>> reportApplied;

  MutableWideServer(int fieldCount, Progress progress) {
    this.fieldCount = fieldCount;
    this.reportApplied = List.of(committed -> progress.add(1));
  }

  @Override
  public InitResult<State> init(@Nullable Object arg) {
    Map<String, String> fields = new HashMap<>();
    for (int i = 0; i < fieldCount; i++) {
      fields.put(WideServer.field(i), "value of field " + i);
    }
    return InitResult.ok(new State(fields));
  }

  @Override
  public Result<State> handleCast(WideServer.Msg message, State state) {
    if (message instanceof WideServer.Put p) {
      Map<String, String> fields = new HashMap<>(state.fields());
      fields.put(p.field(), p.value());
      return Result.noReply(new State(fields), reportApplied);
    }
    if (message instanceof WideServer.PutAll p) {
      Map<String, String> fields = new HashMap<>(state.fields());
      fields.replaceAll((k, v) -> p.value());
      return Result.noReply(new State(fields), reportApplied);
    }
    throw new IllegalArgumentException("not a cast: " + message);
  }

  @Override
  public Result<State> handleCall(WideServer.Msg request, From from, State state) {
    if (request instanceof WideServer.Get g) {
      return Result.reply(g, state.fields().get(g.field()), state);
    }
    throw new IllegalArgumentException("not a call: " + request);
  }
}
