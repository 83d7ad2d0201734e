package io.dgen;

import com.apple.foundationdb.subspace.Subspace;
import com.apple.foundationdb.tuple.Tuple;
import io.dgen.backend.Backend;
import io.dgen.internal.RuntimeCore;
import io.dgen.internal.RuntimeSettings;
import io.dgen.internal.base.OperationTimeouts;
import io.dgen.internal.codec.Migrations;
import io.dgen.internal.codec.Serde;
import io.dgen.internal.codec.StructuredStateCodec;
import io.dgen.internal.codec.TermStateCodec;
import io.dgen.internal.codec.TypeNames;
import io.dgen.internal.keys.Buckets;
import io.dgen.internal.limits.LimitKeys;
import io.dgen.internal.observe.Metrics;
import io.dgen.internal.observe.MicrometerMetrics;
import io.dgen.internal.observe.OtelTracing;
import io.dgen.internal.observe.RuntimeHooks;
import io.dgen.internal.observe.Tracing;
import io.micrometer.core.instrument.MeterRegistry;
import io.opentelemetry.api.OpenTelemetry;
import java.time.Clock;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;
import org.jspecify.annotations.Nullable;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;

/**
 * The entry point: a runtime of durable servers over one {@link Backend}. Every instance of a
 * service hosts the kinds of server it may run ({@link #host(Kind, Supplier, HostOptions)}); code
 * anywhere reaches a server by its kind and id ({@link #ref(Tenant, Kind, String)}), and the
 * server's first message creates it.
 *
 * <pre>{@code
 * try (DGen dgen = DGen.builder(MemoryBackend.create()).build()) {
 *   Tenant tenant = dgen.tenant("demo");
 *   dgen.host(Counter.KIND, Counter::new, HostOptions.builder(tenant).build()); // every replica
 *   ServerRef<Counter.Msg> hits = dgen.ref(tenant, Counter.KIND, "home"); // anywhere, by id
 *   hits.cast(new Counter.Increment(1));
 *   long value = hits.call(new Counter.Get()); // Get is a Call<Long>
 * }
 * }</pre>
 *
 * <p>{@link #start} is the other form: a server process you run yourself, in this runtime.
 *
 * <p>A {@code DGen} owns a small worker pool (sized by cores, not by servers) and the registry of
 * its processes' names. Its work never holds a thread while it waits for the database: consumer
 * batches are bounded by {@link Builder#maxBatchesInFlight}, not by threads; a hosted server
 * without work is not even loaded, and a loaded or started one that waits holds neither a thread
 * nor a watch (one watch per bucket of a tenant in use wakes them all). Closing it stops its
 * processes and releases its buckets to the other hosting runtimes; the durable state stays. It
 * does not close the backend. Thread-safe.
 */
public final class DGen implements AutoCloseable {

  private final Backend backend;
  private final RuntimeCore core;
  private final int bucketCount;

  private DGen(Builder b) {
    this.backend = b.backend;
    this.bucketCount = b.buckets;
    Serde serde =
        new Serde(b.mapper != null ? b.mapper : Serde.defaultMapper(), Migrations.of(b.migrations));
    this.core =
        new RuntimeCore(
            new RuntimeSettings(
                backend,
                serde,
                b.stateEncoding == StateEncoding.TERM
                    ? new TermStateCodec(serde)
                    : new StructuredStateCodec(serde),
                b.ticker,
                b.clock,
                b.executor,
                b.workerThreads,
                b.maxBatchesInFlight,
                b.retryInitial,
                b.retryMax,
                b.listener,
                new RuntimeHooks(b.backgroundConsumers, b.metrics, b.tracing),
                b.operationTimeout,
                b.leaseDuration,
                b.rateLimits,
                b.concurrencyLimits));
  }

  /**
   * Starts a builder over {@code backend}.
   *
   * @param backend the backend, e.g. {@code MemoryBackend.create()} or {@code FdbBackend.open()}
   * @return a builder with the defaults
   */
  public static Builder builder(Backend backend) {
    return new Builder(backend);
  }

  /** The backend. */
  public Backend backend() {
    return backend;
  }

  /** The runtime's shared parts, for the tests of this package. */
  RuntimeCore core() {
    return core;
  }

  /**
   * This runtime's id as a member of the tenants it hosts kinds in ({@link #host}): what the admin
   * API and the {@code dgen} CLI show as a lease's holder. Random per runtime.
   */
  public java.util.UUID memberId() {
    return core.memberId();
  }

  /**
   * Creates or opens the tenant at {@code path}: a directory of the backend.
   *
   * @param path one or more non-empty path elements
   * @return the tenant
   * @throws IllegalArgumentException if the path is empty or has an empty element
   */
  public Tenant tenant(String... path) {
    checkPath(path);
    return open(path, backend.directory(path));
  }

