package io.dgen.cli;

import io.dgen.backend.fdb.FdbBackend;
import io.dgen.cli.ui.Dashboard;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.time.Clock;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code dgen ui}: serves the web dashboard ({@link Dashboard}) until interrupted. */
@Command(
    name = "ui",
    mixinStandardHelpOptions = true,
    description = {
      "Serve a web dashboard over the store: tenants, servers, queues, dead letters, timers,"
          + " a live view. Read-only unless --allow-writes. Runs until interrupted (Ctrl-C).",
      "Binding to an address other than loopback requires a token: --token, DGEN_UI_TOKEN, or"
          + " one generated and printed."
    })
final class UiCommand implements Callable<Integer> {

  @Option(
      names = "--port",
      paramLabel = "P",
      defaultValue = "8080",
      description = "port to listen on; 0 picks a free one (default: ${DEFAULT-VALUE})")
  int port;

  @Option(
      names = "--bind",
      paramLabel = "ADDR",
      defaultValue = "127.0.0.1",
      description = "address to listen on (default: ${DEFAULT-VALUE}, loopback only)")
  String bind;

  @Option(
      names = "--allow-writes",
      description = "allow the actions: re-queue, purge, cancel timers, kill (default: read-only)")
  boolean allowWrites;

  @Option(
      names = "--token",
      paramLabel = "T",
      defaultValue = "${env:DGEN_UI_TOKEN}",
      description =
          "token every request must carry (default: DGEN_UI_TOKEN; none on loopback, a"
              + " generated one elsewhere)")
  @Nullable String token;

  @Spec CommandSpec spec;

  /** Counted down to stop serving (tests); an interrupt does the same. */
  final CountDownLatch stop = new CountDownLatch(1);

  @Override
  public Integer call() throws InterruptedException {
    if (port < 0 || port > 65535) {
      throw new CliException(Dgen.USAGE, "--port must be within 0 and 65535: " + port);
    }
    InetAddress address;
    try {
      address = InetAddress.getByName(bind);
    } catch (UnknownHostException e) {
      throw new CliException(Dgen.USAGE, "--bind " + bind + ": unknown address");
    }
    if (token != null && token.isBlank()) {
      token = null;
    }
    Dgen root = (Dgen) spec.root().userObject();
    var backend = root.backend();
    Dashboard.Options options =
        new Dashboard.Options(
            address,
            port,
            allowWrites,
            token,
            backend instanceof FdbBackend ? 1_000_000 : 0,
            Dashboard.Options.DEFAULT_SCAN_CAP,
            Dashboard.Options.DEFAULT_RANKING);
    Dashboard dashboard;
    try {
      dashboard = new Dashboard(root.admin(), options, Clock.systemUTC());
    } catch (IOException e) {
      throw new CliException(
          Dgen.USAGE, "cannot listen on " + bind + ":" + port + ": " + e.getMessage());
    }
    Thread hook = new Thread(dashboard::close, "dgen-ui-shutdown");
    Runtime.getRuntime().addShutdownHook(hook);
    try {
      PrintWriter out = spec.commandLine().getOut();
      out.println(
          "dgen ui: serving "
              + dashboard.uri()
              + (allowWrites
                  ? " (writes allowed)"
                  : " (read-only; --allow-writes allows actions)"));
      if (dashboard.token() != null) {
        out.println("dgen ui: token " + dashboard.token());
        out.println("dgen ui: open " + dashboard.uri() + "?token=" + dashboard.token());
      }
      out.flush();
      stop.await();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      dashboard.close();
      try {
        Runtime.getRuntime().removeShutdownHook(hook);
      } catch (IllegalStateException e) {
        // the JVM is shutting down: the hook runs (closing twice is harmless)
      }
    }
    return Dgen.OK;
  }
}
