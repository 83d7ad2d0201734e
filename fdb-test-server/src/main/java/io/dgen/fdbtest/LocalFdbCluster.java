package io.dgen.fdbtest;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.UUID;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.jspecify.annotations.Nullable;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;

/**
 * A throwaway FoundationDB cluster of several {@code fdbserver} processes on the loopback
 * interface, for tests that kill processes under load. Not part of the product.
 *
 * <pre>{@code
 * LocalFdbServer.Installation fdb = LocalFdbServer.findInstallation().orElseThrow();
 * fdb.useClientLibrary();
 * try (LocalFdbCluster cluster =
 *     LocalFdbCluster.builder(fdb, Path.of("target", "fdb-cluster")).start()) {
 *   try (FdbBackend backend = FdbBackend.open(cluster.clusterFile())) {
 *     LocalFdbCluster.Member logs = cluster.kill(LocalFdbCluster.Role.LOG);   // kill -9
 *     Duration outage = cluster.awaitAvailable(Duration.ofSeconds(60));      // a probe commit
 *     cluster.restart(logs);
 *     cluster.awaitHealthy(Duration.ofSeconds(120));
 *   }
 * }
 * }</pre>
 *
 * <h2>The cluster</h2>
 *
 * Each process has its own port, data directory, trace log directory and zone (and machine) id, so
 * FoundationDB places replicas of data and logs on different processes as it would on different
 * machines. The default layout, for {@link Redundancy#DOUBLE double} and {@link Redundancy#TRIPLE
 * triple} redundancy alike, is five processes with process classes that make the placement of roles
 * deterministic:
 *
 * <table>
 *   <caption>the default layout</caption>
 *   <tr><th>process</th><th>class</th><th>roles (as FoundationDB recruits them)</th></tr>
 *   <tr><td>0</td><td>{@code stateless}</td><td>cluster controller, master, proxies, resolver,
 *       ratekeeper, data distributor</td></tr>
 *   <tr><td>1, 2</td><td>{@code transaction}</td><td>transaction logs</td></tr>
 *   <tr><td>3, 4</td><td>{@code storage}</td><td>storage servers</td></tr>
 * </table>
 *
 * With triple redundancy FoundationDB needs three zones for logs and for storage, and puts the
 * third on a process of another class. The coordinators are three processes of different classes
 * (0, 1, 3) for double redundancy and all five for triple, so one process killed leaves a majority
 * of them (two in the triple case). After a process is killed FoundationDB moves its roles
 * elsewhere, and when it comes back it may move them back (a "better master exists" recovery):
 * {@link #roles} and {@link #holderOf} always read the current placement from {@code status json}.
 *
 * <h2>Stopping, and no orphans</h2>
 *
 * {@link #close} stops every process and deletes the run directory; a shutdown hook closes the
 * cluster when the JVM exits. Each process runs under the watchdog {@link LocalFdbServer} uses, so
 * a JVM killed with {@code SIGKILL} leaves no server running, and its run directory is removed by
 * the next start under the same parent. {@link #preserveLogs} keeps the trace logs of a run that
 * needs investigating.
 *
 * <h2>Threading</h2>
 *
 * All methods are thread-safe: those that change processes are serialized; {@link #roles}, {@link
 * #awaitAvailable} and {@link #awaitHealthy} may run while another thread kills or restarts.
 */
public final class LocalFdbCluster implements AutoCloseable {

  /** The redundancy mode, as {@code fdbcli configure} names it. */
  public enum Redundancy {
    /** Two replicas of data and logs: survives one process lost. */
    DOUBLE("double"),
    /** Three replicas of data and logs: survives two processes lost. */
    TRIPLE("triple");

    private final String configureName;

    Redundancy(String configureName) {
      this.configureName = configureName;
    }
  }

  /** The storage engine, as {@code fdbcli configure} names it. */
  public enum Engine {
    /** Data in memory, logged to disk: fast, limited to memory. */
    MEMORY("memory"),
    /** The B-tree on disk. */
    SSD("ssd");

    private final String configureName;

    Engine(String configureName) {
      this.configureName = configureName;
    }
  }

  /** A process class ({@code fdbserver --class}), which steers where roles are recruited. */
  public enum ProcessClass {
    /** No class: any role. */
    UNSET("unset"),
    /** Cluster controller, master, proxies, resolvers, ratekeeper, data distributor. */
    STATELESS("stateless"),
    /** Transaction logs. */
    TRANSACTION("transaction"),
    /** Storage servers. */
    STORAGE("storage");

