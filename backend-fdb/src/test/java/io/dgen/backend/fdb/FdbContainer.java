package io.dgen.backend.fdb;

import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.testcontainers.containers.Container.ExecResult;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.containers.wait.strategy.Wait;
import org.testcontainers.utility.DockerImageName;

/**
 * One FoundationDB server in a container of the official image, configured as a single in-memory
 * database, for the tests of this module.
 *
 * <p>A FoundationDB process must be reached at the address it advertises: clients learn every
 * process's address from the cluster and connect to it, and the server rejects connections whose
 * port differs from its own. So the container publishes a port under the same number on the host
 * ({@code FDB_PORT} = host port, bound one-to-one) and advertises {@code 127.0.0.1} ({@code
 * FDB_NETWORKING_MODE=host}), which works with a Docker daemon on the local machine (Linux, Docker
 * Desktop). For a remote daemon, set {@code FDB_CLUSTER_FILE} to a reachable cluster instead.
 */
final class FdbContainer extends GenericContainer<FdbContainer> {

  /** The image used unless {@code -Ddgen.fdb.image} or {@code DGEN_FDB_IMAGE} names another. */
  static final String DEFAULT_IMAGE = "foundationdb/foundationdb:7.3.68";

  private static final Duration READY = Duration.ofMinutes(2);

  private FdbContainer(DockerImageName image, int port) {
    super(image);
    withEnv("FDB_NETWORKING_MODE", "host");
    withEnv("FDB_PORT", Integer.toString(port));
    addFixedExposedPort(port, port);
    waitingFor(Wait.forLogMessage(".*Starting FDB server.*", 1).withStartupTimeout(READY));
  }

  /**
   * Starts a container, creates its database and returns a cluster file for clients on this
   * machine. The container is removed when the JVM exits (by Testcontainers' reaper, and by a
   * shutdown hook where the reaper is disabled).
   */
  static Path startServer() {
    FdbContainer container = new FdbContainer(DockerImageName.parse(image()), freePort());
    container.start();
    Runtime.getRuntime().addShutdownHook(new Thread(container::stop, "fdb-container-stop"));
    container.configureSingleMemory();
    return container.writeClusterFile();
  }

  static String image() {
    String property = System.getProperty("dgen.fdb.image");
    if (property != null && !property.isBlank()) {
      return property;
    }
    String env = System.getenv("DGEN_FDB_IMAGE");
    return env != null && !env.isBlank() ? env : DEFAULT_IMAGE;
  }

  private void configureSingleMemory() {
    // fdbcli answers "Database created" the first time and "...already exists" after a retry
    // whose first attempt did create it.
    await("configure new single memory")
        .atMost(READY)
        .pollInterval(Duration.ofMillis(500))
        .ignoreExceptions()
        .until(
            () -> {
              String out = fdbcli("configure new single memory").getStdout();
              return out.contains("Database created") || out.contains("already exists");
            });
    await("database available")
        .atMost(READY)
        .pollInterval(Duration.ofMillis(500))
        .ignoreExceptions()
        .until(() -> fdbcli("status minimal").getStdout().contains("The database is available"));
  }

  private ExecResult fdbcli(String command) throws IOException, InterruptedException {
    return execInContainer("fdbcli", "--timeout", "10", "--exec", command);
  }

  private Path writeClusterFile() {
    try {
      // The server's own cluster file: docker:docker@127.0.0.1:<port>.
      ExecResult cat = execInContainer("sh", "-c", "cat \"$FDB_CLUSTER_FILE\"");
      String contents = cat.getStdout().trim();
      if (cat.getExitCode() != 0 || contents.isEmpty()) {
        throw new IllegalStateException("cannot read the container's cluster file: " + cat);
      }
      Path file = Files.createTempFile("dgen-fdb-", ".cluster");
      file.toFile().deleteOnExit();
      Files.writeString(file, contents + "\n", StandardCharsets.UTF_8);
      return file;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while reading the cluster file", e);
    }
  }

  private static int freePort() {
    try (ServerSocket socket = new ServerSocket(0)) {
      return socket.getLocalPort();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
