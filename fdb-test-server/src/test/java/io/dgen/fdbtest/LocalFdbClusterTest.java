package io.dgen.fdbtest;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dgen.fdbtest.LocalFdbCluster.Member;
import io.dgen.fdbtest.LocalFdbCluster.ProcessClass;
import io.dgen.fdbtest.LocalFdbCluster.Role;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;

/**
 * The multi-process cluster fixture: roles land where the process classes say, a process killed by
 * role is gone and comes back, and no process or directory outlives the cluster, whether it is
 * closed or its JVM is killed with {@code SIGKILL}.
 */
class LocalFdbClusterTest {

  private static final Duration GONE = Duration.ofSeconds(20);

  private static LocalFdbServer.Installation installation;

  @BeforeAll
  static void findInstallation() {
    Optional<LocalFdbServer.Installation> found = LocalFdbServer.findInstallation();
    boolean required =
        Boolean.getBoolean("dgen.fdb.required")
            || "true".equalsIgnoreCase(System.getenv("DGEN_FDB_REQUIRED"));
    if (found.isEmpty() && required) {
      throw new IllegalStateException("FoundationDB is required, but no installation was found");
    }
    Assumptions.assumeTrue(found.isPresent(), "no local FoundationDB installation");
    installation = found.get();
  }

  @Test
  void rolesFollowTheClasses_aKilledRoleComesBack_coordinatorsMove_andCloseLeavesNothing() {
    List<ProcessHandle> servers = new ArrayList<>();
    Path directory;
    try (LocalFdbCluster cluster = LocalFdbCluster.builder(installation, parent()).start()) {
      directory = cluster.directory();
      cluster.members().forEach(m -> servers.add(ProcessHandle.of(cluster.pid(m)).orElseThrow()));
      Map<Member, Set<Role>> roles = cluster.roles();
      assertThat(cluster.members())
          .extracting(Member::processClass)
          .containsExactly(
              ProcessClass.STATELESS,
              ProcessClass.TRANSACTION,
              ProcessClass.TRANSACTION,
              ProcessClass.STORAGE,
              ProcessClass.STORAGE);
      assertThat(cluster.coordinators())
          .as("one coordinator of each class")
          .extracting(Member::index)
          .containsExactly(0, 1, 3);
      assertThat(roles.get(cluster.members().get(0)))
          .contains(Role.CLUSTER_CONTROLLER, Role.MASTER);
      assertThat(cluster.holderOf(Role.LOG).processClass()).isEqualTo(ProcessClass.TRANSACTION);
      assertThat(cluster.holderOf(Role.STORAGE).processClass()).isEqualTo(ProcessClass.STORAGE);

      Member storage = cluster.kill(Role.STORAGE);
      assertThat(cluster.isRunning(storage)).isFalse();
      assertThat(servers.get(storage.index()).isAlive()).as("killed with SIGKILL").isFalse();
      cluster.awaitAvailable(Duration.ofMinutes(1));
      cluster.restart(storage);
      assertThat(cluster.isRunning(storage)).isTrue();
      servers.add(ProcessHandle.of(cluster.pid(storage)).orElseThrow());
      cluster.awaitAvailable(Duration.ofMinutes(1));

      List<Member> moved = List.of(cluster.members().get(0), cluster.members().get(2), storage);
      cluster.changeCoordinators(moved);
      assertThat(cluster.coordinators()).as("the cluster file, rewritten").isEqualTo(moved);
      cluster.awaitAvailable(Duration.ofMinutes(1));
    }
    assertThat(servers).noneMatch(ProcessHandle::isAlive);
    assertThat(directory).doesNotExist();
  }

