package io.dgen.chaos;

import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * The chaos client JVMs ({@link ChaosJvm}), by name: starts them, kills one with {@code SIGKILL}
 * and starts its next generation, tells them to stop their workload, and stops them. Each
 * generation's output goes to {@code <name>-g<generation>.out} in the run directory. Not
 * thread-safe: the fault schedule and the test take turns.
 */
final class Clients implements AutoCloseable {

  private static final Duration READY = Duration.ofMinutes(2);

  private final Path directory;
  private final Path clusterFile;
  private final String tenantPath;
  private final long seed;
  private final long safetyDeadline;
  private final Map<String, Process> running = new LinkedHashMap<>();
  private final Map<String, Integer> generations = new LinkedHashMap<>();
  private final List<Process> all = new ArrayList<>();
  private final List<Crash> crashes = new ArrayList<>();

  /**
   * @param directory the run directory (journals, outputs)
   * @param clusterFile the cluster's file
   * @param tenantPath the tenant's path, {@code /}-separated
   * @param seed the run's seed; each client and generation derives its own
   * @param safetyDeadline epoch millis after which clients stop their workload on their own
   */
  Clients(Path directory, Path clusterFile, String tenantPath, long seed, long safetyDeadline) {
    this.directory = directory;
    this.clusterFile = clusterFile;
    this.tenantPath = tenantPath;
    this.seed = seed;
    this.safetyDeadline = safetyDeadline;
  }

  /**
   * Starts the first or next generation of each client named, all at once, and waits until each is
   * ready.
   */
  void start(String... names) {
    Map<String, Process> started = new LinkedHashMap<>();
    for (String name : names) {
      started.put(name, launch(name));
    }
    started.forEach(
        (name, p) -> {
          Path out = currentOutput(name);
          await(name + " generation " + generation(name) + " ready")
              .atMost(READY)
              .pollInterval(Duration.ofMillis(100))
              .failFast(name + " exited before it was ready: " + tail(out), () -> !p.isAlive())
              .until(() -> Files.readString(out).contains(ChaosJvm.READY));
        });
  }