  /**
   * Opens the tenant at {@code path}, which must exist.
   *
   * @param path one or more non-empty path elements
   * @return the tenant
   * @throws UnknownTenantException if there is no such directory
   */
  public Tenant existingTenant(String... path) {
    checkPath(path);
    Subspace s =
        backend
            .openDirectory(path)
            .orElseThrow(() -> new UnknownTenantException("no tenant at path=" + List.of(path)));
    return open(path, s);
  }

  /** The tenant at {@code path} in {@code directory}, with its stored bucket count. */
  private Tenant open(String[] path, Subspace directory) {
    int buckets =
        Buckets.openOrCreate(backend, directory, bucketCount, "tenant=" + List.of(path)).count();
    return new Tenant(List.of(path), directory, buckets, this);
  }

  private static void checkPath(String[] path) {
    Objects.requireNonNull(path, "path must not be null");
    if (path.length == 0) {
      throw new IllegalArgumentException("a tenant path needs at least one element");
    }
    if (LimitKeys.RESERVED.equals(path[0])) {
      throw new IllegalArgumentException(
          "the top-level name " + LimitKeys.RESERVED + " is reserved for DGen: " + List.of(path));
    }
    for (String p : path) {
      if (p == null || p.isEmpty()) {
        throw new IllegalArgumentException(
            "tenant path elements must be non-empty: " + List.of(path));
      }
    }
  }

  /**
   * Starts a process of a durable server: runs {@code server.init(arg)}, writes the initial state
   * unless durable state exists (or {@code reset}), and starts consuming unless {@code consume} is
   * false.
   *
   * @param server the behaviour
   * @param arg the argument for {@code init}, may be null
   * @param options where and how to run
   * @param <S> the state type
   * @param <M> the message type
   * @return the process: a {@link ServerRef} for its clients, and {@link ProcessRef#stop} to stop
   *     it
   * @throws DGenException if {@code init} fails or refuses
   * @throws IllegalArgumentException if the tenant belongs to another {@code DGen}, the types
   *     cannot be resolved, or the options name a limit no runtime configured
   * @throws IllegalStateException if the name is taken
   */
  public <S, M> ProcessRef<M> start(
      DGenServer<S, M> server, @Nullable Object arg, StartOptions options) {
    Objects.requireNonNull(options, "options must not be null");
    checkTenant(options.tenant());
    core.checkLimits(options);
    return core.start(server, arg, options);
  }

  /**
   * Hosts the servers of {@code kind} in {@code options.tenant()}: this runtime may run them.
   * Servers are addressed by id with {@link #ref(Tenant, Kind, String)} and its twins, from any
   * runtime; each runs in exactly one of the runtimes that host its kind, the holder of its
   * bucket's lease, which loads it when it has work and drops it after {@link
   * HostOptions#idleTimeout()} without any. When a hosting runtime dies, the others take its
   * buckets once its lease expires ({@link Builder#leaseDuration}); when one joins, it takes its
   * share gradually. See {@code docs/scale-out.md}.
   *
   * <pre>{@code
   * static final Kind<Account.Msg> ACCOUNT = Kind.of("account", Account.Msg.class);
   *
   * dgen.host(ACCOUNT, Account::new, HostOptions.builder(bank).consumeK(16).build());
   * }</pre>
   *
   * <p><b>Creation and the id.</b> A server with no stored state is created by its first message:
   * its runtime calls {@code init} with the server's id, in the transaction that applies the
   * message. The id is what the server was addressed with, as a plain Java value: a {@code String}
   * for {@link #ref(Tenant, Kind, String)}, a {@code Long} for {@link #ref(Tenant, Kind, long)},
   * and for {@link #ref(Tenant, Kind, Tuple)} the {@code Tuple}, unless it holds one string or one
   * integer (then it is the same server as the string or long form, and its id is that {@code
   * String} or {@code Long}). Callbacks get the same value from {@link TxContext#id()} ({@link
   * DbContext#id()} in {@code handleLocked}), so a service needs no FoundationDB type to know which
   * server it is.
   *
   * <p><b>Types.</b> Every message to the kind's servers must be an instance of {@link
   * Kind#messageType()}: one that is not is refused with {@link IllegalArgumentException} before
   * anything is written, in every runtime that addresses the kind with this {@code Kind}. The
   * behaviour's own message type, when its class declares it ({@code class Account implements
   * DGenServer<State, Msg>}), must accept the kind's; a behaviour whose message type is a type
   * variable takes the kind's. A runtime gives a kind's name one message type, in all its tenants:
   * hosting or addressing the name with another one fails. Another runtime that hosts or addresses
   * the name with another type is not detected here: its messages reach the holder tagged with
   * their class, and the holder refuses a class its behaviour does not accept (see {@code
   * docs/scale-out.md}).
   *
   * @param kind the kind: its name (the first element of its servers' tuids) and message type
   * @param behaviour makes one behaviour instance per loaded server (and per ref of this runtime)
   * @param options applied to every server of the kind
   * @param <S> the state type
   * @param <M> the message type
   * @throws NullPointerException if an argument is null
   * @throws IllegalArgumentException if the options are refused (a limit no runtime configured, an
   *     expiry shorter than the lease), the tenant belongs to another {@code DGen}, the state type
   *     cannot be resolved, the behaviour does not accept the kind's message type, or this runtime
   *     hosts or addresses the kind's name with another message type
   * @throws IllegalStateException if this runtime hosts the kind in the tenant already
   */
  public <S, M> void host(
      Kind<M> kind, Supplier<? extends DGenServer<S, M>> behaviour, HostOptions options) {
    Objects.requireNonNull(kind, "kind must not be null");
    host(kind.name(), kind.messageType(), behaviour, options);
  }

