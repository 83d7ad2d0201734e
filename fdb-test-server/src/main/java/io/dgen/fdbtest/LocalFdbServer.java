package io.dgen.fdbtest;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import org.jspecify.annotations.Nullable;

/**
 * A throwaway one-process FoundationDB cluster on the loopback interface, started from a local
 * FoundationDB installation, for the FoundationDB tests and the benchmarks. Not part of the
 * product: deployments run FoundationDB's own packages and services.
 *
 * <pre>{@code
 * LocalFdbServer.Installation fdb = LocalFdbServer.findInstallation().orElseThrow();
 * fdb.useClientLibrary();                       // before the first FdbBackend is opened
 * try (LocalFdbServer server = LocalFdbServer.start(fdb, Path.of("target", "fdb"))) {
 *   try (FdbBackend backend = FdbBackend.open(server.clusterFile())) { ... }
 * }
 * }</pre>
 *
 * <h2>What {@link #start} does</h2>
 *
 * It makes a fresh run directory under the given parent (cluster file, {@code data/}, {@code
 * logs/}, the server's output), picks a free loopback port, starts {@code fdbserver}, runs {@code
 * fdbcli --exec "configure new single memory"} and waits until {@code status minimal} says {@code
 * The database is available.} (a few seconds). Data is never reused: every start gets a new run
 * directory, and run directories left by JVMs that are gone are removed first.
 *
 * <h2>Stopping, and no orphans</h2>
 *
 * {@link #close} stops the server and deletes its data (the logs stay until a later start removes
 * the run directory); a shutdown hook closes it when the JVM exits. A JVM killed with {@code
 * SIGKILL} runs no hook, so {@code fdbserver} runs under a small shell watchdog that reads a pipe
 * from this JVM and kills the server when the pipe reaches its end: the kernel closes the JVM's end
 * when the JVM dies, however it dies, so the server outlives it by a few milliseconds at most.
 * Child processes the JVM starts do not inherit that pipe (the JDK closes every other descriptor in
 * a child), so they cannot keep the server alive either. The watchdog needs {@code /bin/sh} (Linux,
 * macOS).
 *
 * <h2>Threading</h2>
 *
 * {@link #start} may be called from any thread; {@link #close} is idempotent and thread-safe.
 */
public final class LocalFdbServer implements AutoCloseable {

  /** The environment variable naming a FoundationDB installation: {@value}. */
  public static final String HOME_ENV = "DGEN_FDB_HOME";

  /** The system property naming a FoundationDB installation, before {@link #HOME_ENV}: {@value}. */
  public static final String HOME_PROPERTY = "dgen.fdb.home";

  /**
   * The system property through which fdb-java loads {@code libfdb_c} from an absolute path instead
   * of the system library path: {@value}. It must be set before fdb-java's {@code FDB} class is
   * loaded.
   */
  public static final String CLIENT_LIBRARY_PROPERTY = "FDB_LIBRARY_PATH_FDB_C";

  private static final Duration READY = Duration.ofSeconds(60);
  private static final int START_ATTEMPTS = 3;

  private final Installation installation;
  private final Path directory;
  private final Path clusterFile;
  private final int port;
  private final @Nullable String storageMemory;
  private @Nullable FdbProcess server;
  private @Nullable ShutdownHook shutdownHook;
  private boolean closed;

  private LocalFdbServer(
      Installation installation, Path directory, int port, @Nullable String storageMemory) {
    this.installation = installation;
    this.directory = directory;
    this.clusterFile = directory.resolve("fdb.cluster");
    this.port = port;
    this.storageMemory = storageMemory;
  }

