package io.dgen.internal;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.DGenServer;
import io.dgen.HostOptions;
import io.dgen.ProcessRef;
import io.dgen.ServerOptions;
import io.dgen.ServerRef;
import io.dgen.StartOptions;
import io.dgen.Tenant;
import io.dgen.backend.Backend;
import io.dgen.internal.atomic.AtomicWork;
import io.dgen.internal.base.BatchPermits;
import io.dgen.internal.base.BoundedPool;
import io.dgen.internal.base.DeferredClears;
import io.dgen.internal.base.OperationTimeouts;
import io.dgen.internal.base.RuntimeServices;
import io.dgen.internal.codec.TypeRegistry;
import io.dgen.internal.consume.ConsumeGroups;
import io.dgen.internal.hosting.Expiry;
import io.dgen.internal.hosting.HostedKind;
import io.dgen.internal.hosting.Hosting;
import io.dgen.internal.hosting.MessageTypes;
import io.dgen.internal.idempotency.Sweeper;
import io.dgen.internal.keys.Buckets;
import io.dgen.internal.limits.Limits;
import io.dgen.internal.observe.RuntimeHooks;
import io.dgen.internal.observe.TrackedBackend;
import io.dgen.internal.process.LocalProcesses;
import io.dgen.internal.process.ProcessContext;
import io.dgen.internal.process.ProcessKind;
import io.dgen.internal.process.ServerProcess;
import io.dgen.internal.queue.KindTypes;
import io.dgen.internal.queue.PushGroups;
import io.dgen.internal.tenant.TenantRuntime;
import java.nio.ByteBuffer;
import java.time.Clock;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import tools.jackson.databind.JavaType;

/**
 * The composition root of one {@code DGen}: it builds the runtime's services ({@link
 * RuntimeServices}: the backend, the mapper, the executor that runs callbacks and the steps of
 * asynchronous work, the bound on batches in flight, a scheduler for backoff and timeouts, a pool
 * for rare blocking work, the clocks), and the components that use them: per tenant a doorbell
 * watcher (one watch per bucket in use), the placement of the kinds hosted there and the runner of
 * atomic work; the limits; the groups that share transactions; the registry of live processes and
 * names. It hands each component what it uses, never itself.
 *
 * <p>Idle processes hold neither a thread nor a watch: the executor is sized by cores, the batches
 * in flight by a configured bound, and the watches by the buckets in use (held leases, started
 * processes, waiting calls), not by servers.
 *
 * <p>Threading: thread-safe; the registries are concurrent maps (starting or stopping a process is
 * O(1)).
 */