  /**
   * Hosts servers of the kind named {@code kind}, with the behaviour's message type: as {@link
   * #host(Kind, Supplier, HostOptions)}, for code that chooses its types at run time. Its servers'
   * {@code init} gets their id as a {@code Tuple}, the tuid without the kind ({@code
   * Tuple.from(42)} for the tuid {@code ("account", 42)}), and so does {@link TxContext#id()}; the
   * message type is the one the behaviour's class declares. Host a kind the same way (by {@code
   * Kind} or by name) in every runtime: the id's shape is the holder's choice.
   *
   * <pre>{@code
   * dgen.host("account", Account::new, HostOptions.builder(bank).consumeK(16).build());
   * }</pre>
   *
   * @param kind the kind's name, not blank; the first element of its servers' tuids
   * @param behaviour makes one behaviour instance per loaded server (and per ref of this runtime)
   * @param options applied to every server of the kind
   * @param <S> the state type
   * @param <M> the message type
   * @throws IllegalArgumentException if the kind is blank, the options are refused (a limit no
   *     runtime configured, an expiry shorter than the lease), the tenant belongs to another {@code
   *     DGen}, the types cannot be resolved, or this runtime hosts or addresses the kind's name
   *     with another message type
   * @throws IllegalStateException if this runtime hosts the kind in the tenant already
   */
  public <S, M> void host(
      String kind, Supplier<? extends DGenServer<S, M>> behaviour, HostOptions options) {
    host(kind, null, behaviour, options);
  }

  private <S, M> void host(
      String kind,
      @Nullable Class<M> messageType,
      Supplier<? extends DGenServer<S, M>> behaviour,
      HostOptions options) {
    Kind.checkName(kind);
    Objects.requireNonNull(behaviour, "behaviour must not be null");
    Objects.requireNonNull(options, "options must not be null");
    checkTenant(options.tenant());
    core.checkLimits(options);
    core.host(options.tenant(), kind, messageType, behaviour, options);
  }

  /**
   * A handle on the server of {@code kind} with the string id {@code id} in {@code tenant}, usable
   * from any runtime, hosting the kind or not. Its tuid is {@code (kind name, id)}; its {@code
   * init} and {@link TxContext#id()} get {@code id}, a {@code String}. Making it runs no
   * transaction and starts nothing; every {@link ServerRef} operation works through it, and refuses
   * a message that is not an instance of the kind's message type with {@link
   * IllegalArgumentException} before anything is written. Its first message creates the server. A
   * ref stays usable after {@link io.dgen.admin.ServerControl#kill}: the next message creates the
   * server anew. See {@link #host(Kind, Supplier, HostOptions)}.
   *
   * <pre>{@code
   * ServerRef<Account.Msg> account = dgen.ref(bank, ACCOUNT, "alice");
   * long balance = account.call(new Account.Balance()); // Balance is a Call<Long>
   * }</pre>
   *
   * <p>In a runtime that does not host the kind, messages are tagged with their class (the holder
   * refuses a class its behaviour does not accept) and replies decode as JDK values or as the type
   * a call names ({@link ServerRef#call(Object, Class, Duration)}).
   *
   * @param tenant the tenant, from this {@code DGen}
   * @param kind the kind
   * @param id the server's id within its kind
   * @param <M> the message type
   * @return the handle
   * @throws NullPointerException if an argument is null
   * @throws IllegalArgumentException if the tenant belongs to another {@code DGen}, or this runtime
   *     hosts or addresses the kind's name with another message type
   */
  public <M> ServerRef<M> ref(Tenant tenant, Kind<M> kind, String id) {
    Objects.requireNonNull(id, "id must not be null");
    return ref(tenant, kind, Tuple.from(id));
  }

  /**
   * A handle on the server of {@code kind} with the integer id {@code id} in {@code tenant}: as
   * {@link #ref(Tenant, Kind, String)}. Its tuid is {@code (kind name, id)}; its {@code init} and
   * {@link TxContext#id()} get {@code id}, a {@code Long}.
   *
   * @param tenant the tenant, from this {@code DGen}
   * @param kind the kind
   * @param id the server's id within its kind
   * @param <M> the message type
   * @return the handle
   * @throws NullPointerException if the tenant or the kind is null
   * @throws IllegalArgumentException if the tenant belongs to another {@code DGen}, or this runtime
   *     hosts or addresses the kind's name with another message type
   */
  public <M> ServerRef<M> ref(Tenant tenant, Kind<M> kind, long id) {
    return ref(tenant, kind, Tuple.from(id));
  }