    private final String argument;

    ProcessClass(String argument) {
      this.argument = argument;
    }
  }

  /** A role a process can hold, as {@code status json} names it. */
  public enum Role {
    /** A transaction log of the current generation. */
    LOG("log"),
    /** A storage server. */
    STORAGE("storage"),
    /** The cluster controller. */
    CLUSTER_CONTROLLER("cluster_controller"),
    /** The master (sequencer). */
    MASTER("master"),
    /** A commit proxy. */
    COMMIT_PROXY("commit_proxy"),
    /** A GRV proxy. */
    GRV_PROXY("grv_proxy"),
    /** A resolver. */
    RESOLVER("resolver"),
    /** The ratekeeper. */
    RATEKEEPER("ratekeeper"),
    /** The data distributor. */
    DATA_DISTRIBUTOR("data_distributor"),
    /** A coordinator. */
    COORDINATOR("coordinator");

    private final String statusName;

    Role(String statusName) {
      this.statusName = statusName;
    }

    /** The role's name in {@code status json} ({@code cluster.processes[*].roles[*].role}). */
    public String statusName() {
      return statusName;
    }
  }

  /**
   * One process of the cluster: its fixed identity, whether or not it currently runs.
   *
   * @param index its position in the layout, from 0
   * @param address {@code 127.0.0.1:port}
   * @param processClass its class
   * @param zoneId its zone (and machine) id
   */
  public record Member(int index, String address, ProcessClass processClass, String zoneId) {
    @Override
    public String toString() {
      return "process " + index + " (" + address + ", " + processClass.argument + ")";
    }
  }

  private static final Duration READY = Duration.ofSeconds(90);
  private static final Duration PROBE_TIMEOUT = Duration.ofSeconds(5);
  private static final ObjectMapper JSON = new ObjectMapper();

  private final LocalFdbServer.Installation installation;
  private final Path directory;
  private final Path clusterFile;
  private final List<Member> members;
  private final FdbCli cli;
  private final Engine engine;
  private final Redundancy redundancy;
  private final Map<String, String> knobs;
  private final Set<Integer> initialCoordinators;
  private final @Nullable FdbProcess[] processes;
  private @Nullable ShutdownHook shutdownHook;
  private boolean closed;
  private volatile boolean keepLogs;

  private LocalFdbCluster(Builder b, Path directory, List<Integer> ports) {
    this.installation = b.installation;
    this.directory = directory;
    this.clusterFile = directory.resolve("fdb.cluster");
    this.engine = b.engine;
    this.redundancy = b.redundancy;
    this.knobs = Map.copyOf(b.knobs);
    List<ProcessClass> classes = b.layout();
    List<Member> list = new ArrayList<>();
    for (int i = 0; i < classes.size(); i++) {
      list.add(new Member(i, "127.0.0.1:" + ports.get(i), classes.get(i), "z" + i));
    }
    this.members = List.copyOf(list);
    this.initialCoordinators = b.coordinatorIndexes(classes);
    this.cli = new FdbCli(installation.fdbcli(), clusterFile);
    this.processes = new FdbProcess[members.size()];
  }

  /**
   * A builder of a cluster of {@code installation}'s processes, its run directory under {@code
   * parent}.
   *
   * @param installation the FoundationDB installation to run
   * @param parent where run directories go, created if needed (e.g. a module's {@code
   *     target/fdb-cluster}); run directories left there by JVMs that are gone are removed
   * @return a builder with the defaults: double redundancy, the memory engine, the five-process
   *     layout of the class documentation
   */
  public static Builder builder(LocalFdbServer.Installation installation, Path parent) {
    return new Builder(installation, parent);
  }

  /** The cluster file; clients may share it (FoundationDB rewrites it if coordinators change). */
  public Path clusterFile() {
    return clusterFile;
  }

  /** The run directory: the cluster file and one folder per process ({@code p0}, {@code p1}, …). */
  public Path directory() {
    return directory;
  }

  /** The installation this cluster runs. */
  public LocalFdbServer.Installation installation() {
    return installation;
  }

  /** The redundancy mode the cluster was configured with. */
  public Redundancy redundancy() {
    return redundancy;
  }

  /** The storage engine the cluster was configured with. */
  public Engine engine() {
    return engine;
  }

  /** The processes, by index, running or not. */
  public List<Member> members() {
    return members;
  }

