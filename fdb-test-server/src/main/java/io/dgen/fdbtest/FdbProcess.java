package io.dgen.fdbtest;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * One {@code fdbserver} process, run under a small shell watchdog that kills it when this JVM dies.
 *
 * <p>The watchdog reads a pipe from this JVM and kills the server when the pipe reaches its end:
 * the kernel closes the JVM's end when the JVM dies, however it dies (a {@code SIGKILL} runs no
 * shutdown hook), so the server outlives it by a few milliseconds at most. Child processes the JVM
 * starts do not inherit that pipe (the JDK closes every other descriptor in a child), so they
 * cannot keep the server alive either. The watchdog needs {@code /bin/sh} (Linux, macOS).
 *
 * <p>Owns the two processes and the server's output file; never touches the server's data. Not
 * thread-safe: its owner ({@link LocalFdbServer}, {@link LocalFdbCluster}) serializes calls.
 */
final class FdbProcess {

  private static final Duration READY = Duration.ofSeconds(60);
  private static final Duration STOP = Duration.ofSeconds(15);

  /**
   * Runs {@code fdbserver} in the background, writes its process id to {@code $1}, then waits for
   * the end of its standard input (this JVM's pipe) and stops the server.
   */
  private static final String WATCHDOG =
      "pidfile=$1; shift; \"$@\" & server=$!; echo $server > \"$pidfile\";"
          + " cat > /dev/null; kill $server 2>/dev/null; wait $server";

  private final Process watchdog;
  private final ProcessHandle server;
  private final Path output;

  private FdbProcess(Process watchdog, ProcessHandle server, Path output) {
    this.watchdog = watchdog;
    this.server = server;
    this.output = output;
  }

  /**
   * Starts {@code fdbserver} with {@code arguments} under a watchdog and waits for its process id.
   *
   * @param fdbserver the executable
   * @param arguments its arguments
   * @param directory where the process id file and the output ({@code fdbserver.out}, appended) go;
   *     created if needed
   * @throws IllegalStateException if the server exited at once or did not start within a minute
   */
  static FdbProcess start(Path fdbserver, List<String> arguments, Path directory) {
    try {
      Files.createDirectories(directory);
      Path pidFile = directory.resolve("fdbserver.pid");
      Files.deleteIfExists(pidFile);
      Path output = directory.resolve("fdbserver.out");
      List<String> command = new ArrayList<>();
      command.addAll(List.of("/bin/sh", "-c", WATCHDOG, "fdb-watchdog", pidFile.toString()));
      command.add(fdbserver.toString());
      command.addAll(arguments);
      File out = output.toFile();
      Process watchdog =
          new ProcessBuilder(command)
              .redirectErrorStream(true)
              .redirectOutput(ProcessBuilder.Redirect.appendTo(out))
              .start();
      try {
        return new FdbProcess(watchdog, awaitServerPid(pidFile, output), output);
      } catch (RuntimeException e) {
        watchdog.getOutputStream().close();
        watchdog.destroyForcibly();
        throw e;
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The server's process. */
  ProcessHandle server() {
    return server;
  }

  /** Whether the server process is running. */
  boolean isAlive() {
    return server.isAlive();
  }

  /**
   * Kills the server with {@code SIGKILL} (no shutdown of any kind, as a crash or an OOM killer
   * would), waits until it is gone, and ends the watchdog.
   */
  void kill() {
    server.destroyForcibly();
    waitFor(server);
    endWatchdog();
  }

  /** Stops the server: its watchdog sends {@code SIGTERM}; forced after 15 s. Idempotent. */
  void stop() {
    endWatchdog();
    if (server.isAlive() && !waitFor(server)) {
      server.destroyForcibly();
      waitFor(server);
    }
  }

  /** The last 2,000 characters of the server's output. */
  String outputTail() {
    return tail(output);
  }

  private void endWatchdog() {
    try {
      watchdog.getOutputStream().close();
    } catch (IOException ignored) {
      // the watchdog is gone already
    }
    if (!waitFor(watchdog.toHandle())) {
      watchdog.destroyForcibly();
    }
  }

  private static ProcessHandle awaitServerPid(Path pidFile, Path output) throws IOException {
    long deadline = System.nanoTime() + READY.toNanos();
    while (true) {
      if (Files.exists(pidFile)) {
        String pid = Files.readString(pidFile).trim();
        if (!pid.isEmpty()) {
          Optional<ProcessHandle> handle = ProcessHandle.of(Long.parseLong(pid));
          if (handle.isPresent()) {
            return handle.get();
          }
          throw new IllegalStateException("fdbserver exited at once: " + tail(output));
        }
      }
      FdbCli.pause(deadline, "fdbserver did not start");
    }
  }

  static boolean waitFor(ProcessHandle process) {
    try {
      process.onExit().get(STOP.toMillis(), TimeUnit.MILLISECONDS);
      return true;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    } catch (ExecutionException | TimeoutException e) {
      return false;
    }
  }

  private static String tail(Path file) {
    try {
      String out = Files.readString(file);
      return out.isBlank() ? "(no output)" : out.substring(Math.max(0, out.length() - 2_000));
    } catch (IOException e) {
      return "(no output: " + e + ")";
    }
  }
}