  /**
   * A handle on the server of {@code kind} with a composite id in {@code tenant}: as {@link
   * #ref(Tenant, Kind, String)}. Its tuid is the kind's name followed by {@code id}'s elements:
   * {@code ref(bank, ACCOUNT, Tuple.from("eu", 42)).tuid()} is {@code ("account", "eu", 42)}. Its
   * {@code init} and {@link TxContext#id()} get {@code id}, except that an id of one string or one
   * integer is the server the {@code String} or {@code long} form addresses, and its id is that
   * {@code String} or {@code Long}.
   *
   * @param tenant the tenant, from this {@code DGen}
   * @param kind the kind
   * @param id the server's id within its kind
   * @param <M> the message type
   * @return the handle
   * @throws NullPointerException if an argument is null
   * @throws IllegalArgumentException if the tenant belongs to another {@code DGen}, or this runtime
   *     hosts or addresses the kind's name with another message type
   */
  public <M> ServerRef<M> ref(Tenant tenant, Kind<M> kind, Tuple id) {
    Objects.requireNonNull(tenant, "tenant must not be null");
    Objects.requireNonNull(kind, "kind must not be null");
    Objects.requireNonNull(id, "id must not be null");
    checkTenant(tenant);
    return core.ref(
        tenant,
        kind.name(),
        kind.messageType(),
        Tuple.from(kind.name()).addAll(id),
        StartOptions.builder(tenant).build());
  }

  /**
   * A handle on the server of the kind named {@code kind} with id {@code tuid} in {@code tenant}:
   * as {@link #ref(Tenant, Kind, Tuple)}, for code that chooses its types at run time. The caller
   * names the message type; it is checked only where the kind is hosted (by the behaviour's types)
   * or was addressed by a {@link Kind} in this runtime. The server's tuid is the kind followed by
   * {@code tuid}'s elements ({@code ref(bank, "account", Tuple.from(42)).tuid()} is {@code
   * ("account", 42)}).
   *
   * @param tenant the tenant, from this {@code DGen}
   * @param kind the kind's name
   * @param tuid the server's id within its kind
   * @param <M> the message type
   * @return the handle
   * @throws IllegalArgumentException if the kind is blank or the tenant belongs to another {@code
   *     DGen}
   */
  public <M> ServerRef<M> ref(Tenant tenant, String kind, Tuple tuid) {
    Objects.requireNonNull(tenant, "tenant must not be null");
    Objects.requireNonNull(tuid, "tuid must not be null");
    Kind.checkName(kind);
    checkTenant(tenant);
    return core.ref(
        tenant, kind, null, Tuple.from(kind).addAll(tuid), StartOptions.builder(tenant).build());
  }

  /**
   * Runs {@code body} as one transaction across servers of {@code tenant}: its calls and casts run
   * each server's callback now, inline, against its durable state, and everything commits together
   * or nothing does: the states, what the callbacks wrote (timers, outbox casts, keys), your own
   * writes through {@link Atomic#transaction()}; post-commit actions run once, after the commit.
   * See {@link Atomic} for the order with each server's queue, the limits and what aborts it, and
   * {@code docs/atomic-work.md} for when to prefer the outbox (most of the time).
   *
   * <p><b>The body may run more than once</b> (conflicts, a busy server's turn, {@code
   * commit_unknown_result}): keep side effects out of it. It runs in the calling thread and blocks
   * on each server's reads.
   *
   * @param tenant the tenant, from this {@code DGen}
   * @param body the work
   * @param <T> what the body returns
   * @return the body's value, once the transaction committed
   * @throws CallRejectedException if a callback refused ({@link TerminalException}); nothing was
   *     committed
   * @throws ServerBusyException if a called server's queue or lock kept it busy for {@link
   *     Atomic#BUSY_WAIT}; nothing was committed, and the transaction may be retried
   * @throws CallbackException if a callback threw; nothing was committed, and it is not retried
   * @throws TransactionTooLongException if the body ran past FoundationDB's transaction time
   * @throws IllegalArgumentException if the tenant or a server is another {@code DGen}'s, or a
   *     server's behaviour is not in this runtime
   * @throws BackendFailureException if the backend failed the transaction
   */
  public <T> T transact(Tenant tenant, AtomicBody<T> body) {
    Objects.requireNonNull(tenant, "tenant must not be null");
    checkTenant(tenant);
    return core.atomic(tenant).transact(body);
  }

