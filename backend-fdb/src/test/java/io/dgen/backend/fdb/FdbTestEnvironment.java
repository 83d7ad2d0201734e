package io.dgen.backend.fdb;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ConditionEvaluationResult;
import org.junit.jupiter.api.extension.ExecutionCondition;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.testcontainers.DockerClientFactory;

/**
 * A JUnit 5 extension that provides a FoundationDB cluster to a test class, or skips the class with
 * the reason.
 *
 * <p>Where the cluster comes from, decided once per JVM:
 *
 * <ol>
 *   <li>{@code FDB_CLUSTER_FILE} is set: that cluster (it must exist; the tests only touch keys in
 *       their own fresh directories).
 *   <li>Otherwise, Docker is available: one {@link FdbContainer} started for the whole JVM.
 *   <li>Otherwise the class is skipped: {@value #NO_FOUNDATIONDB}.
 * </ol>
 *
 * Even with a cluster, the class is skipped when the FoundationDB client library ({@code libfdb_c})
 * cannot be loaded. A container that fails to start fails the tests: it is never mistaken for an
 * absent FoundationDB.
 *
 * <pre>{@code
 * @ExtendWith(FdbTestEnvironment.class)
 * class MyFdbTest {
 *   @Test
 *   void works() {
 *     try (FdbBackend backend = FdbTestEnvironment.openBackend()) { ... }
 *   }
 * }
 * }</pre>
 */
public final class FdbTestEnvironment implements ExecutionCondition, BeforeAllCallback {

  /** The reason shown for skipped tests when no cluster can be had. */
  public static final String NO_FOUNDATIONDB =
      "no FoundationDB: set FDB_CLUSTER_FILE or run with Docker";

  private static @Nullable Path clusterFile;
  private static @Nullable String skipReason;
  private static @Nullable RuntimeException startFailure;
  private static boolean resolved;

  /** Created by JUnit. */
  public FdbTestEnvironment() {}

  /**
   * Skips each test method, with the reason, when there is no cluster. Deciding per method (rather
   * than for the whole class) makes the build report every skipped test, and keeps the class's
   * lifecycle methods from running without a cluster.
   */
  @Override
  public ConditionEvaluationResult evaluateExecutionCondition(ExtensionContext context) {
    if (context.getTestMethod().isEmpty()) {
      return ConditionEvaluationResult.enabled("FoundationDB availability is decided per test");
    }
    synchronized (FdbTestEnvironment.class) {
      resolve();
      return skipReason == null
          ? ConditionEvaluationResult.enabled("FoundationDB cluster " + clusterFile)
          : ConditionEvaluationResult.disabled(skipReason);
    }
  }

  /** Fails the class when a container was started for it but did not come up. */
  @Override
  public void beforeAll(ExtensionContext context) {
    synchronized (FdbTestEnvironment.class) {
      resolve();
      if (startFailure != null) {
        throw new IllegalStateException("FoundationDB test cluster did not start", startFailure);
      }
    }
  }

  /**
   * The cluster file of the test cluster.
   *
   * @throws IllegalStateException if there is none (the calling test class lacks the extension)
   */
  public static synchronized Path clusterFile() {
    resolve();
    if (clusterFile == null) {
      throw new IllegalStateException(
          "no FoundationDB test cluster: " + (skipReason != null ? skipReason : startFailure));
    }
    return clusterFile;
  }

  /** A builder for a backend on the test cluster, to adjust options before opening. */
  public static FdbBackend.Builder builder() {
    return FdbBackend.builder().clusterFile(clusterFile());
  }

  /** Opens a backend on the test cluster with default options; close it after use. */
  public static FdbBackend openBackend() {
    return builder().open();
  }

  private static synchronized void resolve() {
    if (resolved) {
      return;
    }
    resolved = true;
    decide();
    // Once per JVM, so that the reason stands in the build output next to the skipped counts
    // (backend-fdb's surefire configuration prints test output rather than filing it away).
    if (skipReason != null) {
      System.out.println("[FdbTestEnvironment] FoundationDB tests skipped: " + skipReason);
    } else if (clusterFile != null) {
      System.out.println("[FdbTestEnvironment] FoundationDB tests use cluster file " + clusterFile);
    }
  }

  private static void decide() {
    String fromEnv = System.getenv("FDB_CLUSTER_FILE");
    boolean useDocker = false;
    if (fromEnv != null && !fromEnv.isBlank()) {
      if (!Files.isRegularFile(Path.of(fromEnv))) {
        skipReason = "FDB_CLUSTER_FILE=" + fromEnv + " is not a file";
        return;
      }
      clusterFile = Path.of(fromEnv);
    } else if (dockerAvailable()) {
      String remote = remoteDockerHost();
      if (remote != null) {
        skipReason =
            "Docker runs on another host ("
                + remote
                + "); a FoundationDB container advertises 127.0.0.1, so set FDB_CLUSTER_FILE"
                + " instead";
        return;
      }
      useDocker = true;
    } else {
      skipReason = NO_FOUNDATIONDB;
      return;
    }
    try {
      FdbNative.load(FdbBackend.DEFAULT_API_VERSION);
    } catch (IllegalStateException e) {
      skipReason = "no FoundationDB client library: " + e.getMessage();
      clusterFile = null;
      return;
    }
    if (useDocker) {
      try {
        clusterFile = FdbContainer.startServer();
      } catch (RuntimeException e) {
        startFailure = e;
      }
    }
  }

  private static boolean dockerAvailable() {
    try {
      return DockerClientFactory.instance().isDockerAvailable();
    } catch (RuntimeException | LinkageError e) {
      return false;
    }
  }

  private static @Nullable String remoteDockerHost() {
    String host = DockerClientFactory.instance().dockerHostIpAddress();
    try {
      return InetAddress.getByName(host).isLoopbackAddress() ? null : host;
    } catch (UnknownHostException e) {
      return host;
    }
  }
}
