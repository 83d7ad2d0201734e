package io.dgen.examples;

import io.dgen.Call;
import io.dgen.DGen;
import io.dgen.DGenServer;
import io.dgen.From;
import io.dgen.InitResult;
import io.dgen.Result;
import io.dgen.ServerRef;
import io.dgen.StartOptions;
import io.dgen.Tenant;
import io.dgen.TxContext;
import io.dgen.backend.Backend;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Durable timers: a reminder server that schedules reminders to itself atomically with its state
 * ({@code TxContext.castAfter}), cancels one ({@code TxContext.cancelTimer}), repeats one by
 * rescheduling it from its own callback, and gets the rest after the runtime restarted — timers are
 * stored in the database, not in memory. A {@code ServerRef.castAfter} from outside and a {@code
 * cancelTimer} through the ref complete the tour.
 */
public final class ReminderExample {

  private ReminderExample() {}

  /** Reminders by name: which are pending (with their timer ids) and which have gone off. */
  public static final class Reminders implements DGenServer<Reminders.State, Reminders.Msg> {

    /** Pending reminders (name to timer id) and the ones that went off, in order. */
    public record State(Map<String, String> pending, List<String> fired) {}

    /** What the server understands. */
    public sealed interface Msg permits Remind, Schedule, Cancel, Fired {}

    /** A reminder going off (a cast, sent by its timer); repeats {@code times - 1} more times. */
    public record Remind(String name, int times, long everyMillis) implements Msg {}

    /** Schedules a reminder in {@code inMillis} (a call; replies the timer id). */
    public record Schedule(String name, long inMillis, int times) implements Msg, Call<String> {}

    /** Cancels a pending reminder (a call; replies whether it was pending). */
    public record Cancel(String name) implements Msg, Call<Boolean> {}

    /** Replies the reminders that went off (a call). */
    public record Fired() implements Msg, Call<List<String>> {}

    @Override
    public InitResult<State> init(Object arg) {
      return InitResult.ok(new State(Map.of(), List.of()));
    }

    @Override
    public Result<State> handleCallTx(TxContext tx, Msg request, From from, State state) {
      Map<String, String> pending = new LinkedHashMap<>(state.pending());
      if (request instanceof Schedule s) {
        // Stored in this callback's transaction: the timer exists if and only if the state
        // change that records it commits.
        String id =
            tx.castAfter(
                new Remind(s.name(), s.times(), s.inMillis()), Duration.ofMillis(s.inMillis()));
        pending.put(s.name(), id);
        return Result.reply(s, id, new State(pending, state.fired()));
      }
      if (request instanceof Cancel c) {
        String id = pending.remove(c.name());
        boolean cancelled = id != null && tx.cancelTimer(id);
        return Result.reply(c, cancelled, new State(pending, state.fired()));
      }
      if (request instanceof Fired f) {
        return Result.reply(f, state.fired(), state);
      }
      throw new IllegalArgumentException("unexpected call: " + request);
    }

    @Override
    public Result<State> handleCastTx(TxContext tx, Msg message, State state) {
      if (!(message instanceof Remind r)) {
        throw new IllegalArgumentException("unexpected cast: " + message);
      }
      Map<String, String> pending = new LinkedHashMap<>(state.pending());
      pending.remove(r.name());
      List<String> fired = new ArrayList<>(state.fired());
      fired.add(r.name());
      if (r.times() > 1) { // a repeating reminder: the next one, atomically with this one's record
        Remind next = new Remind(r.name(), r.times() - 1, r.everyMillis());
        pending.put(r.name(), tx.castAfter(next, Duration.ofMillis(r.everyMillis())));
      }
      return Result.noReply(new State(pending, fired));
    }
  }

  /**
   * Runs the example on the memory backend (it prints the backend it runs on), on FoundationDB when
   * a cluster file is given ({@code --cluster-file PATH} or {@code FDB_CLUSTER_FILE}), or on the
   * embedded RocksDB backend in {@code --data-dir DIR}. It resets its servers in tenant {@code
   * examples/reminders}: on a cluster file or a data directory it runs only with {@code --yes}.
   *
   * @param args optional {@code --cluster-file PATH} or {@code --data-dir DIR}, with {@code --yes};
   *     or {@code --memory}
   * @throws Exception if the demo fails
   */
  public static void main(String[] args) throws Exception {
    try (Backend backend = Backends.openOverwriting(args, "examples/reminders")) {
      try (DGen dgen = DGen.builder(backend).build()) {
        Tenant tenant = dgen.tenant("examples", "reminders");
        ServerRef<Reminders.Msg> ref =
            dgen.start(new Reminders(), null, StartOptions.builder(tenant).reset(true).build());
        ref.call(new Reminders.Schedule("stretch", 300, 1));
        ref.call(new Reminders.Schedule("standup", 600_000, 1));
        ref.call(new Reminders.Schedule("water", 500, 3));
        System.out.println("scheduled: stretch in 300 ms, standup in 10 min, water in 500 ms x3");
        boolean cancelled = ref.call(new Reminders.Cancel("standup"));
        System.out.println("cancelled standup: " + cancelled);
        String lunch = ref.castAfter(new Reminders.Remind("lunch", 1, 0), Duration.ofHours(1));
        System.out.println("lunch in an hour, then cancelled: " + ref.cancelTimer(lunch));
        System.out.println("closing the runtime; the reminders are stored in the database");
      }
      // A new runtime (as after a restart): the timers were stored, so they still go off.
      try (DGen dgen = DGen.builder(backend).build()) {
        Tenant tenant = dgen.tenant("examples", "reminders");
        ServerRef<Reminders.Msg> ref =
            dgen.start(new Reminders(), null, StartOptions.builder(tenant).build());
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        List<String> fired = ref.call(new Reminders.Fired());
        while (fired.size() < 4 && System.nanoTime() < deadline) {
          Thread.sleep(50); // a demo polls; a server would react to the cast itself
          fired = ref.call(new Reminders.Fired());
        }
        System.out.println("restarted; went off: " + fired);
      }
    }
  }
}