  /** Whether {@code member}'s process runs (false after {@link #kill}, until {@link #restart}). */
  public synchronized boolean isRunning(Member member) {
    FdbProcess p = processes[member.index()];
    return p != null && p.isAlive();
  }

  /** The operating system's process id of a running member, for logs and external tools. */
  public synchronized long pid(Member member) {
    FdbProcess p = processes[member.index()];
    if (p == null) {
      throw new IllegalStateException(member + " is not running");
    }
    return p.server().pid();
  }

  /**
   * The roles of each process, from {@code status json}; {@link Role#LOG} counts only the logs of
   * the current generation (a recovery keeps older ones until storage has caught up). Processes
   * that are down, or that {@code status} does not list, hold no roles.
   *
   * @throws IllegalStateException if no status could be read within a minute (no cluster controller
   *     reachable)
   */
  public Map<Member, Set<Role>> roles() {
    JsonNode cluster = statusJson().path("cluster");
    Map<String, Member> byAddress = new LinkedHashMap<>();
    members.forEach(m -> byAddress.put(m.address(), m));
    Map<Member, Set<Role>> roles = new LinkedHashMap<>();
    members.forEach(m -> roles.put(m, EnumSet.noneOf(Role.class)));
    for (JsonNode process : cluster.path("processes")) {
      Member m = byAddress.get(stripFlags(process.path("address").asString()));
      if (m == null) {
        continue;
      }
      for (JsonNode role : process.path("roles")) {
        String name = role.path("role").asString();
        for (Role r : Role.values()) {
          if (r != Role.LOG && r.statusName.equals(name)) {
            roles.get(m).add(r);
          }
        }
      }
    }
    for (JsonNode generation : cluster.path("logs")) {
      if (generation.path("current").asBoolean(false)) {
        for (JsonNode log : generation.path("log_interfaces")) {
          Member m = byAddress.get(stripFlags(log.path("address").asString()));
          if (m != null) {
            roles.get(m).add(Role.LOG);
          }
        }
      }
    }
    roles.replaceAll((m, r) -> Collections.unmodifiableSet(r));
    return Collections.unmodifiableMap(roles);
  }

  /**
   * The running process that holds {@code role} and the fewest other roles (so that killing it hits
   * that role alone where the layout allows), the lowest index among equals.
   *
   * @throws IllegalStateException if no running process holds the role
   */
  public Member holderOf(Role role) {
    Map<Member, Set<Role>> roles = roles();
    return roles.entrySet().stream()
        .filter(e -> e.getValue().contains(role) && isRunning(e.getKey()))
        .min(
            Comparator.<Map.Entry<Member, Set<Role>>>comparingInt(e -> e.getValue().size())
                .thenComparingInt(e -> e.getKey().index()))
        .map(Map.Entry::getKey)
        .orElseThrow(
            () -> new IllegalStateException("no running process holds " + role + ": " + roles));
  }

  /**
   * Kills the process holding {@code role} ({@link #holderOf}) with {@code SIGKILL}.
   *
   * @return the process killed, for {@link #restart}
   */
  public Member kill(Role role) {
    Member m = holderOf(role);
    kill(m);
    return m;
  }

  /**
   * Kills {@code member}'s process with {@code SIGKILL} and waits until it is gone: no clean
   * shutdown, as a crash, a power loss of its machine or the OOM killer would end it. Its data
   * stays for {@link #restart}.
   *
   * @throws IllegalStateException if it is not running
   */
  public synchronized void kill(Member member) {
    FdbProcess p = processes[member.index()];
    if (p == null) {
      throw new IllegalStateException(member + " is not running");
    }
    processes[member.index()] = null;
    p.kill();
  }

  /**
   * Starts {@code member}'s process again, on its port, with its data, class and zone. Returns once
   * the process runs; it rejoins the cluster on its own ({@link #awaitHealthy} waits for that).
   *
   * @throws IllegalStateException if it is running
   */
  public synchronized void restart(Member member) {
    requireOpen();
    if (processes[member.index()] != null) {
      throw new IllegalStateException(member + " is running");
    }
    processes[member.index()] = startProcess(member);
  }