  /**
   * Finds a FoundationDB installation: the folder named by the system property {@value
   * #HOME_PROPERTY} or the environment variable {@value #HOME_ENV}; else a {@code shared/fdb}
   * folder holding {@code bin/fdbserver} and {@code bin/fdbcli} beside the working directory or
   * beside one of its parents (the team's machines keep one next to each checkout, and {@code
   * .ci/run} uses it by the same rule, so a plain {@code mvn test} in a module runs the
   * FoundationDB tests against it too); else the folder above the {@code bin/} that holds an {@code
   * fdbserver} found on the {@code PATH}.
   *
   * @return the installation, or empty if there is none
   * @throws IllegalArgumentException if {@value #HOME_PROPERTY} or {@value #HOME_ENV} names a
   *     folder that is not an installation (a misconfiguration, never mistaken for "none")
   */
  public static Optional<Installation> findInstallation() {
    String home = System.getProperty(HOME_PROPERTY);
    if (home == null || home.isBlank()) {
      home = System.getenv(HOME_ENV);
    }
    if (home != null && !home.isBlank()) {
      return Optional.of(Installation.at(Path.of(home)));
    }
    for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
      Path shared = dir.resolve("shared").resolve("fdb");
      if (executable(shared.resolve("bin").resolve("fdbserver"))
          && executable(shared.resolve("bin").resolve("fdbcli"))) {
        return Optional.of(Installation.at(shared));
      }
    }
    return onPath("fdbserver")
        .map(
            server -> {
              Path bin = server.getParent();
              Path cli = executable(bin.resolve("fdbcli")) ? bin.resolve("fdbcli") : null;
              if (cli == null) {
                cli = onPath("fdbcli").orElse(null);
              }
              return cli == null ? null : new Installation(server, cli, library(bin.getParent()));
            });
  }

  /**
   * Starts a throwaway server of {@code installation} in a new run directory under {@code parent}
   * and waits until its database is available. Tries up to three free ports (another process may
   * take a port between choosing and binding it).
   *
   * @param installation the FoundationDB installation to run
   * @param parent where run directories go, created if needed (e.g. a module's {@code target/fdb})
   * @return the running server; close it when done (a shutdown hook does otherwise)
   * @throws IllegalStateException if the server did not become available, with its output
   */
  public static LocalFdbServer start(Installation installation, Path parent) {
    return start(installation, parent, null);
  }

  /**
   * Like {@link #start(Installation, Path)}, with the memory engine's data limit {@code
   * storageMemory} ({@code fdbserver --storage-memory}, e.g. {@code "3072MiB"}) instead of its
   * default of 1 GiB: for data sets that do not fit in it (the engine counts about a kilobyte per
   * small key-value pair with its overheads).
   *
   * @param storageMemory the limit, or null for fdbserver's default
   */
  public static LocalFdbServer start(
      Installation installation, Path parent, @Nullable String storageMemory) {
    IllegalStateException failure = null;
    for (int i = 0; i < START_ATTEMPTS; i++) {
      LocalFdbServer server =
          new LocalFdbServer(
              installation,
              RunDirectories.create(parent),
              RunDirectories.freePort(),
              storageMemory);
      try {
        server.startAndConfigure();
        return server;
      } catch (RuntimeException e) {
        server.close();
        if (failure == null) {
          failure = new IllegalStateException("FoundationDB server did not start", e);
        } else {
          failure.addSuppressed(e);
        }
      }
    }
    throw failure;
  }

  /** The cluster file of this server's cluster. */
  public Path clusterFile() {
    return clusterFile;
  }

  /** The run directory: cluster file, {@code data/}, {@code logs/}, {@code fdbserver.out}. */
  public Path directory() {
    return directory;
  }

  /** The installation this server runs. */
  public Installation installation() {
    return installation;
  }

  /**
   * Stops the server (its watchdog kills it), waits for it to exit and deletes its data.
   * Idempotent.
   */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    FdbProcess s = server;
    if (s != null) {
      s.stop();
    }
    RunDirectories.deleteRecursively(directory.resolve("data"));
    ShutdownHook hook = shutdownHook;
    if (hook != null) {
      hook.remove();
    }
  }

  @Override
  public String toString() {
    return "LocalFdbServer{port=" + port + ", directory=" + directory + "}";
  }

  private void startAndConfigure() {
    try {
      Files.createDirectories(directory.resolve("data"));
      Files.createDirectories(directory.resolve("logs"));
      String id = UUID.randomUUID().toString().replace("-", "").substring(0, 16);
      Files.writeString(clusterFile, "dgen:" + id + "@127.0.0.1:" + port + "\n");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    shutdownHook = new ShutdownHook(this::close, "dgen-fdb-server-stop");
    List<String> args =
        new java.util.ArrayList<>(
            List.of(
                "-p",
                "127.0.0.1:" + port,
                "-C",
                clusterFile.toString(),
                "-d",
                directory.resolve("data").toString(),
                "-L",
                directory.resolve("logs").toString()));
    if (storageMemory != null) {
      args.add("--storage-memory");
      args.add(storageMemory);
    }
    FdbProcess s = FdbProcess.start(installation.fdbserver(), args, directory);
    server = s;
    // fdbcli answers "Database created", or "... already exists" after a retry whose first try
    // created it; right after, "status minimal" may still say "available, but has issues".
    FdbCli cli = new FdbCli(installation.fdbcli(), clusterFile);
    cli.await(
        "configure new single memory",
        out -> out.contains("Database created") || out.contains("already exists"),
        READY,
        s::isAlive,
        () -> "fdbserver exited: " + s.outputTail());
    cli.await(
        "status minimal",
        out -> out.contains("The database is available."),
        READY,
        s::isAlive,
        () -> "fdbserver exited: " + s.outputTail());
  }

  // ---------------------------------------------------------------- installations

  private static Optional<Path> onPath(String program) {
    String path = System.getenv("PATH");
    if (path == null) {
      return Optional.empty();
    }
    for (String dir : path.split(File.pathSeparator)) {
      if (!dir.isEmpty() && executable(Path.of(dir, program))) {
        return Optional.of(Path.of(dir, program).toAbsolutePath());
      }
    }
    return Optional.empty();
  }

  private static boolean executable(Path file) {
    return Files.isRegularFile(file) && Files.isExecutable(file);
  }

  private static @Nullable Path library(@Nullable Path home) {
    if (home == null) {
      return null;
    }
    Path lib = home.resolve("lib").resolve(System.mapLibraryName("fdb_c"));
    return Files.isRegularFile(lib) ? lib : null;
  }

  /**
   * A FoundationDB installation: the server, the CLI and, where it ships one, the client library.
   *
   * @param fdbserver the {@code fdbserver} executable
   * @param fdbcli the {@code fdbcli} executable
   * @param clientLibrary the installation's {@code libfdb_c}, or null to leave it to the system's
   *     library path
   */
  public record Installation(Path fdbserver, Path fdbcli, @Nullable Path clientLibrary) {

    /**
     * The installation in {@code home}: {@code bin/fdbserver}, {@code bin/fdbcli} and, if present,
     * {@code lib/libfdb_c.so} (the platform's name for it).
     *
     * @param home the installation's folder
     * @return the installation
     * @throws IllegalArgumentException if {@code bin/fdbserver} or {@code bin/fdbcli} is missing
     */
    public static Installation at(Path home) {
      Path abs = home.toAbsolutePath().normalize();
      Path server = abs.resolve("bin").resolve("fdbserver");
      Path cli = abs.resolve("bin").resolve("fdbcli");
      if (!executable(server) || !executable(cli)) {
        throw new IllegalArgumentException(
            "not a FoundationDB installation (needs executable bin/fdbserver and bin/fdbcli): "
                + abs);
      }
      return new Installation(server, cli, library(abs));
    }

    /**
     * Makes fdb-java load this installation's client library, unless the installation has none or
     * {@value LocalFdbServer#CLIENT_LIBRARY_PROPERTY} is set already: sets that system property.
     * Call it before the first {@code FdbBackend} opens (fdb-java reads it once, when it loads).
     *
     * @return the library fdb-java will load from its path, or empty if this left it unchanged
     */
    public Optional<Path> useClientLibrary() {
      if (clientLibrary == null || System.getProperty(CLIENT_LIBRARY_PROPERTY) != null) {
        return Optional.empty();
      }
      System.setProperty(CLIENT_LIBRARY_PROPERTY, clientLibrary.toString());
      return Optional.of(clientLibrary);
    }
  }
}