  /**
   * {@link #transact} on a runtime thread: the body runs there (it blocks on its reads), and the
   * future completes with what {@code transact} returns or fails with what it throws.
   *
   * @param tenant the tenant, from this {@code DGen}
   * @param body the work
   * @param <T> what the body returns
   * @return a future of the body's value, once the transaction committed
   */
  public <T> CompletableFuture<T> transactAsync(Tenant tenant, AtomicBody<T> body) {
    Objects.requireNonNull(tenant, "tenant must not be null");
    checkTenant(tenant);
    return core.atomic(tenant).transactAsync(body);
  }

  private void checkTenant(Tenant tenant) {
    if (!tenant.belongsTo(this)) {
      throw new IllegalArgumentException(
          "tenant " + tenant + " belongs to another DGen; use this DGen's tenant()");
    }
  }

  /**
   * The live process registered under {@code name} in this {@code DGen}. The caller names the
   * message type; it is not checked.
   *
   * @param name the name
   * @param <M> the message type
   * @return the reference, if a live process has that name
   */
  @SuppressWarnings("unchecked")
  public <M> Optional<ServerRef<M>> whereis(String name) {
    Objects.requireNonNull(name, "name must not be null");
    return core.whereis(name).map(p -> (ServerRef<M>) p);
  }

  /**
   * Tells this runtime that its {@link Builder#clock clock} jumped ahead, as a manual clock in a
   * test does: the timers due by the clock's new time, in the buckets where this runtime fires
   * timers (those it holds a lease in for a hosted kind, and those its started processes live in),
   * are moved into their servers' queues before this returns (in the caller's thread), instead of
   * after the real time that the runtime computed from the clock's earlier reading, and the hosted
   * servers expired by then ({@link HostOptions.Builder#expireAfter}) in the buckets it holds are
   * collected. Not needed with a real clock.
   */
  public void clockAdvanced() {
    core.clockAdvanced();
  }

  /** Stops every process of this {@code DGen} (durable state stays) and its threads. */
  @Override
  public void close() {
    core.close();
  }

  /** Builds a {@link DGen}. Not thread-safe. */
  public static final class Builder {

    /** The default of {@link #maxBatchesInFlight}: 256. */
    public static final int DEFAULT_MAX_BATCHES_IN_FLIGHT = 256;

    private final Backend backend;
    private @Nullable ObjectMapper mapper;
    private LongSupplier ticker = System::nanoTime;
    private Clock clock = Clock.systemUTC();
    private @Nullable Executor executor;
    private boolean workerThreadsSet;
    private int workerThreads = Math.max(2, Runtime.getRuntime().availableProcessors());
    private int maxBatchesInFlight = DEFAULT_MAX_BATCHES_IN_FLIGHT;
    private Duration retryInitial = Duration.ofMillis(10);
    private Duration retryMax = Duration.ofSeconds(2);
    private StateEncoding stateEncoding = StateEncoding.STRUCTURED;
    private DGenListener listener = new DGenListener() {};
    private boolean backgroundConsumers = true;
    private Metrics metrics = Metrics.NONE;
    private Tracing tracing = RuntimeHooks.globalTracing();
    private Duration operationTimeout = OperationTimeouts.DEFAULT;
    private int buckets = Buckets.DEFAULT_COUNT;
    private Duration leaseDuration = Duration.ofSeconds(5);
    private final Map<String, Map<Integer, UnaryOperator<JsonNode>>> migrations =
        new LinkedHashMap<>();
    private final Map<String, LimitKeys.RateConfig> rateLimits = new LinkedHashMap<>();
    private final Map<String, Integer> concurrencyLimits = new LinkedHashMap<>();

    private Builder(Backend backend) {
      this.backend = Objects.requireNonNull(backend, "backend must not be null");
    }

    /**
     * The Jackson mapper for messages, replies and state, used as given. Default: a Smile mapper
     * with Jackson's defaults that constructs records through a handle prepared once per type
     * (Jackson 3.3 builds a spreader per constructor call). Must produce a binary format that it
     * can read back.
     *
     * @param mapper the mapper
     * @return this builder
     */
    public Builder objectMapper(ObjectMapper mapper) {
      this.mapper = Objects.requireNonNull(mapper, "mapper must not be null");
      return this;
    }

    /**
     * The nanosecond clock used to measure transaction age. Default {@link System#nanoTime()};
     * tests inject a manual one.
     *
     * @param ticker the clock
     * @return this builder
     */
    public Builder ticker(LongSupplier ticker) {
      this.ticker = Objects.requireNonNull(ticker, "ticker must not be null");
      return this;
    }

    /**
     * The wall clock used for lock ages ({@code lockTimeout}), timestamps of dead letters and reply
     * slots, hosted servers' expiry ({@link HostOptions.Builder#expireAfter}), and the due times of
     * timers ({@link ServerRef#castAfter}); a manual clock in a test tells the runtime it advanced
     * through {@link DGen#clockAdvanced()}. Default {@link Clock#systemUTC()}. Every process of a
     * server, in every JVM, should have clocks that agree to well within the lock timeout. Commit
     * markers are not aged by it: they are keyed and swept by the backend's run ids ({@link
     * io.dgen.backend.RunIds}), so this clock cannot make them expire early or never.
     *
     * @param clock the clock
     * @return this builder
     */
    public Builder clock(Clock clock) {
      this.clock = Objects.requireNonNull(clock, "clock must not be null");
      return this;
    }