  /**
   * The coordinators the cluster file names now (FoundationDB rewrites the file when they change).
   */
  public List<Member> coordinators() {
    String text;
    try {
      text = Files.readString(clusterFile).trim();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    Set<String> addresses =
        Arrays.stream(text.substring(text.indexOf('@') + 1).split(","))
            .map(LocalFdbCluster::stripFlags)
            .collect(Collectors.toSet());
    return members.stream().filter(m -> addresses.contains(m.address())).toList();
  }

  /**
   * Moves the coordinators to {@code coordinators} ({@code fdbcli --exec "coordinators ..."}): the
   * coordinated state is copied to the new set, the cluster recovers, and every process and client
   * rewrites its cluster file. Returns once {@code fdbcli} reports the change.
   *
   * @throws IllegalArgumentException if {@code coordinators} is empty
   * @throws IllegalStateException if the change did not succeed within a minute, with fdbcli's
   *     answer
   */
  public void changeCoordinators(List<Member> coordinators) {
    if (coordinators.isEmpty()) {
      throw new IllegalArgumentException("no coordinators");
    }
    String addresses = coordinators.stream().map(Member::address).collect(Collectors.joining(" "));
    cli.await(
        "coordinators " + addresses,
        out -> out.contains("Coordination state changed") || out.contains("No change"),
        Duration.ofMinutes(1),
        () -> true,
        () -> "");
  }

  /**
   * Waits until a transaction commits: a probe write through {@code fdbcli} (a key outside any
   * directory-layer prefix), retried every 200 ms.
   *
   * @param within how long to try
   * @return how long it took
   * @throws IllegalStateException if nothing committed within {@code within}
   */
  public Duration awaitAvailable(Duration within) {
    long start = System.nanoTime();
    cli.await(
        "writemode on; set dgen-fixture-probe " + start,
        out -> out.contains("Committed"),
        within,
        () -> true,
        () -> "");
    return Duration.ofNanos(System.nanoTime() - start);
  }

  /**
   * Waits until {@code status json} says the database is healthy and fully recovered: every process
   * that is up has rejoined, data is fully replicated, and no older log generation is still needed.
   * Between two faults, wait for this, or the second fault may be a double failure that the
   * redundancy mode does not promise to survive.
   *
   * @param within how long to wait
   * @return how long it took
   * @throws IllegalStateException if the cluster was not healthy within {@code within}, with the
   *     last status's summary
   */
  public Duration awaitHealthy(Duration within) {
    long start = System.nanoTime();
    long deadline = start + within.toNanos();
    String last = "";
    while (true) {
      try {
        JsonNode status = statusJson(PROBE_TIMEOUT);
        JsonNode cluster = status.path("cluster");
        boolean healthy = status.path("client").path("database_status").path("healthy").asBoolean();
        String recovery = cluster.path("recovery_state").path("name").asString();
        String data = cluster.path("data").path("state").path("name").asString();
        if (healthy && "fully_recovered".equals(recovery) && "healthy".equals(data)) {
          return Duration.ofNanos(System.nanoTime() - start);
        }
        last = "healthy=" + healthy + " recovery=" + recovery + " data=" + data;
      } catch (IllegalStateException e) {
        last = e.getMessage();
      }
      FdbCli.pause(deadline, "cluster not healthy within " + within + "; last status: " + last);
    }
  }

  /**
   * Runs {@code fdbcli --exec command} against this cluster and returns what it printed.
   *
   * @param command e.g. {@code "status details"}
   */
  public String fdbcli(String command) {
    return cli.run(command, Duration.ofSeconds(10));
  }

  /**
   * Keeps the processes' trace logs when the cluster is closed (the data is deleted either way); a
   * later start under the same parent removes them. Call it when a test failed.
   */
  public void preserveLogs() {
    keepLogs = true;
  }

  /** Stops every process (SIGTERM, forced after 15 s) and deletes the run directory. Idempotent. */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    for (int i = 0; i < processes.length; i++) {
      FdbProcess p = processes[i];
      processes[i] = null;
      if (p != null) {
        p.stop();
      }
    }
    if (keepLogs) {
      members.forEach(m -> RunDirectories.deleteRecursively(memberDirectory(m).resolve("data")));
    } else {
      RunDirectories.deleteRecursively(directory);
    }
    ShutdownHook hook = shutdownHook;
    if (hook != null) {
      hook.remove();
    }
  }

  @Override
  public String toString() {
    return "LocalFdbCluster{"
        + redundancy.configureName
        + " "
        + engine.configureName
        + ", "
        + members.stream().map(Member::toString).collect(Collectors.joining(", "))
        + ", directory="
        + directory
        + "}";
  }

