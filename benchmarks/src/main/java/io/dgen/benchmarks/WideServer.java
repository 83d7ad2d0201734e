package io.dgen.benchmarks;

import com.google.common.collect.ImmutableMap;
import io.dgen.Action;
import io.dgen.Call;
import io.dgen.DGenServer;
import io.dgen.From;
import io.dgen.InitResult;
import io.dgen.Result;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * A server whose state is one object of many string fields, changed one field per cast: the case
 * the structured encoding exists for (DESIGN §5, §8). The state is deeply immutable (a record over
 * an immutable map), so the runtime keeps it decoded and a write looks only at what changed.
 * Applied casts are reported to a {@link Progress}.
 */
public final class WideServer implements DGenServer<WideServer.State, WideServer.Msg> {

  /** The state: {@code fields} named {@code field0000}, {@code field0001}, … */
  public record State(Map<String, String> fields) {
    /** Keeps an immutable copy: what Jackson decodes is a mutable map. */
    public State {
      fields = ImmutableMap.copyOf(fields);
    }
  }

  /** The messages. */
  public sealed interface Msg permits Put, PutAll, Get {}

  /** Cast: set one field. */
  public record Put(String field, String value) implements Msg {}

  /** Cast: set every field to {@code value}, so that the whole state changes. */
  public record PutAll(String value) implements Msg {}

  /** Call: reply with one field's value. */
  public record Get(String field) implements Msg, Call<String> {}

  private final int fieldCount;
  private final List<Action<State>> reportApplied;

  WideServer(int fieldCount, Progress progress) {
    this.fieldCount = fieldCount;
    this.reportApplied = List.of(committed -> progress.add(1));
  }

  /** The name of field {@code i}. */
  static String field(int i) {
    return String.format("field%04d", i);
  }

  @Override
  public InitResult<State> init(@Nullable Object arg) {
    Map<String, String> fields = new HashMap<>();
    for (int i = 0; i < fieldCount; i++) {
      fields.put(field(i), "value of field " + i);
    }
    return InitResult.ok(new State(fields));
  }

  @Override
  public Result<State> handleCast(Msg message, State state) {
    if (message instanceof Put p) {
      // A new immutable map: the same keys in the same order, one value replaced.
      ImmutableMap.Builder<String, String> fields =
          ImmutableMap.builderWithExpectedSize(state.fields().size() + 1);
      state.fields().forEach((k, v) -> fields.put(k, k.equals(p.field()) ? p.value() : v));
      if (!state.fields().containsKey(p.field())) {
        fields.put(p.field(), p.value());
      }
      return Result.noReply(new State(fields.build()), reportApplied);
    }
    if (message instanceof PutAll p) {
      ImmutableMap.Builder<String, String> fields =
          ImmutableMap.builderWithExpectedSize(state.fields().size());
      state.fields().forEach((k, v) -> fields.put(k, p.value()));
      return Result.noReply(new State(fields.build()), reportApplied);
    }
    throw new IllegalArgumentException("not a cast: " + message);
  }

  @Override
  public Result<State> handleCall(Msg request, From from, State state) {
    if (request instanceof Get g) {
      return Result.reply(g, state.fields().get(g.field()), state);
    }
    throw new IllegalArgumentException("not a call: " + request);
  }
}
