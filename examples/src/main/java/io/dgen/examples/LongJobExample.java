package io.dgen.examples;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.Call;
import io.dgen.DGen;
import io.dgen.DGenServer;
import io.dgen.DbContext;
import io.dgen.Event;
import io.dgen.From;
import io.dgen.InitResult;
import io.dgen.Result;
import io.dgen.ServerRef;
import io.dgen.StartOptions;
import io.dgen.Tenant;
import io.dgen.TxContext;
import io.dgen.admin.ServerControl;
import io.dgen.backend.Backend;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * A long-running job through lock mode. The {@code Start} call returns {@link Result#lock}: the
 * state is committed with a lock, and {@link DGenServer#handleLocked} does the slow work outside
 * any transaction, where it may take as long as it needs and have side effects. Its reply answers
 * the caller. While the lock is held, priority calls still answer and queued messages wait.
 */
public final class LongJobExample {

  private LongJobExample() {}

  /** A worker that runs one job at a time and keeps a log in its state. */
  public static final class Job implements DGenServer<Job.State, Job.Msg> {

    /** The worker's state. */
    public record State(String status, List<String> log) {}

    /** What the worker understands. */
    public sealed interface Msg permits Start, Status, Note, Log {}

    /** Runs job {@code name} in {@code steps} steps (a call, answered when the job is done). */
    public record Start(String name, int steps, long stepMillis) implements Msg, Call<String> {}

    /** Answers the status and progress (meant for {@code priorityCall}). */
    public record Status() implements Msg, Call<String> {}

    /** Appends a note to the log (a cast). */
    public record Note(String text) implements Msg {}

    /** Answers the log (a call). */
    public record Log() implements Msg, Call<List<String>> {}

    private final CountDownLatch working = new CountDownLatch(1);

    @Override
    public InitResult<State> init(Object arg) {
      return InitResult.ok(new State("idle", List.of()));
    }

    @Override
    public Result<State> handleCallTx(TxContext tx, Msg request, From from, State state) {
      if (request instanceof Start start) {
        // Commit "running" with the lock; the work itself continues in handleLocked.
        return Result.lock(
            new State("running " + start.name(), append(state.log(), "started " + start.name())));
      }
      if (request instanceof Status status) {
        byte[] progress = tx.transaction().get(progressKey(tx.tenant(), tx.tuid()));
        if (progress == null) {
          return Result.reply(status, state.status(), state);
        }
        Tuple p = Tuple.fromBytes(progress);
        return Result.reply(
            status,
            state.status() + ", " + p.getLong(0) + " of " + p.getLong(1) + " steps done",
            state);
      }
      if (request instanceof Log log) {
        return Result.reply(log, state.log(), state);
      }
      throw new IllegalArgumentException("unexpected call: " + request);
    }

    @Override
    public Result<State> handleCast(Msg message, State state) {
      if (message instanceof Note) {
        return Result.noReply(
            new State(state.status(), append(state.log(), "note: " + ((Note) message).text())));
      }
      throw new IllegalArgumentException("unexpected cast: " + message);
    }

    @Override
    public Result<State> handleLocked(DbContext db, Event<Msg> event, State state)
        throws Exception {
      Start start = (Start) event.message();
      for (int step = 0; step <= start.steps(); step++) {
        if (step > 0) {
          Thread.sleep(start.stepMillis()); // stands for real work: a download, a report, ...
        }
        // Progress goes to a key of our own, so that a Status query can read it meanwhile.
        // Rewriting it when handleLocked runs again (after a crash) is harmless.
        writeProgress(db, step, start.steps());
        working.countDown();
      }
      return Result.reply(
          start,
          start.name() + ": " + start.steps() + " steps done",
          new State("idle", append(state.log(), "finished " + start.name())));
    }

    private static void writeProgress(DbContext db, int step, int steps) {
      byte[] key = progressKey(db.tenant(), db.tuid());
      byte[] value = Tuple.from(step, steps).pack();
      db.backend()
          .run(
              tx -> {
                tx.set(key, value);
                return null;
              });
    }

    /** Waits until {@code handleLocked} has begun. */
    boolean awaitWorking() throws InterruptedException {
      return working.await(5, TimeUnit.SECONDS);
    }

    /** A key of our own next to the server's keys: {@code ("job-progress", tuid..)}. */
    private static byte[] progressKey(Tenant tenant, Tuple tuid) {
      return tenant.subspace().pack(Tuple.from("job-progress").addAll(tuid));
    }

    private static List<String> append(List<String> log, String entry) {
      List<String> next = new ArrayList<>(log);
      next.add(entry);
      return next;
    }
  }

  /**
   * Runs the example on the memory backend (it prints the backend it runs on), on FoundationDB when
   * a cluster file is given ({@code --cluster-file PATH} or {@code FDB_CLUSTER_FILE}), or on the
   * embedded RocksDB backend in {@code --data-dir DIR}. It resets its servers in tenant {@code
   * examples/long-job}: on a cluster file or a data directory it runs only with {@code --yes}.
   *
   * @param args optional {@code --cluster-file PATH} or {@code --data-dir DIR}, with {@code --yes};
   *     or {@code --memory}
   * @throws Exception if the demo fails
   */
  public static void main(String[] args) throws Exception {
    try (Backend backend = Backends.openOverwriting(args, "examples/long-job");
        DGen dgen = DGen.builder(backend).build()) {
      Tenant tenant = dgen.tenant("examples", "long-job");
      Job job = new Job();
      ServerRef<Job.Msg> ref =
          dgen.start(job, null, StartOptions.builder(tenant).reset(true).build());

      long t0 = System.nanoTime();
      CompletableFuture<String> reply =
          ref.callAsync(new Job.Start("report", 4, 100), Duration.ofSeconds(10));
      if (!job.awaitWorking()) {
        throw new IllegalStateException("the job did not start");
      }
      System.out.println("start call sent: the job holds the lock, works outside transactions");
      line("status while locked (priority call):", ref.priorityCall(new Job.Status()));
      ref.cast(new Job.Note("asked for the numbers while the report ran"));
      line(
          "note cast while locked; queue length:",
          ServerControl.of(ref).queueLength() + " (waits for the lock)");

      String summary = reply.get(10, TimeUnit.SECONDS);
      long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
      line("start call answered after " + millis + " ms:", summary);

      // Queued behind the note, so it answers once the note was applied after the release.
      List<String> log = ref.call(new Job.Log());
      line("status after the release:", ref.priorityCall(new Job.Status()));
      System.out.println("log, in the order the state recorded it:");
      for (int i = 0; i < log.size(); i++) {
        System.out.println("  " + (i + 1) + ". " + log.get(i));
      }
    }
  }

  private static void line(String label, Object value) {
    System.out.printf("%-38s %s%n", label, value);
  }
}
