package io.dgen.benchmarks;

import io.dgen.Action;
import io.dgen.Call;
import io.dgen.DGenServer;
import io.dgen.From;
import io.dgen.InitResult;
import io.dgen.Result;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * The scale-out rows' hosted server: the credits it applied (count and sum, for the exactly-once
 * check) and the longest time a credit waited with none applied, which across a failover is the gap
 * the killed holder left. The wall clock is the one every JVM of one machine shares.
 */
public final class LedgerServer implements DGenServer<LedgerServer.State, LedgerServer.Msg> {

  /** The kind the scale-out rows host. */
  public static final String KIND = "ledger";

  /**
   * The state.
   *
   * @param total the credits' amounts added up
   * @param count credits applied
   * @param lastBy the member id of the runtime that applied the last credit
   * @param movedAtMillis when a credit was last applied by another runtime than the one before
   */
  public record State(long total, long count, String lastBy, long movedAtMillis) {}

  /** The messages. */
  public sealed interface Msg permits Credit, Read {}

  /** Cast: add {@code amount}. */
  public record Credit(long amount) implements Msg {}

  /** Call: reply with the state. */
  public record Read() implements Msg, Call<State> {}

  private final List<Action<State>> reportApplied;
  private final String by;

  /**
   * @param progress told of every credit once its batch committed
   * @param by the member id of the runtime that runs it
   */
  LedgerServer(Progress progress, String by) {
    this.reportApplied = List.of(committed -> progress.add(1));
    this.by = by;
  }

  @Override
  public InitResult<State> init(@Nullable Object arg) {
    return InitResult.ok(new State(0, 0, "", 0));
  }

  @Override
  public Result<State> handleCast(Msg message, State s) {
    if (message instanceof Credit c) {
      boolean moved = !s.lastBy().isEmpty() && !s.lastBy().equals(by);
      return Result.noReply(
          new State(
              s.total() + c.amount(),
              s.count() + 1,
              by,
              moved ? System.currentTimeMillis() : s.movedAtMillis()),
          reportApplied);
    }
    throw new IllegalArgumentException("not a cast: " + message);
  }

  @Override
  public Result<State> handleCall(Msg request, From from, State state) {
    if (request instanceof Read r) {
      return Result.reply(r, state, state);
    }
    throw new IllegalArgumentException("not a call: " + request);
  }
}