  private void startAll() {
    String coordinators =
        members.stream()
            .filter(m -> initialCoordinators.contains(m.index()))
            .map(Member::address)
            .collect(Collectors.joining(","));
    String id = UUID.randomUUID().toString().replace("-", "").substring(0, 16);
    try {
      Files.writeString(clusterFile, "dgen:" + id + "@" + coordinators + "\n");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    shutdownHook = new ShutdownHook(this::close, "dgen-fdb-cluster-stop");
    synchronized (this) {
      for (Member m : members) {
        processes[m.index()] = startProcess(m);
      }
    }
    cli.await(
        "configure new " + redundancy.configureName + " " + engine.configureName,
        out -> out.contains("Database created") || out.contains("already exists"),
        READY,
        this::allRunning,
        () -> "a process exited: " + outputTails());
    awaitAvailable(READY);
  }

  private synchronized boolean allRunning() {
    return Arrays.stream(processes).allMatch(p -> p != null && p.isAlive());
  }

  private synchronized String outputTails() {
    return IntStream.range(0, processes.length)
        .mapToObj(i -> "p" + i + ": " + (processes[i] == null ? "-" : processes[i].outputTail()))
        .collect(Collectors.joining("\n"));
  }

  private FdbProcess startProcess(Member m) {
    Path dir = memberDirectory(m);
    try {
      Files.createDirectories(dir.resolve("data"));
      Files.createDirectories(dir.resolve("logs"));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    List<String> args = new ArrayList<>();
    args.addAll(
        List.of(
            "-p",
            m.address(),
            "-C",
            clusterFile.toString(),
            "-d",
            dir.resolve("data").toString(),
            "-L",
            dir.resolve("logs").toString(),
            "--locality-zoneid",
            m.zoneId(),
            "--locality-machineid",
            m.zoneId()));
    if (m.processClass() != ProcessClass.UNSET) {
      args.addAll(List.of("--class", m.processClass().argument));
    }
    knobs.forEach((name, value) -> args.add("--knob_" + name + "=" + value));
    return FdbProcess.start(installation.fdbserver(), args, dir);
  }

  private Path memberDirectory(Member m) {
    return directory.resolve("p" + m.index());
  }

  private synchronized void requireOpen() {
    if (closed) {
      throw new IllegalStateException("cluster closed");
    }
  }

  private JsonNode statusJson() {
    long deadline = System.nanoTime() + Duration.ofMinutes(1).toNanos();
    while (true) {
      try {
        return statusJson(Duration.ofSeconds(10));
      } catch (IllegalStateException e) {
        FdbCli.pause(deadline, "no status within a minute: " + e.getMessage());
      }
    }
  }

  private JsonNode statusJson(Duration timeout) {
    String out = cli.run("status json", timeout);
    int brace = out.indexOf('{');
    if (brace < 0) {
      throw new IllegalStateException("status json printed no document: " + out.trim());
    }
    JsonNode status;
    try {
      status = JSON.readTree(out.substring(brace));
    } catch (RuntimeException e) {
      throw new IllegalStateException("status json unreadable: " + e.getMessage(), e);
    }
    if (!status.path("client").path("coordinators").path("quorum_reachable").asBoolean(false)
        || status.path("cluster").path("processes").isMissingNode()) {
      throw new IllegalStateException(
          "status incomplete: " + status.path("client").path("messages"));
    }
    return status;
  }

  /** {@code 127.0.0.1:4500:tls} and the like: the address without its flags. */
  private static String stripFlags(String address) {
    int first = address.indexOf(':');
    int second = first < 0 ? -1 : address.indexOf(':', first + 1);
    return second < 0 ? address : address.substring(0, second);
  }

  /**
   * Options of a {@link LocalFdbCluster}: redundancy, storage engine, the processes' classes and
   * which of them coordinate. Not thread-safe; {@link #start} may be called more than once.
   */
  public static final class Builder {
    private final LocalFdbServer.Installation installation;
    private final Path parent;
    private Redundancy redundancy = Redundancy.DOUBLE;
    private Engine engine = Engine.MEMORY;
    private @Nullable List<ProcessClass> classes;
    private @Nullable Set<Integer> coordinators;
    private final Map<String, String> knobs = new LinkedHashMap<>();

    private Builder(LocalFdbServer.Installation installation, Path parent) {
      this.installation = Objects.requireNonNull(installation, "installation");
      this.parent = Objects.requireNonNull(parent, "parent");
    }

    /** The redundancy mode; default {@link Redundancy#DOUBLE}. */
    public Builder redundancy(Redundancy redundancy) {
      this.redundancy = Objects.requireNonNull(redundancy, "redundancy");
      return this;
    }

    /** The storage engine; default {@link Engine#MEMORY}. */
    public Builder engine(Engine engine) {
      this.engine = Objects.requireNonNull(engine, "engine");
      return this;
    }

    /**
     * One process per class given, in order; default the five-process layout of the class
     * documentation.
     *
     * @throws IllegalArgumentException if fewer than three (double) or five (triple) at start
     */
    public Builder processes(ProcessClass... classes) {
      this.classes = List.of(classes);
      return this;
    }

    /**
     * The indexes of the coordinators; default: one process of each class (three) for double
     * redundancy, five processes for triple.
     *
     * @throws IllegalArgumentException at start if an index is out of range, or if there are fewer
     *     than one
     */
    public Builder coordinators(int... indexes) {
      this.coordinators = Arrays.stream(indexes).boxed().collect(Collectors.toUnmodifiableSet());
      return this;
    }

    /**
     * Sets a server knob on every process ({@code --knob_<name>=<value>}); default none, so
     * FoundationDB's own defaults hold. For example {@code knob("initial_failure_reaction_delay",
     * "5")} lets data distribution report the cluster healthy about 5 s after it (re)starts instead
     * of 30 s, which shortens {@link #awaitHealthy} after a cluster controller was killed.
     *
     * @param name the knob's name, lower case, without {@code --knob_}
     * @param value its value
     */
    public Builder knob(String name, String value) {
      if (!name.matches("[a-z0-9_]+")) {
        throw new IllegalArgumentException("not a knob name: " + name);
      }
      knobs.put(name, Objects.requireNonNull(value, "value"));
      return this;
    }

    /**
     * Starts the processes in a new run directory, configures the database ({@code configure new
     * <redundancy> <engine>}) and waits until a transaction commits (a few seconds). Tries up to
     * three times with fresh ports (another process may take one between choosing and binding it).
     *
     * @return the running cluster; close it when done (a shutdown hook does otherwise)
     * @throws IllegalStateException if the cluster did not become available, with the processes'
     *     output
     */
    public LocalFdbCluster start() {
      List<ProcessClass> layout = layout();
      int minimum = redundancy == Redundancy.TRIPLE ? 5 : 3;
      if (layout.size() < minimum) {
        throw new IllegalArgumentException(
            redundancy + " redundancy needs at least " + minimum + " processes: " + layout);
      }
      coordinatorIndexes(layout);
      IllegalStateException failure = null;
      for (int attempt = 0; attempt < 3; attempt++) {
        List<Integer> ports = new ArrayList<>();
        while (ports.size() < layout.size()) {
          int port = RunDirectories.freePort();
          if (!ports.contains(port)) {
            ports.add(port);
          }
        }
        LocalFdbCluster cluster = new LocalFdbCluster(this, RunDirectories.create(parent), ports);
        try {
          cluster.startAll();
          return cluster;
        } catch (RuntimeException e) {
          cluster.preserveLogs();
          cluster.close();
          if (failure == null) {
            failure = new IllegalStateException("FoundationDB cluster did not start", e);
          } else {
            failure.addSuppressed(e);
          }
        }
      }
      throw failure;
    }

    private List<ProcessClass> layout() {
      return classes != null
          ? classes
          : List.of(
              ProcessClass.STATELESS,
              ProcessClass.TRANSACTION,
              ProcessClass.TRANSACTION,
              ProcessClass.STORAGE,
              ProcessClass.STORAGE);
    }

    private Set<Integer> coordinatorIndexes(List<ProcessClass> layout) {
      if (coordinators != null) {
        if (coordinators.isEmpty()
            || coordinators.stream().anyMatch(i -> i < 0 || i >= layout.size())) {
          throw new IllegalArgumentException(
              "coordinators " + coordinators + " out of range for " + layout.size() + " processes");
        }
        return coordinators;
      }
      int wanted = redundancy == Redundancy.TRIPLE ? 5 : 3;
      List<Integer> chosen = new ArrayList<>();
      // first one process of each class, then fill in index order
      for (int i = 0; i < layout.size() && chosen.size() < wanted; i++) {
        ProcessClass c = layout.get(i);
        if (chosen.stream().noneMatch(j -> layout.get(j) == c)) {
          chosen.add(i);
        }
      }
      for (int i = 0; i < layout.size() && chosen.size() < wanted; i++) {
        if (!chosen.contains(i)) {
          chosen.add(i);
        }
      }
      return Set.copyOf(chosen);
    }
  }
}
