package io.dgen.examples;

import io.dgen.Call;
import io.dgen.DGen;
import io.dgen.DGenServer;
import io.dgen.DeadLetter;
import io.dgen.From;
import io.dgen.InitResult;
import io.dgen.Result;
import io.dgen.ServerRef;
import io.dgen.StartOptions;
import io.dgen.Tenant;
import io.dgen.admin.ServerControl;
import io.dgen.backend.Backend;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A poison message and the dead letters. With {@code deadLetterThreshold(3)}, a message whose
 * callback fails three times in a row leaves the queue for the server's dead letters, and the
 * messages behind it go on. Once the cause is fixed, the dead letter is put back into the queue and
 * processed.
 */
public final class DeadLetterExample {

  private static final String RUNTIME_LOG_LEVEL = "org.slf4j.simpleLogger.log.io.dgen";

  private DeadLetterExample() {}

  /** Imports delimited lines; until {@link #fix()} it cannot parse a line with a quote in it. */
  public static final class Importer implements DGenServer<Importer.State, Importer.Msg> {

    /** The imported lines, in order. */
    public record State(List<String> imported) {}

    /** What the importer understands. */
    public sealed interface Msg permits Import, Imported {}

    /** Imports one line (a cast). */
    public record Import(String line) implements Msg {}

    /** Answers the imported lines (a call). */
    public record Imported() implements Msg, Call<List<String>> {}

    private volatile boolean quotesSupported;
    private final AtomicInteger attempts = new AtomicInteger();
    private final CountDownLatch deadLettered = new CountDownLatch(1);

    @Override
    public InitResult<State> init(Object arg) {
      return InitResult.ok(new State(List.of()));
    }

    @Override
    public Result<State> handleCast(Msg message, State state) {
      if (message instanceof Import) {
        String line = ((Import) message).line();
        if (line.contains("\"") && !quotesSupported) {
          // Printing from a callback is a side effect; here it shows each attempt.
          System.out.println(
              "  attempt " + attempts.incrementAndGet() + " at " + message + ": fails");
          throw new IllegalArgumentException("unbalanced quote in " + line);
        }
        List<String> imported = new ArrayList<>(state.imported());
        imported.add(line);
        return Result.noReply(new State(imported));
      }
      throw new IllegalArgumentException("unexpected cast: " + message);
    }

    @Override
    public Result<State> handleCall(Msg request, From from, State state) {
      if (request instanceof Imported imported) {
        return Result.reply(imported, state.imported(), state);
      }
      throw new IllegalArgumentException("unexpected call: " + request);
    }

    @Override
    public void handleDeadLetter(Msg message, int attempts) {
      System.out.println("handleDeadLetter: " + message + " after " + attempts + " attempts");
      deadLettered.countDown();
    }

    /** Fixes the cause: from now on quotes parse. */
    void fix() {
      quotesSupported = true;
    }

    boolean awaitDeadLetter() throws InterruptedException {
      return deadLettered.await(10, TimeUnit.SECONDS);
    }
  }

  /**
   * Runs the example on the memory backend (it prints the backend it runs on), on FoundationDB when
   * a cluster file is given ({@code --cluster-file PATH} or {@code FDB_CLUSTER_FILE}), or on the
   * embedded RocksDB backend in {@code --data-dir DIR}. It resets its servers in tenant {@code
   * examples/dead-letters}: on a cluster file or a data directory it runs only with {@code --yes}.
   *
   * @param args optional {@code --cluster-file PATH} or {@code --data-dir DIR}, with {@code --yes};
   *     or {@code --memory}
   * @throws Exception if the demo fails
   */
  public static void main(String[] args) throws Exception {
    // The runtime logs every failed attempt at WARN with its stack trace; for a readable demo, show
    // only its ERROR when the message is dead-lettered. Override with -D on the command line.
    if (System.getProperty(RUNTIME_LOG_LEVEL) == null) {
      System.setProperty(RUNTIME_LOG_LEVEL, "error");
    }
    try (Backend backend = Backends.openOverwriting(args, "examples/dead-letters");
        DGen dgen =
            DGen.builder(backend)
                .retryBackoff(Duration.ofMillis(10), Duration.ofMillis(100))
                .build()) {
      Tenant tenant = dgen.tenant("examples", "dead-letters");
      Importer importer = new Importer();
      ServerRef<Importer.Msg> ref =
          dgen.start(
              importer,
              null,
              StartOptions.builder(tenant).reset(true).deadLetterThreshold(3).build());
      ServerControl.of(ref).purgeDeadLetters();

      List<Importer.Import> lines =
          List.of(
              new Importer.Import("1|apples"),
              new Importer.Import("2|\"pears"),
              new Importer.Import("3|plums"));
      System.out.println("cast: " + lines);
      ref.castAll(lines);
      if (!importer.awaitDeadLetter()) {
        throw new IllegalStateException("no dead letter");
      }
      System.out.println(
          "imported: "
              + ref.call(new Importer.Imported())
              + "   (the queue went on past the poison message)");

      List<DeadLetter<Importer.Msg>> dead = ServerControl.of(ref).deadLetters();
      System.out.println("dead letters: " + dead.size());
      for (DeadLetter<Importer.Msg> d : dead) {
        System.out.println("  id         " + d.id());
        System.out.println("  message    " + d.message() + " (" + d.type() + ")");
        System.out.println("  attempts   " + d.attempts());
        System.out.println("  last error " + d.lastError());
      }

      importer.fix();
      boolean requeued = ServerControl.of(ref).requeueDeadLetter(dead.get(0).id(), true);
      System.out.println("fixed the parser; requeued at the head: " + requeued);
      System.out.println(
          "imported: "
              + ref.call(new Importer.Imported())
              + "   dead letters: "
              + ServerControl.of(ref).deadLetters().size());
    }
  }
}
