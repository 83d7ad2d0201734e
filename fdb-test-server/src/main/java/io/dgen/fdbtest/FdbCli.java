package io.dgen.fdbtest;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Predicate;

/**
 * Runs {@code fdbcli --exec} against one cluster file, once or until its answer satisfies a test.
 * Owns nothing but the short-lived {@code fdbcli} processes it starts. Thread-safe.
 */
final class FdbCli {

  private static final Duration POLL = Duration.ofMillis(200);

  private final Path fdbcli;
  private final Path clusterFile;

  FdbCli(Path fdbcli, Path clusterFile) {
    this.fdbcli = fdbcli;
    this.clusterFile = clusterFile;
  }

  /**
   * Runs {@code command} once and returns what fdbcli printed (output and errors).
   *
   * @param command what {@code --exec} runs, e.g. {@code "status json"}
   * @param timeout fdbcli's own {@code --timeout} for the database's answers, whole seconds
   */
  String run(String command, Duration timeout) {
    try {
      Process cli =
          new ProcessBuilder(
                  fdbcli.toString(),
                  "-C",
                  clusterFile.toString(),
                  "--exec",
                  command,
                  "--timeout",
                  Long.toString(Math.max(1, timeout.toSeconds())))
              .redirectErrorStream(true)
              .start();
      cli.getOutputStream().close();
      String out;
      try (InputStream in = cli.getInputStream()) {
        out = new String(in.readAllBytes(), StandardCharsets.UTF_8);
      }
      if (!cli.waitFor(timeout.toSeconds() + 20, TimeUnit.SECONDS)) {
        cli.destroyForcibly();
      }
      return out;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while running fdbcli", e);
    }
  }

  /**
   * Runs {@code command} every 200 ms until its answer satisfies {@code done}.
   *
   * @param alive checked before each try; false fails at once with {@code whyNotAlive}
   * @return the satisfying answer
   * @throws IllegalStateException at {@code within}, with the last answer
   */
  String await(
      String command,
      Predicate<String> done,
      Duration within,
      BooleanSupplier alive,
      java.util.function.Supplier<String> whyNotAlive) {
    long deadline = System.nanoTime() + within.toNanos();
    while (true) {
      if (!alive.getAsBoolean()) {
        throw new IllegalStateException(whyNotAlive.get());
      }
      String last = run(command, Duration.ofSeconds(10));
      if (done.test(last)) {
        return last;
      }
      pause(
          deadline,
          "fdbcli --exec \"" + command + "\" did not succeed; last answer: " + last.trim());
    }
  }

  /** Sleeps one poll interval, or fails with {@code timeoutMessage} once past {@code deadline}. */
  static void pause(long deadline, String timeoutMessage) {
    if (System.nanoTime() > deadline) {
      throw new IllegalStateException(timeoutMessage);
    }
    try {
      Thread.sleep(POLL.toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while waiting for FoundationDB", e);
    }
  }
}