    /**
     * The number of worker threads that run callbacks, actions and the runtime's own steps (a
     * batch's decoding and state diff, a reply's decoding), when no {@link #executor} is given.
     * They only compute: no step of the runtime waits for the database on them. Default: the number
     * of cores, at least 2.
     *
     * @param threads at least 1
     * @return this builder
     * @throws IllegalArgumentException if {@code threads < 1}
     */
    public Builder workerThreads(int threads) {
      if (threads < 1) {
        throw new IllegalArgumentException("workerThreads must be at least 1, was " + threads);
      }
      this.workerThreads = threads;
      this.workerThreadsSet = true;
      return this;
    }

    /**
     * The executor that runs callbacks ({@code handle*}), post-commit actions and the runtime's own
     * steps, instead of the runtime's pool of {@link #workerThreads} threads. On JDK 21 or later,
     * {@code Executors.newVirtualThreadPerTaskExecutor()} suits callbacks that block (a {@code
     * TxContext} read waits for the database). The runtime never shuts it down; it must outlive the
     * {@code DGen}. Default: none (the runtime's own pool).
     *
     * @param executor the executor; it must not run tasks in the submitting thread
     * @return this builder
     */
    public Builder executor(Executor executor) {
      this.executor = Objects.requireNonNull(executor, "executor must not be null");
      return this;
    }

    /**
     * The most consumer batches of this runtime's processes (all servers together) that may be in
     * flight at once: from the start of a batch's transaction until its commit is known. A batch in
     * flight holds no thread, only memory (its messages and state) and an open transaction, so the
     * bound is sized by throughput × database latency, not by cores: the default, {@value
     * #DEFAULT_MAX_BATCHES_IN_FLIGHT}, lets one runtime complete about 50,000 batches a second at 5
     * ms each. One process never has more than one batch in flight; beyond the bound, ready
     * processes wait their turn in order.
     *
     * @param max at least 1
     * @return this builder
     * @throws IllegalArgumentException if {@code max < 1}
     */
    public Builder maxBatchesInFlight(int max) {
      if (max < 1) {
        throw new IllegalArgumentException("maxBatchesInFlight must be at least 1, was " + max);
      }
      this.maxBatchesInFlight = max;
      return this;
    }

    /**
     * The backoff after a failed consumer batch: starts at {@code initial}, doubles per consecutive
     * failure, capped at {@code max}. Default 10 ms to 2 s.
     *
     * @param initial positive
     * @param max at least {@code initial}
     * @return this builder
     * @throws IllegalArgumentException if the bounds are not positive and ordered
     */
    public Builder retryBackoff(Duration initial, Duration max) {
      Objects.requireNonNull(initial, "initial must not be null");
      Objects.requireNonNull(max, "max must not be null");
      if (initial.isNegative() || initial.isZero() || max.compareTo(initial) < 0) {
        throw new IllegalArgumentException(
            "retryBackoff needs 0 < initial <= max, was " + initial + ", " + max);
      }
      this.retryInitial = initial;
      this.retryMax = max;
      return this;
    }

    /**
     * How servers' states are laid out in the store. Default {@link StateEncoding#STRUCTURED}: by
     * shape, so that a small change writes a small diff. {@link StateEncoding#TERM} stores each
     * state as one chunked document. Either encoding reads what the other wrote; see {@code
     * docs/state-encodings.md}.
     *
     * @param encoding the encoding
     * @return this builder
     */
    public Builder stateEncoding(StateEncoding encoding) {
      this.stateEncoding = Objects.requireNonNull(encoding, "encoding must not be null");
      return this;
    }

    /**
     * The listener that hears events such as a lock holder fenced after its lock was busted.
     * Default: one that ignores them (each is logged anyway).
     *
     * @param listener the listener; thread-safe, see {@link DGenListener}
     * @return this builder
     */
    public Builder listener(DGenListener listener) {
      this.listener = Objects.requireNonNull(listener, "listener must not be null");
      return this;
    }

    /**
     * Whether processes consume their queues in the background (default true). With {@code false},
     * a process consumes only when a test drives it: the test kit ({@code dgen-test-kit}) runs its
     * queue to empty in the calling thread, deterministically. Calls on a process whose queue is
     * empty still run inline; a call that has to queue waits for such a drain. A hosted kind
     * ({@link DGen#host}) is held at once: {@code host} returns once a placement round has run
     * (which takes every bucket of a runtime alone in its backend), and its servers are loaded in
     * the caller's thread by a drain or a call, never in the background. For tests only.
     *
     * @param background whether to start consume loops
     * @return this builder
     */
    public Builder backgroundConsumers(boolean background) {
      this.backgroundConsumers = background;
      return this;
    }

