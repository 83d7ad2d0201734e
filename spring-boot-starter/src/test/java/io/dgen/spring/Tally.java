package io.dgen.spring;

import io.dgen.Call;
import io.dgen.DGenServer;
import io.dgen.From;
import io.dgen.InitResult;
import io.dgen.Result;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * A test behaviour that records every id it applies, in order, so a test can tell a lost message
 * (an id missing) from one applied twice (an id repeated). One id can be made a gate: its callback
 * waits for the test to open it, holding its batch in flight.
 */
public class Tally implements DGenServer<Tally.State, Tally.Msg> {

  /** The ids applied, in the order they were applied. */
  public record State(List<Long> applied) {}

  /** What a tally understands. */
  public sealed interface Msg permits Add, Summarize, Identify {}

  /** Applies an id (a cast). */
  public record Add(long id) implements Msg {}

  /** Replies a {@link Summary} (a call). */
  public record Summarize() implements Msg, Call<Summary> {}

  /** Replies the identity hash of the behaviour instance that handles it (a call). */
  public record Identify() implements Msg, Call<Long> {}

  /**
   * What a tally has applied.
   *
   * @param applied how many adds it applied
   * @param distinct how many distinct ids among them
   * @param lowest the lowest id, or -1
   * @param highest the highest id, or -1
   */
  public record Summary(long applied, long distinct, long lowest, long highest) {}

  /** A gate on one id; {@link #NONE} lets every id through. */
  public static final class Gate {
    /** No gate. */
    public static final Gate NONE = new Gate(-1);

    final long id;

    /** Counted down when the gated id's callback starts waiting. */
    public final CountDownLatch entered = new CountDownLatch(1);

    /** Counted down by the test to let the gated callback go on. */
    public final CountDownLatch release = new CountDownLatch(1);

    /**
     * A gate on {@code id}.
     *
     * @param id the id whose callback waits
     */
    public Gate(long id) {
      this.id = id;
    }
  }

  /** The gate tests set; a behaviour reads it at each callback. */
  public static volatile Gate gate = Gate.NONE;

  @Override
  public InitResult<State> init(@Nullable Object arg) {
    return InitResult.ok(new State(List.of()));
  }

  @Override
  public Result<State> handleCast(Msg message, State state) throws Exception {
    long id = ((Add) message).id();
    Gate g = gate;
    if (g.id == id) {
      g.entered.countDown();
      // Bounded, so that a failed test cannot hang a worker thread for ever.
      g.release.await(30, TimeUnit.SECONDS);
    }
    List<Long> applied = new ArrayList<>(state.applied());
    applied.add(id);
    return Result.noReply(new State(applied));
  }

  @Override
  public Result<State> handleCall(Msg request, From from, State state) {
    if (request instanceof Identify identify) {
      return Result.reply(identify, (long) System.identityHashCode(this), state);
    }
    Summarize query = (Summarize) request; // the only other call
    return Result.reply(query, summarize(state.applied()), state);
  }

  static Summary summarize(List<Long> applied) {
    Set<Long> distinct = new HashSet<>(applied);
    return new Summary(
        applied.size(),
        distinct.size(),
        applied.stream().mapToLong(Long::longValue).min().orElse(-1),
        applied.stream().mapToLong(Long::longValue).max().orElse(-1));
  }
}