  private Process launch(String name) {
    if (running.containsKey(name)) {
      throw new IllegalStateException(name + " is running");
    }
    int generation = generations.merge(name, 1, Integer::sum) - 1;
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    command.add("-Xmx384m");
    command.add("-XX:+UseSerialGC");
    command.add("-XX:TieredStopAtLevel=1");
    // a crash's report next to the client's output
    command.add("-XX:ErrorFile=" + errorFile(name, generation));
    command.add("-Dorg.slf4j.simpleLogger.defaultLogLevel=warn");
    command.add("-Dorg.slf4j.simpleLogger.showDateTime=true");
    command.add("-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS");
    for (String property :
        List.of(ChaosTest.CLIENT_LIBRARY_PROPERTY, ChaosServers.HOSTED_PROPERTY)) {
      Optional.ofNullable(System.getProperty(property))
          .ifPresent(value -> command.add("-D" + property + "=" + value));
    }
    command.add("-cp");
    command.add(System.getProperty("java.class.path"));
    command.add(ChaosJvm.class.getName());
    command.add(clusterFile.toString());
    command.add(tenantPath);
    command.add(name);
    command.add(Integer.toString(generation));
    command.add(Long.toString(safetyDeadline));
    command.add(directory.toString());
    command.add(Long.toString(seed * 1_000_003 + name.hashCode() * 101L + generation));
    Process p;
    try {
      Path traces = Files.createDirectories(directory.resolve(name + "-g" + generation + "-fdb"));
      ProcessBuilder builder =
          new ProcessBuilder(command)
              .redirectErrorStream(true)
              .redirectOutput(output(name, generation).toFile());
      // the FoundationDB client's own trace files, read by libfdb_c when the network starts
      builder.environment().put("FDB_NETWORK_OPTION_TRACE_ENABLE", traces.toString());
      p = builder.start();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    running.put(name, p);
    all.add(p);
    return p;
  }

  /** Kills client {@code name} with {@code SIGKILL} and waits until it is gone. */
  void kill(String name) throws InterruptedException {
    Process p = running.remove(name);
    if (p == null) {
      throw new IllegalStateException(name + " is not running");
    }
    p.destroyForcibly();
    if (!p.waitFor(30, TimeUnit.SECONDS)) {
      throw new IllegalStateException(name + " survived SIGKILL for 30 s");
    }
  }

  /** The current generation of client {@code name} (0 for the first). */
  int generation(String name) {
    return generations.getOrDefault(name, 0) - 1;
  }

  /** Every running client's name. */
  List<String> names() {
    return List.copyOf(running.keySet());
  }

  /** The journal of a client's generation. */
  Path journal(String name, int generation) {
    return directory.resolve(ChaosJvm.journalName(name, generation));
  }

  /**
   * Tells every running client to end its workload, and waits until each says it is done. A client
   * that crashes meanwhile is recorded ({@link #crashes}) and its next generation started and told
   * to stop too, so that the keyed requests it left unfinished are retried.
   */
  void stopWorkloads(Duration within) {
    long deadline = System.nanoTime() + within.toNanos();
    Set<String> told = new HashSet<>();
    Set<String> done = new HashSet<>();
    while (!done.containsAll(running.keySet())) {
      for (String name : running.keySet()) {
        String generation = name + generation(name);
        if (told.add(generation)) {
          tellToStop(name, running.get(name));
        }
      }
      for (String name : List.copyOf(running.keySet())) {
        Process p = running.get(name);
        Path out = currentOutput(name);
        long left = Math.max(0, deadline - System.nanoTime());
        await(name + generation(name) + "'s workload done")
            .atMost(Duration.ofNanos(left))
            .pollInterval(Duration.ofMillis(200))
            .until(() -> !p.isAlive() || Files.readString(out).contains(ChaosJvm.DONE));
        if (p.isAlive()) {
          done.add(name);
        }
      }
      crashed(true); // whoever died meanwhile: its next generation, told to stop next time round
    }
  }

  private void tellToStop(String name, Process p) {
    try {
      OutputStream in = p.getOutputStream();
      in.write((ChaosJvm.STOP_WORKLOAD + "\n").getBytes(StandardCharsets.UTF_8));
      in.flush();
    } catch (IOException e) {
      // it died: the next round finds the crash
    }
  }

  /**
   * A client that died without being killed.
   *
   * @param description who, when, its exit status, the last line of its output
   * @param problematicFrame the JVM's crash report's "problematic frame" (e.g. {@code C
   *     [libfdb_c.so+0x106395c]}), or empty if it wrote none
   */
  record Crash(String description, String problematicFrame) {
    /**
     * Whether it crashed inside FoundationDB's native client library: a defect of the library, not
     * of DGen or the test (see the failure model's known issues).
     */
    boolean inFdbClient() {
      return problematicFrame.contains("libfdb_c");
    }

    @Override
    public String toString() {
      return description + (problematicFrame.isEmpty() ? "" : "; crashed in " + problematicFrame);
    }
  }

  /**
   * Finds every client that died without being killed (a crash), records it for {@link #crashes}
   * and, with {@code restart}, starts its next generation, so that the workload goes on and the
   * crashed client's unfinished keyed requests are retried.
   *
   * @return the crashes found now
   */
  List<Crash> crashed(boolean restart) {
    List<Crash> found = new ArrayList<>();
    for (String name : List.copyOf(running.keySet())) {
      Process p = running.get(name);
      if (!p.isAlive()) {
        int generation = generation(name);
        String description =
            name
                + generation
                + " exited on its own with status "
                + p.exitValue()
                + " at "
                + java.time.Instant.now()
                + "; output "
                + currentOutput(name)
                + " ends: "
                + tail(currentOutput(name)).lines().reduce((a, b) -> b).orElse("");
        found.add(new Crash(description, problematicFrame(errorFile(name, generation))));
        running.remove(name);
        if (restart) {
          start(name);
        }
      }
    }
    crashes.addAll(found);
    return found;
  }

  /** Every crash {@link #crashed} found so far. */
  List<Crash> crashes() {
    return List.copyOf(crashes);
  }

  /** The frame a JVM crash report names after {@code # Problematic frame:}, or empty. */
  static String problematicFrame(Path errorFile) {
    try {
      List<String> lines = Files.readAllLines(errorFile, StandardCharsets.ISO_8859_1);
      int at = lines.indexOf("# Problematic frame:");
      return at < 0 || at + 1 >= lines.size() ? "" : lines.get(at + 1).replaceFirst("^#\\s*", "");
    } catch (IOException e) {
      return ""; // no crash report: not a JVM crash
    }
  }

  private Path errorFile(String name, int generation) {
    return directory.resolve(name + "-g" + generation + "-hs_err.log");
  }

  /** The last lines of a client's current output, for diagnostics. */
  String tail(String name) {
    return tail(currentOutput(name));
  }

  /** Ends every client: closes its input (it exits), kills any that does not exit in 30 s. */
  @Override
  public void close() throws InterruptedException {
    for (Process p : all) {
      try {
        p.getOutputStream().close();
      } catch (IOException ignored) {
        // gone already
      }
    }
    for (Process p : all) {
      if (!p.waitFor(30, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        p.waitFor(30, TimeUnit.SECONDS);
      }
    }
    running.clear();
  }

  private Path currentOutput(String name) {
    return output(name, generation(name));
  }

  private Path output(String name, int generation) {
    return directory.resolve(name + "-g" + generation + ".out");
  }

  private static String tail(Path out) {
    try {
      String s = Files.readString(out);
      return s.substring(Math.max(0, s.length() - 3_000));
    } catch (IOException e) {
      return "(no output: " + e + ")";
    }
  }
}
