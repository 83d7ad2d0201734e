package io.dgen.chaos;

import static org.awaitility.Awaitility.await;

import io.dgen.fdbtest.LocalFdbCluster;
import io.dgen.fdbtest.LocalFdbCluster.Member;
import io.dgen.fdbtest.LocalFdbCluster.Role;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.function.Consumer;
import org.awaitility.core.ConditionTimeoutException;
import org.jspecify.annotations.Nullable;

/**
 * The faults of a chaos run, one after the other: the process holding the transaction logs, a
 * storage server and the cluster controller are killed with {@code SIGKILL} and restarted, a
 * coordinator is replaced by another process, and a client JVM is killed (preferably while it runs
 * {@code handleLocked}, so that it dies holding a lock) and started again. Before each fault of the
 * cluster it waits until the cluster is healthy, so that no fault becomes a double failure; between
 * faults it pauses a few seconds (the schedule's rhythm, not a wait for anything).
 *
 * <p>Each fault is recorded ({@link Fault}) with when it struck, when the cluster (or client) was
 * back, and when the process was restarted.
 */
final class FaultSchedule {

  /** The kinds of fault, in the order one round applies them. */
  enum Kind {
    /** The process holding transaction logs of the current generation. */
    LOG(Role.LOG),
    /** A process holding a storage server. */
    STORAGE(Role.STORAGE),
    /** The process holding the cluster controller (and, in the default layout, the master). */
    CLUSTER_CONTROLLER(Role.CLUSTER_CONTROLLER),
    /** No kill: one coordinator is replaced by another process ({@code fdbcli coordinators}). */
    COORDINATORS(null),
    /** A client JVM. */
    CLIENT_JVM(null);

    final @Nullable Role role;

    Kind(@Nullable Role role) {
      this.role = role;
    }

    /** Whether the fault kills a process that is restarted afterwards. */
    boolean restarts() {
      return this != COORDINATORS;
    }
  }

  /**
   * One fault.
   *
   * @param kind what was killed
   * @param target which process (or client and generation)
   * @param killedAt epoch millis of the kill
   * @param availableAt when a probe transaction committed again (clients: when the kill returned)
   * @param restartedAt when the process was started again
   * @param recoveredAt when a probe transaction committed after the restart (clients: when the new
   *     generation was ready)
   * @param heldLock the id of the lock-mode message whose {@code handleLocked} a killed client was
   *     running, or empty
   */
  record Fault(
      Kind kind,
      String target,
      long killedAt,
      long availableAt,
      long restartedAt,
      long recoveredAt,
      String heldLock) {}

  static final String CLIENT_KILLED = "B";

  private static final Duration DOWN = Duration.ofSeconds(2);
  private static final Duration SETTLE = Duration.ofSeconds(2);
  private static final Duration RECOVERY = Duration.ofMinutes(3);
  private static final Duration LOCK_HOLDER_WAIT = Duration.ofSeconds(20);

  private final LocalFdbCluster cluster;
  private final Clients clients;
  private final Consumer<String> log;
  private final List<Fault> faults = Collections.synchronizedList(new ArrayList<>());

  FaultSchedule(LocalFdbCluster cluster, Clients clients, Consumer<String> log) {
    this.cluster = cluster;
    this.clients = clients;
    this.log = log;
  }

  /** The faults applied so far. */
  List<Fault> faults() {
    synchronized (faults) {
      return List.copyOf(faults);
    }
  }

  /**
   * Applies rounds of every kind of fault until {@code until} (epoch millis) has passed at the end
   * of a fault, and at least one round.
   */
  void run(long until) throws InterruptedException {
    do {
      for (Kind kind : Kind.values()) {
        clients.crashed(true).forEach(crash -> log.accept("CRASH (not a fault): " + crash));
        apply(kind);
        Thread.sleep(SETTLE.toMillis()); // the schedule's rhythm
      }
    } while (System.currentTimeMillis() < until);
  }