  @Test
  void tripleRedundancyOnTheSsdEngine_isConfigured_andSurvivesItsLogProcessKilled() {
    try (LocalFdbCluster cluster =
        LocalFdbCluster.builder(installation, parent())
            .redundancy(LocalFdbCluster.Redundancy.TRIPLE)
            .engine(LocalFdbCluster.Engine.SSD)
            .start()) {
      String status = cluster.fdbcli("status json");
      JsonNode configuration =
          new ObjectMapper()
              .readTree(status.substring(status.indexOf('{')))
              .path("cluster")
              .path("configuration");
      assertThat(configuration.path("redundancy_mode").asString()).isEqualTo("triple");
      assertThat(configuration.path("storage_engine").asString()).startsWith("ssd");
      assertThat(cluster.coordinators()).as("all five").hasSize(5);

      Member logs = cluster.kill(Role.LOG);
      cluster.awaitAvailable(Duration.ofMinutes(1));
      cluster.restart(logs);
      cluster.awaitHealthy(Duration.ofMinutes(2));
      assertThat(cluster.isRunning(logs)).isTrue();
    }
  }

  @Test
  void aJvmKilledWithSigkill_leavesNoServerRunning_andTheNextStartRemovesItsDirectory()
      throws Exception {
    Path parent = parent();
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    command.add("-cp");
    command.add(System.getProperty("java.class.path"));
    command.add(ClusterJvm.class.getName());
    command.add(installation.fdbserver().getParent().getParent().toString());
    command.add(parent.toString());
    Path out = parent.resolve("cluster-jvm.out");
    Process child =
        new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(out.toFile()).start();
    try {
      await("the child's cluster started")
          .atMost(Duration.ofMinutes(3))
          .failFast("the child exited: " + out, () -> !child.isAlive())
          .until(() -> Files.readString(out).contains(ClusterJvm.READY));
      String[] lines = Files.readString(out).split("\n");
      List<ProcessHandle> servers =
          Arrays.stream(lines)
              .filter(l -> l.startsWith(ClusterJvm.PID))
              .map(l -> ProcessHandle.of(Long.parseLong(l.substring(ClusterJvm.PID.length()))))
              .map(Optional::orElseThrow)
              .toList();
      Path directory =
          Arrays.stream(lines)
              .filter(l -> l.startsWith(ClusterJvm.DIRECTORY))
              .map(l -> Path.of(l.substring(ClusterJvm.DIRECTORY.length())))
              .findFirst()
              .orElseThrow();
      assertThat(servers).hasSize(5).allMatch(ProcessHandle::isAlive);

      child.destroyForcibly(); // SIGKILL: no shutdown hook runs
      assertThat(child.waitFor(30, TimeUnit.SECONDS)).isTrue();

      await("every fdbserver of the killed JVM gone")
          .atMost(GONE)
          .until(() -> servers.stream().noneMatch(ProcessHandle::isAlive));
      assertThat(directory).exists();
      Path next = RunDirectories.create(parent);
      assertThat(directory).as("removed by the next start").doesNotExist();
      RunDirectories.deleteRecursively(next);
    } finally {
      child.destroyForcibly();
    }
  }

  private static Path parent() {
    try {
      return Files.createDirectories(
          Path.of(System.getProperty("basedir", "."), "target", "fdb-cluster-test"));
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  /** The child JVM: starts a cluster, prints its processes and directory, and waits to die. */
  public static final class ClusterJvm {
    static final String READY = "READY";
    static final String PID = "PID ";
    static final String DIRECTORY = "DIR ";

    private ClusterJvm() {}

    /**
     * @param args the installation's folder, the parent of run directories
     */
    public static void main(String[] args) throws Exception {
      LocalFdbCluster cluster =
          LocalFdbCluster.builder(
                  LocalFdbServer.Installation.at(Path.of(args[0])), Path.of(args[1]))
              .start();
      for (Member m : cluster.members()) {
        System.out.println(PID + cluster.pid(m));
      }
      System.out.println(DIRECTORY + cluster.directory());
      System.out.println(READY);
      System.out.flush();
      while (System.in.read() != -1) {
        // killed by the test
      }
    }
  }
}
