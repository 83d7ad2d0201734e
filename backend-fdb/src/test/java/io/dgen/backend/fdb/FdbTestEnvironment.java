package io.dgen.backend.fdb;

import io.dgen.fdbtest.LocalFdbServer;
import java.lang.reflect.Method;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ConditionEvaluationResult;
import org.junit.jupiter.api.extension.ExecutionCondition;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.InvocationInterceptor;
import org.junit.jupiter.api.extension.ReflectiveInvocationContext;
import org.opentest4j.TestAbortedException;
import org.testcontainers.DockerClientFactory;

/**
 * A JUnit Jupiter extension that provides a FoundationDB cluster to a test class, or skips the
 * class with the reason.
 *
 * <p>Where the cluster comes from, decided once per JVM:
 *
 * <ol>
 *   <li>{@code FDB_CLUSTER_FILE} is set: that cluster (it must exist; the tests only touch keys in
 *       their own fresh directories).
 *   <li>Otherwise, a local FoundationDB installation ({@code DGEN_FDB_HOME}, a {@code shared/fdb}
 *       beside the checkout, or {@code fdbserver} on the {@code PATH}; see {@link
 *       LocalFdbServer#findInstallation()}): one throwaway {@link LocalFdbServer} for the whole
 *       JVM, its data under the module's {@code target/fdb/}, stopped when the JVM exits.
 *   <li>Otherwise, Docker is available: one {@link FdbContainer} started for the whole JVM.
 *   <li>Otherwise the class is skipped: {@value #NO_FOUNDATIONDB}.
 * </ol>
 *
 * Where the installation ships a client library ({@code lib/libfdb_c.so}), fdb-java loads that one
 * (through the system property {@value LocalFdbServer#CLIENT_LIBRARY_PROPERTY}), so nobody has to
 * set {@code LD_LIBRARY_PATH}; this also holds with {@code FDB_CLUSTER_FILE}. Even with a cluster,
 * the class is skipped when the client library cannot be loaded. A server or container that fails
 * to start fails the tests: it is never mistaken for an absent FoundationDB.
 *
 * <h2>No silent skips</h2>
 *
 * Once a cluster is in use, a test of a class with this extension that aborts (an assumption that
 * did not hold) fails instead of being skipped: on FoundationDB every test must run. With {@code
 * DGEN_FDB_REQUIRED=true} (or {@code -Ddgen.fdb.required=true}), having no cluster at all fails the
 * tests too, with the reason; CI sets it when it provides FoundationDB.
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
public final class FdbTestEnvironment
    implements ExecutionCondition, BeforeAllCallback, InvocationInterceptor {

  /** The reason shown for skipped tests when no cluster can be had. */
  public static final String NO_FOUNDATIONDB =
      "no FoundationDB: set FDB_CLUSTER_FILE or DGEN_FDB_HOME, keep one in shared/fdb beside the"
          + " checkout, put fdbserver on the PATH, or run with Docker";

  /** The system property that turns every skip for want of FoundationDB into a failure. */
  public static final String REQUIRED_PROPERTY = "dgen.fdb.required";

  /** The environment variable that does what {@link #REQUIRED_PROPERTY} does. */
  public static final String REQUIRED_ENV = "DGEN_FDB_REQUIRED";

  private static @Nullable Path clusterFile;
  private static @Nullable String skipReason;
  private static @Nullable RuntimeException startFailure;
  private static boolean resolved;

  /** Created by JUnit. */
  public FdbTestEnvironment() {}

  /**
   * Skips each test method, with the reason, when there is no cluster (unless FoundationDB is
   * required, see the class documentation). Deciding per method (rather than for the whole class)
   * makes the build report every skipped test, and keeps the class's lifecycle methods from running
   * without a cluster.
   */
  @Override
  public ConditionEvaluationResult evaluateExecutionCondition(ExtensionContext context) {
    if (context.getTestMethod().isEmpty()) {
      return ConditionEvaluationResult.enabled("FoundationDB availability is decided per test");
    }
    synchronized (FdbTestEnvironment.class) {
      resolve();
      if (skipReason == null) {
        return ConditionEvaluationResult.enabled("FoundationDB cluster " + clusterFile);
      }
      return required()
          ? ConditionEvaluationResult.enabled("FoundationDB is required; beforeAll fails")
          : ConditionEvaluationResult.disabled(skipReason);
    }
  }

  /**
   * Fails the class when a server or container was started for it but did not come up, or when
   * FoundationDB is required and there is none.
   */
  @Override
  public void beforeAll(ExtensionContext context) {
    synchronized (FdbTestEnvironment.class) {
      resolve();
      if (startFailure != null) {
        throw new IllegalStateException("FoundationDB test cluster did not start", startFailure);
      }
      if (skipReason != null && required()) {
        throw new IllegalStateException(
            "FoundationDB is required ("
                + REQUIRED_ENV
                + "="
                + System.getenv(REQUIRED_ENV)
                + ", -D"
                + REQUIRED_PROPERTY
                + "="
                + System.getProperty(REQUIRED_PROPERTY)
                + ") but unavailable: "
                + skipReason);
      }
    }
  }

  @Override
  public void interceptTestMethod(
      Invocation<Void> invocation,
      ReflectiveInvocationContext<Method> invocationContext,
      ExtensionContext extensionContext)
      throws Throwable {
    proceedWithoutSkipping(invocation);
  }

  @Override
  public void interceptTestTemplateMethod(
      Invocation<Void> invocation,
      ReflectiveInvocationContext<Method> invocationContext,
      ExtensionContext extensionContext)
      throws Throwable {
    proceedWithoutSkipping(invocation);
  }

  /** Runs a test; on a cluster, an aborted test (a failed assumption) fails instead of skipping. */
  private static void proceedWithoutSkipping(Invocation<Void> invocation) throws Throwable {
    try {
      invocation.proceed();
    } catch (TestAbortedException e) {
      if (clusterFileOrNull() == null) {
        throw e;
      }
      throw new AssertionError(
          "FoundationDB is available, so this test must run, not skip: " + e.getMessage(), e);
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

  /**
   * The client library fdb-java loads, when the test environment chose it (a local installation's
   * {@code libfdb_c}); child JVMs need {@code -D}{@value LocalFdbServer#CLIENT_LIBRARY_PROPERTY}
   * with it.
   *
   * @return the library's path, or empty if fdb-java uses the system library path
   */
  public static Optional<Path> clientLibrary() {
    return Optional.ofNullable(System.getProperty(LocalFdbServer.CLIENT_LIBRARY_PROPERTY))
        .map(Path::of);
  }

  /** A builder for a backend on the test cluster, to adjust options before opening. */
  public static FdbBackend.Builder builder() {
    return FdbBackend.builder().clusterFile(clusterFile());
  }

  /** Opens a backend on the test cluster with default options; close it after use. */
  public static FdbBackend openBackend() {
    return builder().open();
  }

  private static synchronized @Nullable Path clusterFileOrNull() {
    return clusterFile;
  }

  private static boolean required() {
    return Boolean.getBoolean(REQUIRED_PROPERTY)
        || "true".equalsIgnoreCase(System.getenv(REQUIRED_ENV));
  }

  private static synchronized void resolve() {
    if (resolved) {
      return;
    }
    resolved = true;
    decide();
    // Once per JVM, so that the reason stands in the build output next to the skipped counts
    // (the surefire configuration of the modules with FoundationDB tests prints test output).
    if (skipReason != null) {
      System.out.println("[FdbTestEnvironment] FoundationDB tests skipped: " + skipReason);
    } else if (clusterFile != null) {
      System.out.println("[FdbTestEnvironment] FoundationDB tests use cluster file " + clusterFile);
    }
  }

  private static void decide() {
    Optional<LocalFdbServer.Installation> local;
    try {
      local = LocalFdbServer.findInstallation();
    } catch (IllegalArgumentException e) {
      skipReason = e.getMessage();
      return;
    }
    local.ifPresent(LocalFdbServer.Installation::useClientLibrary);
    String fromEnv = System.getenv("FDB_CLUSTER_FILE");
    boolean useDocker = false;
    if (fromEnv != null && !fromEnv.isBlank()) {
      if (!Files.isRegularFile(Path.of(fromEnv))) {
        skipReason = "FDB_CLUSTER_FILE=" + fromEnv + " is not a file";
        return;
      }
      clusterFile = Path.of(fromEnv);
    } else if (local.isEmpty()) {
      if (!dockerAvailable()) {
        skipReason = NO_FOUNDATIONDB;
        return;
      }
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
    }
    try {
      FdbNative.load(FdbBackend.DEFAULT_API_VERSION);
    } catch (IllegalStateException e) {
      skipReason = "no FoundationDB client library: " + e.getMessage();
      clusterFile = null;
      return;
    }
    if (clusterFile != null) {
      return;
    }
    try {
      clusterFile =
          useDocker
              ? FdbContainer.startServer()
              : LocalFdbServer.start(local.orElseThrow(), moduleTarget().resolve("fdb"))
                  .clusterFile();
    } catch (RuntimeException e) {
      startFailure = e;
    }
  }

  /** The {@code target/} folder of the module under test (surefire runs in the module's folder). */
  private static Path moduleTarget() {
    String basedir = System.getProperty("basedir");
    return Path.of(basedir != null ? basedir : System.getProperty("user.dir"), "target");
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