    /**
     * Records the runtime's meters in {@code registry} (see {@code docs/operations.md}, "Metrics"):
     * messages, batches, retries, dead letters, locks, calls, sampled queue lengths, watches and
     * processes, tagged by tenant and behaviour. Needs {@code io.micrometer:micrometer-core} on the
     * class path, an optional dependency of the runtime; without this call the runtime records
     * nothing and does not need Micrometer.
     *
     * @param registry the registry, e.g. a {@code PrometheusMeterRegistry}
     * @return this builder
     */
    public Builder meterRegistry(MeterRegistry registry) {
      this.metrics = new MicrometerMetrics(registry);
      return this;
    }

    /**
     * Traces messages through the queues with {@code openTelemetry} (see {@code docs/tracing.md}):
     * an item carries its publisher's trace context, and its processing is a span of that trace,
     * around which post-commit actions and {@code handleLocked} run. Needs {@code
     * io.opentelemetry:opentelemetry-api} on the class path, an optional dependency of the runtime.
     * Default: {@code GlobalOpenTelemetry} once it is set (by the Java agent or the application;
     * the runtime never sets it, nor fixes it by asking early), if the API is on the class path;
     * else nothing is traced. Without an SDK, tracing costs next to nothing.
     *
     * @param openTelemetry e.g. an {@code OpenTelemetrySdk}, or {@code OpenTelemetry.noop()} to
     *     trace nothing (no capture, no restore: as without the API)
     * @return this builder
     */
    public Builder openTelemetry(OpenTelemetry openTelemetry) {
      this.tracing =
          OtelTracing.of(Objects.requireNonNull(openTelemetry, "openTelemetry must not be null"));
      return this;
    }

    /**
     * How long an operation of a caller waits for a cluster that does not answer before it fails
     * with {@link OperationTimeoutException}, naming the server and the timeout: {@code cast},
     * {@code castAll}, {@code castAfter}, {@code castAt}, keyed casts and calls, {@code submit},
     * the push of a {@code call} or {@code callAsync} (before its reply is waited for, under the
     * call's own timeout; an inline call's whole transaction), {@code kill}, {@code queueLength},
     * {@code cancelTimer} and the dead-letter calls. Priority messages are not bounded. Such a
     * failure leaves the outcome unknown (an attempt already sent may still commit): see {@link
     * OperationTimeoutException}. Default 30 seconds, well under the one minute a runtime
     * transaction may retry.
     *
     * <p>An interrupt of the calling thread does not cut the wait short: the operation completes
     * (or times out) and its outcome is reported, with the thread's interrupt flag set.
     *
     * @param timeout positive
     * @return this builder
     * @throws IllegalArgumentException if {@code timeout} is zero or negative
     */
    public Builder operationTimeout(Duration timeout) {
      this.operationTimeout = OperationTimeouts.check(timeout);
      return this;
    }

    /**
     * How many buckets a tenant's servers hash into, stored when this runtime opens a tenant that
     * has no count stored yet. A tenant's stored count always wins: a runtime configured with
     * another one logs a warning and uses the stored count, since a change would move every server
     * to another bucket. Buckets bound how finely servers spread over the runtimes that host them
     * and how a lease moves; use at least 40 times the most runtimes you expect to host one tenant.
     * See {@code docs/scale-out.md}. Default {@value Buckets#DEFAULT_COUNT}.
     *
     * @param count between 1 and {@value Buckets#MAX_COUNT}
     * @return this builder
     * @throws IllegalArgumentException if out of range
     */
    public Builder buckets(int count) {
      this.buckets = Buckets.checkCount(count);
      return this;
    }

    /**
     * How long this runtime's leases outlive its last heartbeat when it hosts kinds ({@link
     * DGen#host}): a runtime that dies, or stalls, loses its buckets to the others this long after
     * its last heartbeat, as they see it (each judges on its own clock; no clocks are compared).
     * Heartbeats go every fifth of it. Shorter fails over faster and costs more heartbeats; a
     * garbage collection pause or a stall longer than the lease moves this runtime's buckets
     * (nothing is lost or applied twice: the lease's epoch fences the old holder). Default 5 s.
     *
     * @param lease at least 100 ms
     * @return this builder
     * @throws IllegalArgumentException if shorter than 100 ms
     */
    public Builder leaseDuration(Duration lease) {
      Objects.requireNonNull(lease, "lease must not be null");
      if (lease.compareTo(Duration.ofMillis(100)) < 0) {
        throw new IllegalArgumentException("leaseDuration must be at least 100 ms, was " + lease);
      }
      this.leaseDuration = lease;
      return this;
    }