public final class RuntimeCore implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(RuntimeCore.class);

  /**
   * The most threads of a runtime's pool for blocking steps: {@code handleLocked} runs (one per
   * server in lock mode at a time), failure records and the retries of pushes whose callers wait.
   */
  static final int MAX_BLOCKING_THREADS = 256;

  /** The most steps that wait for one of those threads. */
  static final int MAX_QUEUED_BLOCKING = 10_000;

  private final TrackedBackend backend;
  private final RuntimeServices services;
  private final ProcessContext wiring;
  private final @Nullable ExecutorService ownExecutor;
  private final ScheduledThreadPoolExecutor scheduler;
  private final ExecutorService blocking;
  private final PushGroups pushGroups;
  private final ConsumeGroups consumeGroups;
  private final LocalProcesses processes = new LocalProcesses();
  private final Map<ByteBuffer, TenantRuntime> tenants = new ConcurrentHashMap<>();
  private final Map<ByteBuffer, Hosting> hostings = new ConcurrentHashMap<>();
  private final Map<ByteBuffer, AtomicWork> atomics = new ConcurrentHashMap<>();
  private final Duration leaseDuration;
  private final Limits limits;
  private volatile @Nullable ExecutorService placementThread;

  /** The message type this runtime gives each kind's name it hosts or addresses by type. */
  private final Map<String, Class<?>> kindMessageTypes = new ConcurrentHashMap<>();

  /**
   * Creates the runtime and its services.
   *
   * @param settings what {@code DGen.Builder} configured
   */
  public RuntimeCore(RuntimeSettings settings) {
    this.leaseDuration = settings.leaseDuration();
    RuntimeHooks hooks = settings.hooks();
    this.backend = new TrackedBackend(settings.backend(), hooks.metrics());
    this.ownExecutor =
        settings.executor() == null
            ? Executors.newFixedThreadPool(settings.workerThreads(), daemonThreads("dgen-worker-"))
            : null;
    Executor executor = settings.executor() != null ? settings.executor() : ownExecutor;
    this.scheduler = new ScheduledThreadPoolExecutor(1, daemonThreads("dgen-scheduler-"));
    // every call schedules its deadline and cancels it when the reply comes: drop cancelled
    // timers at once rather than holding them until they would have been due
    scheduler.setRemoveOnCancelPolicy(true);
    // handleLocked may run for long outside any transaction, and a few rare steps (recording a
    // failed item) wait for a commit: they get threads of their own, made on demand and dropped
    // when idle, so that they never hold the executor's threads. Bounded, so that a cluster that
    // stops answering cannot grow them without end: a refused step is retried after a backoff.
    this.blocking =
        BoundedPool.create(
            "dgen-blocking-",
            MAX_BLOCKING_THREADS,
            MAX_QUEUED_BLOCKING,
            "blocking steps of this runtime (handleLocked, failure records, push retries)");
    this.services =
        new RuntimeServices(
            backend,
            settings.serde(),
            settings.codec(),
            executor,
            new BatchPermits(settings.maxBatchesInFlight(), executor),
            scheduler,
            blocking,
            new DeferredClears(settings.backend(), scheduler),
            settings.ticker(),
            settings.clock(),
            settings.retryInitial(),
            settings.retryMax(),
            hooks,
            new OperationTimeouts(settings.operationTimeout()),
            UUID.randomUUID(),
            settings.listener());
    this.pushGroups = new PushGroups(blocking, scheduler, hooks.metrics());
    this.consumeGroups = new ConsumeGroups(executor, services::nanoTime, hooks.metrics());
    measureClockSkew();
    this.limits =
        new Limits(
            services, new Limits.Config(settings.rateLimits(), settings.concurrencyLimits()));
    limits.store();
    this.wiring =
        new ProcessContext(services, processes, this::tenant, limits, pushGroups, consumeGroups);
    hooks
        .metrics()
        .runtime(
            processes::size,
            () -> tenants.values().stream().mapToInt(TenantRuntime::watches).sum());
  }

  /**
   * How far this runtime's clock may be from the backend's before it says so: reply slots are swept
   * {@link Sweeper#SLOT_SKEW_MARGIN} after their call could end at most, and commit markers are
   * kept nine minutes longer than a run may retry, so a minute is well within both.
   */
  static final long MAX_CLOCK_SKEW_MILLIS = TimeUnit.MINUTES.toMillis(1);

  /** The runtime's clock minus the backend's, once measured ({@link Long#MIN_VALUE} before). */
  private volatile long clockSkewMillis = Long.MIN_VALUE;

  /**
   * Compares this runtime's clock with the backend's (a cluster's own time, see {@link
   * Backend#clockMillisAsync}), without waiting: reply slots are named by callers' clocks and swept
   * by consumers' clocks, and commit markers are named and swept by their JVMs' clocks, so clocks
   * that disagree by more than {@link #MAX_CLOCK_SKEW_MILLIS} are logged loudly (an error for the
   * system clock, a warning for an injected one, such as a test's manual clock).
   */
  private void measureClockSkew() {
    long asked = services.wallMillis();
    CompletableFuture<Long> backendClock;
    try {
      backendClock = backend.clockMillisAsync();
    } catch (RuntimeException e) {
      backendClock = CompletableFuture.failedFuture(e);
    }
    backendClock
        .orTimeout(services.operations().timeout().toMillis(), TimeUnit.MILLISECONDS)
        .whenComplete(
            (theirs, err) -> {
              if (theirs == null) {
                log.debug("could not read the backend's clock to compare with this runtime's", err);
                return;
              }
              long mine = (asked + services.wallMillis()) / 2;
              long skew = mine - theirs;
              clockSkewMillis = skew;
              if (Math.abs(skew) <= MAX_CLOCK_SKEW_MILLIS) {
                return;
              }
              boolean system = services.clock().getClass() == Clock.systemUTC().getClass();
              String message =
                  "this runtime's clock is "
                      + Math.abs(skew)
                      + " ms "
                      + (skew > 0 ? "ahead of" : "behind")
                      + " the backend's ("
                      + backend
                      + "): keep the clocks of every process of a server within "
                      + MAX_CLOCK_SKEW_MILLIS
                      + " ms of each other (NTP), or reply slots of long calls may be swept while"
                      + " their callers wait and commit markers swept early";
              if (system) {
                log.error(message);
              } else {
                log.warn("{} (an injected clock; expected of a test's manual clock)", message);
              }
            });
  }

  /**
   * This runtime's clock minus the backend's, in milliseconds, as measured when the runtime was
   * built: for diagnostics and tests.
   *
   * @return the skew, or empty until it is known (or if the backend could not tell)
   */
  public java.util.OptionalLong clockSkewMillis() {
    long skew = clockSkewMillis;
    return skew == Long.MIN_VALUE
        ? java.util.OptionalLong.empty()
        : java.util.OptionalLong.of(skew);
  }

  private static ThreadFactory daemonThreads(String prefix) {
    AtomicInteger n = new AtomicInteger();
    return r -> {
      Thread t = new Thread(r, prefix + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    };
  }

  /** The services of this runtime: for tests and diagnostics. */
  public RuntimeServices services() {
    return services;
  }

  /**
   * Checks that the limits {@code options} names are configured (stored by some runtime).
   *
   * @throws IllegalArgumentException naming the limit, if one is not
   */
  public void checkLimits(ServerOptions options) {
    limits.check(options);
  }

  /**
   * The tasks waiting on the runtime's scheduler (deadlines, backoffs, timers at lock expiries):
   * for tests and diagnostics of what idle work costs.
   *
   * @return the number of scheduled tasks not yet run or cancelled
   */
  public int scheduledTasks() {
    return scheduler.getQueue().size();
  }

  /** What this runtime runs for {@code tenant}: its doorbells and timers, made on first use. */
  private TenantRuntime tenant(Tenant tenant) {
    return tenants.computeIfAbsent(
        key(tenant),
        k ->
            new TenantRuntime(
                tenant.subspace(),
                Buckets.of(tenant.bucketCount()),
                backend,
                services.executor(),
                scheduler,
                services::nanoTime,
                services.clock(),
                tenant.path().toString()));
  }

  private static ByteBuffer key(Tenant tenant) {
    return ByteBuffer.wrap(tenant.subspace().getKey());
  }

  /**
   * Starts a server: runs {@code init}, writes the initial state unless durable state exists, and
   * starts consuming; see {@link ServerProcess#start}.
   */
  public <S, M> ServerProcess<S, M> start(
      DGenServer<S, M> server, @Nullable Object arg, StartOptions options) {
    return ServerProcess.start(wiring, server, arg, options);
  }

  /**
   * A ref of server {@code tuid} (the kind first) of {@code kind}: with the kind's behaviour and
   * options if this runtime hosts it, else publish-only with an open registry. No transaction.
   *
   * @param messageType the kind's message type, for a ref by {@code io.dgen.Kind}; null for one by
   *     name, which checks messages against the type this runtime gives the kind, if any
   * @throws IllegalArgumentException if this runtime gives the kind another message type
   */
  @SuppressWarnings("unchecked")
  public <M> ServerRef<M> ref(
      Tenant tenant, String kind, @Nullable Class<M> messageType, Tuple tuid, StartOptions bare) {
    Class<?> messageClass = kindType(kind, messageType);
    Hosting hosting = hostings.get(key(tenant));
    HostedKind<?, ?> hosted = hosting == null ? null : hosting.kind(kind);
    if (hosted != null) {
      return ServerProcess.ref(
          wiring, (ProcessKind<?, M>) hosted, hosted.types(), messageClass, tuid, bare);
    }
    TenantRuntime t = tenant(tenant);
    KindTypes types =
        t.kindTypes(
            kind,
            () -> new KindTypes(backend, t.keys(), kind, TypeRegistry.open(services.serde())));
    return ServerProcess.ref(wiring, null, types, messageClass, tuid, bare);
  }

  /** The runner of {@code tenant}'s atomic transactions, made on first use. */
  public AtomicWork atomic(Tenant tenant) {
    Objects.requireNonNull(tenant, "tenant must not be null");
    return atomics.computeIfAbsent(key(tenant), k -> new AtomicWork(services, tenant));
  }

  /**
   * Hosts {@code kind} in {@code tenant}: this runtime joins the tenant's placement (its first kind
   * there) and runs the servers of the kind whose buckets it comes to hold.
   *
   * @param messageType the message type of a kind hosted by {@code io.dgen.Kind}, or null for one
   *     hosted by name (the behaviour's own message type)
   * @throws IllegalArgumentException if the behaviour does not accept {@code messageType}, this
   *     runtime gave the kind's name another message type, or the expiry is shorter than the lease
   * @throws IllegalStateException if this runtime hosts the kind in the tenant already
   */
  public <S, M> void host(
      Tenant tenant,
      String kind,
      @Nullable Class<M> messageType,
      java.util.function.Supplier<? extends io.dgen.DGenServer<S, M>> behaviour,
      HostOptions options) {
    Expiry.checkLease(options, leaseDuration);
    io.dgen.DGenServer<S, M> sample = behaviour.get();
    if (sample == null) {
      throw new IllegalArgumentException(
          "the behaviour supplier of kind " + kind + " returned null");
    }
    TenantRuntime t = tenant(tenant);
    synchronized (kindMessageTypes) {
      // Checked before the tenant's hosting is made: a refused kind joins no placement.
      JavaType declared = MessageTypes.of(services.serde(), kind, sample, messageType);
      checkKindType(kind, declared.getRawClass(), "hosted");
      Hosting hosting =
          hostings.computeIfAbsent(
              key(tenant),
              k ->
                  new Hosting(
                      services,
                      t,
                      services.memberId(),
                      leaseDuration,
                      placementThread(),
                      scheduler));
      hosting.host(
          new HostedKind<>(
              wiring,
              hosting.placement(),
              t.keys(),
              kind,
              messageType != null,
              declared,
              behaviour,
              sample,
              options));
      kindMessageTypes.putIfAbsent(kind, declared.getRawClass());
    }
  }

  /**
   * The message type this runtime gives {@code kind}'s name, recorded first for a ref by {@code
   * io.dgen.Kind}: the type a ref by name checks its messages against, if any.
   *
   * @param messageType the kind's message type, or null for a ref by name (nothing to record)
   * @return the message type of the kind's name in this runtime, {@code Object} if none was given
   * @throws IllegalArgumentException if the name has another message type in this runtime
   */
  private Class<?> kindType(String kind, @Nullable Class<?> messageType) {
    Class<?> known = kindMessageTypes.get(kind);
    if (messageType == null || known == messageType) {
      return known != null ? known : Object.class; // no lock on a ref's usual path
    }
    synchronized (kindMessageTypes) {
      checkKindType(kind, messageType, "addressed");
      kindMessageTypes.putIfAbsent(kind, messageType);
      return messageType;
    }
  }

  private void checkKindType(String kind, Class<?> messageType, String how) {
    Class<?> known = kindMessageTypes.get(kind);
    if (known != null && known != messageType) {
      throw new IllegalArgumentException(
          "kind "
              + kind
              + " cannot be "
              + how
              + " with message type "
              + messageType.getName()
              + ": this runtime hosts or addresses it with message type "
              + known.getName()
              + ", and a kind has one message type (in every tenant)");
    }
  }

  /** This runtime's id as a member of the tenants it hosts in. */
  public UUID memberId() {
    return services.memberId();
  }

  /** The one thread that runs every tenant's heartbeats and placement rounds, made on first use. */
  private synchronized ExecutorService placementThread() {
    ExecutorService e = placementThread;
    if (e == null) {
      e = Executors.newSingleThreadExecutor(daemonThreads("dgen-placement-"));
      placementThread = e;
    }
    return e;
  }

  /**
   * The clock may have jumped ahead (a test's manual clock): the timers now due in this runtime's
   * tenants fire in the caller's thread, every scheduler re-arms its sleep, and the hosted servers
   * expired in the buckets this runtime holds are collected.
   */
  public void clockAdvanced() {
    for (TenantRuntime t : tenants.values()) {
      t.clockAdvanced();
    }
    for (Hosting h : hostings.values()) {
      h.clockAdvanced();
    }
  }

  /**
   * The live process registered under {@code name}.
   *
   * @param name the name
   * @return the process, if any
   */
  public Optional<ProcessRef<?>> whereis(String name) {
    return processes.whereis(name).map(LocalProcesses.Member::ref);
  }

  /** The number of live processes. */
  public int liveProcesses() {
    return processes.size();
  }

  /**
   * Stops every process and the watchers (calls still waiting fail), waits up to 10 seconds for the
   * transactions under way to end, then stops the pools; does not close the backend.
   */
  @Override
  public void close() {
    pushGroups.close(Duration.ofSeconds(10)); // its casts in flight settle while threads run
    consumeGroups.close();
    processes.stopAll();
    hostings.values().forEach(Hosting::close); // leaves the placements
    tenants.values().forEach(TenantRuntime::close);
    limits.close();
    try {
      backend.awaitQuiet(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    scheduler.shutdownNow();
    blocking.shutdownNow();
    ExecutorService placement = placementThread;
    if (placement != null) {
      placement.shutdownNow();
    }
    if (ownExecutor != null) {
      ownExecutor.shutdown();
      try {
        if (!ownExecutor.awaitTermination(10, TimeUnit.SECONDS)) {
          ownExecutor.shutdownNow();
        }
      } catch (InterruptedException e) {
        ownExecutor.shutdownNow();
        Thread.currentThread().interrupt();
      }
    }
  }
}
