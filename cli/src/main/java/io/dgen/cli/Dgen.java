package io.dgen.cli;

import io.dgen.admin.DGenAdmin;
import io.dgen.backend.Backend;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code dgen}: the admin command line. Inspects and repairs the servers stored in a backend
 * without their classes (see {@link io.dgen.admin}).
 *
 * <p>Exit codes: {@value #OK} ok, {@value #USAGE} usage (bad option, malformed tenant or tuid),
 * {@value #NOT_FOUND} not found (tenant, server, dead letter), {@value #REFUSED} refused (a
 * destructive command without {@code --yes}), {@value #BACKEND} backend error (cluster file
 * unreadable, cluster unreachable, data undecodable). Every error is one line on stderr.
 */
@Command(
    name = "dgen",
    mixinStandardHelpOptions = true,
    versionProvider = Dgen.Version.class,
    description =
        "Inspect and repair DGen servers stored in FoundationDB (--cluster-file) or in a data"
            + " directory of the embedded backend (--data-dir).",
    subcommands = {
      Commands.Tenants.class,
      Commands.Servers.class,
      Commands.Limits.class,
      Commands.PlacementView.class,
      Commands.Inspect.class,
      Commands.StateReplace.class,
      Commands.Queue.class,
      Commands.Timers.class,
      Commands.DeadLetters.class,
      Commands.CancelMessage.class,
      Commands.Pause.class,
      Commands.Resume.class,
      Commands.Kill.class,
      UiCommand.class
    },
    footerHeading = "%nExit codes:%n",
    footer = {
      "  0  ok",
      "  1  usage: a bad option, a malformed tenant or tuid",
      "  2  not found: no such tenant, server or dead letter",
      "  3  refused: a destructive command without --yes (nothing was written)",
      "  4  backend error: unreadable cluster file, unreachable cluster, undecodable data",
      "",
      "A TENANT is its directory path, elements separated by '/': shop/eu.",
      "A TUID is a tuple literal, quoted for the shell: '(\"orders\", 42)'."
    })
public final class Dgen implements Callable<Integer> {

  static final int OK = 0;
  static final int USAGE = 1;
  static final int NOT_FOUND = 2;
  static final int REFUSED = 3;
  static final int BACKEND = 4;

  /** Opens the backend the global options name; {@link BackendSource} in production. */
  @FunctionalInterface
  interface BackendFactory {
    Backend open(@Nullable Path clusterFile, @Nullable Path dataDir);
  }

  @Option(
      names = "--cluster-file",
      paramLabel = "F",
      description = "FoundationDB cluster file (default: FoundationDB's default cluster file)")
  @Nullable Path clusterFile;

  @Option(
      names = "--data-dir",
      paramLabel = "D",
      description =
          "data directory of the embedded durable backend (RocksDB); needs no FoundationDB"
              + " client, and no application may hold the directory open")
  @Nullable Path dataDir;

  @Spec CommandLine.Model.CommandSpec spec;

  private final BackendFactory factory;
  private @Nullable Backend backend;

  Dgen(BackendFactory factory) {
    this.factory = factory;
  }

  @Override
  public Integer call() {
    spec.commandLine().usage(spec.commandLine().getErr());
    return USAGE;
  }

  /** The admin over the backend the options name, opened on first use. */
  DGenAdmin admin() {
    return new DGenAdmin(backend(), BackendSource.TIMEOUT); // as FoundationDB's transaction timeout
  }

  /** The backend the options name, opened on first use. */
  Backend backend() {
    if (clusterFile != null && dataDir != null) {
      throw new CliException(USAGE, "--cluster-file and --data-dir exclude each other");
    }
    if (backend == null) {
      backend = factory.open(clusterFile, dataDir);
    }
    return backend;
  }

  /**
   * Runs {@code dgen} with {@code args}; returns the exit code.
   *
   * @param factory opens the backend
   */
  static int run(String[] args, PrintWriter out, PrintWriter err, BackendFactory factory) {
    Dgen root = new Dgen(factory);
    CommandLine cmd = new CommandLine(root);
    cmd.setOut(out);
    cmd.setErr(err);
    cmd.setParameterExceptionHandler(
        (e, a) -> {
          String name = e.getCommandLine().getCommandSpec().qualifiedName();
          err.println(oneLine("dgen: " + e.getMessage() + " (see: " + name + " --help)"));
          err.flush();
          return USAGE;
        });
    cmd.setExecutionExceptionHandler(
        (e, c, parsed) -> {
          int code;
          String message;
          if (e instanceof CliException ce) {
            code = ce.exitCode();
            message = ce.getMessage();
          } else if (e instanceof IllegalArgumentException) {
            code = USAGE;
            message = e.getMessage();
          } else {
            code = BACKEND;
            message = "backend error: " + e;
          }
          err.println(oneLine("dgen: " + message));
          err.flush();
          return code;
        });
    try {
      return cmd.execute(args);
    } finally {
      if (root.backend != null) {
        root.backend.close();
      }
      out.flush();
      err.flush();
    }
  }

  private static String oneLine(String s) {
    return s.replaceAll("\\s*[\\r\\n]+\\s*", " ").strip();
  }

  /**
   * The entry point of {@code dgen.jar}.
   *
   * @param args the command line
   */
  public static void main(String[] args) {
    PrintWriter out = new PrintWriter(System.out, true, StandardCharsets.UTF_8);
    PrintWriter err = new PrintWriter(System.err, true, StandardCharsets.UTF_8);
    System.exit(run(args, out, err, new BackendSource()));
  }

  /** The version: the jar's implementation version. */
  static final class Version implements CommandLine.IVersionProvider {
    @Override
    public String[] getVersion() {
      String v = Dgen.class.getPackage().getImplementationVersion();
      return new String[] {"dgen " + (v == null ? "(development build)" : v)};
    }
  }
}