  private void apply(Kind kind) throws InterruptedException {
    if (kind == Kind.CLIENT_JVM) {
      killClient();
      return;
    }
    Duration healthy = cluster.awaitHealthy(RECOVERY);
    if (kind == Kind.COORDINATORS) {
      moveCoordinator();
      return;
    }
    Member m = cluster.holderOf(Objects.requireNonNull(kind.role));
    long killedAt = System.currentTimeMillis();
    cluster.kill(m);
    log.accept(
        "fault: killed " + kind + " " + m + " (healthy after " + healthy.toMillis() + " ms)");
    cluster.awaitAvailable(RECOVERY);
    long availableAt = System.currentTimeMillis();
    log.accept(
        "fault: "
            + kind
            + " killed, a commit went through after "
            + (availableAt - killedAt)
            + " ms");
    Thread.sleep(DOWN.toMillis()); // how long the process stays down
    long restartedAt = System.currentTimeMillis();
    cluster.restart(m);
    cluster.awaitAvailable(RECOVERY);
    long recoveredAt = System.currentTimeMillis();
    log.accept(
        "fault: "
            + kind
            + " "
            + m
            + " restarted, commits after "
            + (recoveredAt - restartedAt)
            + " ms");
    faults.add(new Fault(kind, m.toString(), killedAt, availableAt, restartedAt, recoveredAt, ""));
  }

  /**
   * Replaces the coordinator of the highest index by a process that is not one, of the same class
   * where there is one: the coordinators move back and forth between the two storage processes, or
   * the two log processes, round after round.
   */
  private void moveCoordinator() {
    List<Member> current = cluster.coordinators();
    Member out = current.get(current.size() - 1);
    Member in =
        cluster.members().stream()
            .filter(m -> !current.contains(m))
            .min(
                java.util.Comparator.comparing((Member m) -> m.processClass() != out.processClass())
                    .thenComparingInt(Member::index))
            .orElseThrow();
    List<Member> next = new ArrayList<>(current);
    next.set(next.size() - 1, in);
    long changedAt = System.currentTimeMillis();
    cluster.changeCoordinators(next);
    cluster.awaitAvailable(RECOVERY);
    long availableAt = System.currentTimeMillis();
    String target = "coordinator " + out.index() + " -> " + in.index();
    log.accept(
        "fault: moved "
            + target
            + ", a commit went through after "
            + (availableAt - changedAt)
            + " ms");
    faults.add(
        new Fault(Kind.COORDINATORS, target, changedAt, availableAt, availableAt, availableAt, ""));
  }

  private void killClient() throws InterruptedException {
    int generation = clients.generation(CLIENT_KILLED);
    Optional<String> holding = awaitLockHolder(clients.journal(CLIENT_KILLED, generation));
    long killedAt = System.currentTimeMillis();
    clients.kill(CLIENT_KILLED);
    long availableAt = System.currentTimeMillis();
    log.accept(
        "fault: SIGKILL client "
            + CLIENT_KILLED
            + generation
            + holding.map(id -> ", inside handleLocked of " + id).orElse(", holding no lock"));
    Thread.sleep(DOWN.toMillis()); // how long the client stays down
    long restartedAt = System.currentTimeMillis();
    clients.start(CLIENT_KILLED);
    long recoveredAt = System.currentTimeMillis();
    log.accept(
        "fault: client "
            + CLIENT_KILLED
            + (generation + 1)
            + " ready after "
            + (recoveredAt - restartedAt)
            + " ms");
    faults.add(
        new Fault(
            Kind.CLIENT_JVM,
            CLIENT_KILLED + generation,
            killedAt,
            availableAt,
            restartedAt,
            recoveredAt,
            holding.orElse("")));
  }

  /**
   * Watches the client's journal for a {@code handleLocked} under way (started, not ended), for at
   * most 20 s: a kill then leaves a lock held by a dead holder.
   */
  private static Optional<String> awaitLockHolder(Path journal) {
    Journal.Tail tail = new Journal.Tail(journal);
    Set<String> inside = new HashSet<>();
    try {
      await("a handleLocked under way")
          .atMost(LOCK_HOLDER_WAIT)
          .pollInterval(Duration.ofMillis(20))
          .until(
              () -> {
                for (Journal.Line l : tail.readNew()) {
                  if (l.kind().equals("E") && l.field(0).equals("locked-start")) {
                    inside.add(l.id());
                  } else if (l.kind().equals("E") && l.field(0).equals("locked-end")) {
                    inside.remove(l.id());
                  }
                }
                return !inside.isEmpty();
              });
      return Optional.of(inside.iterator().next());
    } catch (ConditionTimeoutException e) {
      return Optional.empty();
    }
  }
}