    /**
     * Registers the step that migrates data of type {@code typeName} stored at {@code fromVersion}
     * to {@code fromVersion + 1}. Data stored at a version below its class's {@link
     * TypeName#version()} runs through every step from its version up to the class's before it is
     * decoded: state (in every encoding, migrated as a whole tree; the next write stores it at the
     * current version), queued messages, timers, dead letters, the message of a lock and kept
     * replies. A step gets the stored tree (its own copy, which it may change) and returns the tree
     * of the next version:
     *
     * <pre>{@code
     * DGen.builder(backend)
     *     .migration("account", 1, tree -> {
     *       ObjectNode o = (ObjectNode) tree;
     *       o.put("cents", o.get("balance").asLong() * 100); // balance in units became cents
     *       o.remove("balance");
     *       return o;
     *     })
     *     .build();
     * }</pre>
     *
     * <p>Steps may run many times for the same data (on every read until the data is rewritten, and
     * on retried transactions): they must be pure functions of the tree. A type at version {@code
     * n} needs the steps from 1 to {@code n - 1}: a missing one is refused by {@link #build()} (a
     * gap among a name's steps) or by {@code start}/{@code host} (a server allowing the type),
     * never when data is read.
     *
     * @param typeName the type's logical name ({@link TypeName#value()})
     * @param fromVersion the version the step reads, at least 1
     * @param step the migration, a pure function
     * @return this builder
     * @throws IllegalArgumentException if the name is invalid, the version is below 1, or a step
     *     for that name and version is registered already
     */
    public Builder migration(String typeName, int fromVersion, UnaryOperator<JsonNode> step) {
      TypeNames.checkName(typeName, "migration type name");
      Objects.requireNonNull(step, "step must not be null");
      if (fromVersion < 1) {
        throw new IllegalArgumentException(
            "migration of '"
                + typeName
                + "' from version "
                + fromVersion
                + ": versions start at 1");
      }
      if (migrations
              .computeIfAbsent(typeName, k -> new LinkedHashMap<>())
              .putIfAbsent(fromVersion, step)
          != null) {
        throw new IllegalArgumentException(
            "a migration of '"
                + typeName
                + "' from version "
                + fromVersion
                + " is registered already");
      }
      return this;
    }

    /**
     * Configures the rate limit {@code name}: a token bucket refilled at {@code permitsPerSecond}
     * and holding at most {@code burst} permits, shared by every server that names it with {@link
     * ServerOptions.Builder#rateLimit}, in every runtime. The configuration is stored when the
     * runtime is built, so that every runtime enforces the same numbers; a value that differs from
     * the stored one replaces it, and the change is logged. Over any window of {@code w} seconds
     * the servers naming it consume at most {@code burst + permitsPerSecond × w} messages, plus
     * {@code permitsPerSecond × 0.22 s} of slack (see {@code docs/limits.md}). Each runtime
     * reserves slices of the rate (about 0.2 s of it per transaction), so the bucket's key is
     * written a few times per second whatever the rate.
     *
     * @param name the limit's name, not blank
     * @param permitsPerSecond positive and finite
     * @param burst at least 1
     * @return this builder
     * @throws IllegalArgumentException if an argument is out of range
     */
    public Builder rateLimit(String name, double permitsPerSecond, int burst) {
      ServerOptions.Builder.checkLimitName(name);
      if (!(permitsPerSecond > 0) || Double.isInfinite(permitsPerSecond)) {
        throw new IllegalArgumentException(
            "permitsPerSecond must be positive and finite, was " + permitsPerSecond);
      }
      if (burst < 1) {
        throw new IllegalArgumentException("burst must be at least 1, was " + burst);
      }
      rateLimits.put(name, new LimitKeys.RateConfig(permitsPerSecond, burst));
      return this;
    }

    /**
     * Configures the concurrency limit {@code name}: at most {@code limit} servers naming it with
     * {@link ServerOptions.Builder#concurrencyLimit} are inside {@code handleLocked} at once,
     * across all runtimes. Stored when the runtime is built, like {@link #rateLimit}; a changed
     * value replaces the stored one and is logged (holders above a lowered limit finish their run).
     *
     * @param name the limit's name, not blank
     * @param limit between 1 and 10,000
     * @return this builder
     * @throws IllegalArgumentException if an argument is out of range
     */
    public Builder concurrencyLimit(String name, int limit) {
      ServerOptions.Builder.checkLimitName(name);
      if (limit < 1 || limit > LimitKeys.MAX_CONCURRENCY) {
        throw new IllegalArgumentException(
            "a concurrency limit must be between 1 and "
                + LimitKeys.MAX_CONCURRENCY
                + ", was "
                + limit);
      }
      concurrencyLimits.put(name, limit);
      return this;
    }

    /**
     * Builds the runtime.
     *
     * @return the runtime
     * @throws IllegalArgumentException if both {@link #executor} and {@link #workerThreads} were
     *     set (the threads would never be made), or a type's migrations have a gap (see {@link
     *     #migration})
     */
    public DGen build() {
      if (executor != null && workerThreadsSet) {
        throw new IllegalArgumentException(
            "set either executor or workerThreads, not both: workerThreads sizes the runtime's own"
                + " pool, which an executor replaces");
      }
      return new DGen(this);
    }
  }
}
