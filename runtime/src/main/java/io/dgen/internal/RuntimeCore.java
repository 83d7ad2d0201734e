package io.dgen.internal;

import io.dgen.DGenListener;
import io.dgen.HostOptions;
import io.dgen.LockFencedException;
import io.dgen.ServerOptions;
import io.dgen.ServerRef;
import io.dgen.Tenant;
import io.dgen.backend.Backend;
import io.dgen.internal.codec.Serde;
import io.dgen.internal.codec.StateCodec;
import io.dgen.internal.codec.TypeRegistry;
import java.nio.ByteBuffer;
import java.time.Clock;
import java.time.Duration;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import tools.jackson.databind.JavaType;

/**
 * What the processes of one {@code DGen} share: the backend, the mapper, the executor that runs
 * callbacks and the steps of asynchronous work, the bound on batches in flight, a scheduler for
 * backoff and timeouts, a pool for rare blocking work, the clocks, per tenant a doorbell watcher
 * (one watch per bucket in use) and the placement of the kinds hosted there, the type registries,
 * and the registry of live processes and names.
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
  private final Serde serde;
  private final StateCodec codec;
  private final LongSupplier ticker;
  private final Duration retryInitial;
  private final Duration retryMax;
  private final Executor executor;
  private final @Nullable ExecutorService ownExecutor;
  private final BatchPermits permits;
  private final ScheduledExecutorService scheduler;
  private final ExecutorService blocking;
  private final DeferredClears deferredClears;
  private final PushGroups pushGroups;
  private final ConsumeGroups consumeGroups;
  private final Clock clock;
  private final DGenListener listener;
  private final RuntimeHooks hooks;
  private final OperationTimeouts operations;
  private final Set<ServerProcess<?, ?>> processes = ConcurrentHashMap.newKeySet();
  private final Map<String, ServerProcess<?, ?>> names = new ConcurrentHashMap<>();
  private final Map<ByteBuffer, TenantRuntime> tenants = new ConcurrentHashMap<>();
  private final Duration leaseDuration;
  private final Limits limits;
  private final UUID memberId = UUID.randomUUID();
  private volatile @Nullable ExecutorService placementThread;
  private final Map<List<Object>, TypeRegistry> typeRegistries = new ConcurrentHashMap<>();

  /** The message type this runtime gives each kind's name it hosts or addresses by type. */
  private final Map<String, Class<?>> kindMessageTypes = new ConcurrentHashMap<>();

  /**
   * Creates the shared runtime.
   *
   * @param backend the backend
   * @param serde the mapper
   * @param codec the state codec
   * @param ticker nanosecond clock
   * @param clock wall clock (lock ages)
   * @param executor the executor of callbacks and asynchronous steps, or null for a fixed pool of
   *     {@code workerThreads} daemon threads that the runtime shuts down on close
   * @param workerThreads size of that pool
   * @param maxBatchesInFlight the bound on consumer batches in flight
   * @param retryInitial first backoff after a failed batch
   * @param retryMax backoff cap
   * @param listener hears events such as a fenced lock holder
   * @param hooks background consumers or not, and the metrics
   * @param operationTimeout the bound on pushes, kills and the like (see {@link OperationTimeouts})
   * @param leaseDuration how long a hosting runtime's leases outlive its last heartbeat
   * @param rateLimits the rate limits this runtime configures, stored by the constructor
   * @param concurrencyLimits the concurrency limits this runtime configures, stored likewise
   */
  public RuntimeCore(
      Backend backend,
      Serde serde,
      StateCodec codec,
      LongSupplier ticker,
      Clock clock,
      @Nullable Executor executor,
      int workerThreads,
      int maxBatchesInFlight,
      Duration retryInitial,
      Duration retryMax,
      DGenListener listener,
      RuntimeHooks hooks,
      Duration operationTimeout,
      Duration leaseDuration,
      Map<String, LimitKeys.RateConfig> rateLimits,
      Map<String, Integer> concurrencyLimits) {
    this.leaseDuration = leaseDuration;
    this.hooks = hooks;
    this.operations = new OperationTimeouts(operationTimeout);
    this.backend = new TrackedBackend(backend, hooks.metrics());
    this.serde = serde;
    this.codec = codec;
    this.ticker = ticker;
    this.clock = clock;
    this.retryInitial = retryInitial;
    this.retryMax = retryMax;
    this.listener = listener;
    this.ownExecutor =
        executor == null
            ? Executors.newFixedThreadPool(workerThreads, daemonThreads("dgen-worker-"))
            : null;
    this.executor = executor != null ? executor : ownExecutor;
    this.permits = new BatchPermits(maxBatchesInFlight, this.executor);
    ScheduledThreadPoolExecutor timers =
        new ScheduledThreadPoolExecutor(1, daemonThreads("dgen-scheduler-"));
    // every call schedules its deadline and cancels it when the reply comes: drop cancelled
    // timers at once rather than holding them until they would have been due
    timers.setRemoveOnCancelPolicy(true);
    this.scheduler = timers;
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
    this.deferredClears = new DeferredClears(backend, scheduler);
    this.pushGroups = new PushGroups(blocking, scheduler, hooks.metrics());
    this.consumeGroups = new ConsumeGroups(this.executor, this::nanoTime, hooks.metrics());
    measureClockSkew();
    this.limits = new Limits(this, new Limits.Config(rateLimits, concurrencyLimits));
    limits.store();
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
    long asked = clock.millis();
    CompletableFuture<Long> backendClock;
    try {
      backendClock = backend.clockMillisAsync();
    } catch (RuntimeException e) {
      backendClock = CompletableFuture.failedFuture(e);
    }
    backendClock
        .orTimeout(operations.timeout().toMillis(), TimeUnit.MILLISECONDS)
        .whenComplete(
            (theirs, err) -> {
              if (theirs == null) {
                log.debug("could not read the backend's clock to compare with this runtime's", err);
                return;
              }
              long mine = (asked + clock.millis()) / 2;
              long skew = mine - theirs;
              clockSkewMillis = skew;
              if (Math.abs(skew) <= MAX_CLOCK_SKEW_MILLIS) {
                return;
              }
              boolean system = clock.getClass() == Clock.systemUTC().getClass();
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

  Backend backend() {
    return backend;
  }

  /** The rate and concurrency limits of this runtime. */
  Limits limits() {
    return limits;
  }

  /**
   * Checks that the limits {@code options} names are configured (stored by some runtime).
   *
   * @throws IllegalArgumentException naming the limit, if one is not
   */
  public void checkLimits(ServerOptions options) {
    limits.check(options);
  }

  RuntimeHooks hooks() {
    return hooks;
  }

  /** The operation timeout of pushes, kills and the like. */
  OperationTimeouts operations() {
    return operations;
  }

  Serde serde() {
    return serde;
  }

  StateCodec codec() {
    return codec;
  }

  long nanoTime() {
    return ticker.getAsLong();
  }

  long wallMillis() {
    return clock.millis();
  }

  /** The wall clock: lock ages, timestamps, timers' due times. */
  Clock clock() {
    return clock;
  }

  /**
   * Threads for {@code handleLocked}, rare steps that wait for a commit, and the retries of a push
   * whose caller waits for it (the caller may be a worker thread).
   */
  ExecutorService blocking() {
    return blocking;
  }

  /** The group commit of this runtime's plain casts. */
  PushGroups pushGroups() {
    return pushGroups;
  }

  /** The consumers' batches of one message that share transactions across servers. */
  ConsumeGroups consumeGroups() {
    return consumeGroups;
  }

  /** Clears of reply slots already read, batched. */
  DeferredClears deferredClears() {
    return deferredClears;
  }

  /** Runs callbacks and the steps of asynchronous work. */
  Executor executor() {
    return executor;
  }

  /** The bound on consumer batches in flight. */
  BatchPermits permits() {
    return permits;
  }

  ScheduledExecutorService scheduler() {
    return scheduler;
  }

  /**
   * The tasks waiting on the runtime's scheduler (deadlines, backoffs, timers at lock expiries):
   * for tests and diagnostics of what idle work costs.
   *
   * @return the number of scheduled tasks not yet run or cancelled
   */
  public int scheduledTasks() {
    return ((ScheduledThreadPoolExecutor) scheduler).getQueue().size();
  }

  /**
   * Tells the listener that {@code server}'s lock holder was fenced; a listener's failure is
   * logged.
   */
  void lockFenced(ServerRef<?> server, LockFencedException error) {
    try {
      listener.lockFenced(server, error);
    } catch (RuntimeException e) {
      log.error("DGenListener.lockFenced failed", e);
    }
  }

  /** Tells the listener that {@code server} refused a cast; a listener's failure is logged. */
  void castRefused(ServerRef<?> server, Object message, io.dgen.TerminalException reason) {
    try {
      listener.castRefused(server, message, reason);
    } catch (RuntimeException e) {
      log.error("DGenListener.castRefused failed", e);
    }
  }

  /**
   * Tells the listener that {@code server}'s stored state cannot be decoded (its process stopped);
   * a listener's failure is logged.
   */
  void stateUndecodable(ServerRef<?> server, io.dgen.UndecodableDataException error) {
    try {
      listener.stateUndecodable(server, error);
    } catch (RuntimeException e) {
      log.error("DGenListener.stateUndecodable failed", e);
    }
  }

  /**
   * Tells the listener and the metrics that a hosted server expired; a listener's failure is
   * logged.
   */
  void serverExpired(Tenant tenant, com.apple.foundationdb.tuple.Tuple tuid) {
    hooks.metrics().expired(tenant.path().toString(), String.valueOf(tuid.get(0)));
    try {
      listener.serverExpired(tenant, tuid);
    } catch (RuntimeException e) {
      log.error("DGenListener.serverExpired failed", e);
    }
  }

  /** The backoff before retry number {@code failures} (1-based): doubling, capped. */
  long backoffNanos(int failures) {
    long base = retryInitial.toNanos();
    int shift = Math.min(Math.max(failures - 1, 0), 30);
    long d = base << shift;
    return d <= 0 ? retryMax.toNanos() : Math.min(d, retryMax.toNanos());
  }

  /** What this runtime runs for {@code tenant}: its doorbells and timers, made on first use. */
  TenantRuntime tenant(Tenant tenant) {
    return tenants.computeIfAbsent(
        ByteBuffer.wrap(tenant.subspace().getKey()),
        k ->
            new TenantRuntime(
                tenant.subspace(),
                Buckets.of(tenant.bucketCount()),
                backend,
                executor,
                scheduler,
                ticker,
                clock,
                tenant.path().toString()));
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
      JavaType declared = HostedKind.messageType(serde, kind, sample, messageType);
      checkKindType(kind, declared.getRawClass(), "hosted");
      Hosting hosting =
          t.hosting(
              () -> new Hosting(this, t, memberId, leaseDuration, placementThread(), scheduler));
      hosting.host(
          new HostedKind<>(
              this, hosting, kind, messageType != null, declared, behaviour, sample, options));
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
  Class<?> kindType(String kind, @Nullable Class<?> messageType) {
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

  /** The kind {@code kind} as this runtime hosts it in {@code tenant}, or null. */
  @Nullable HostedKind<?, ?> hostedKind(Tenant tenant, String kind) {
    Hosting h = tenant(tenant).hosting();
    return h == null ? null : h.kind(kind);
  }

  /** The type table of {@code kind}, for a runtime that addresses it without hosting it. */
  KindTypes openKindTypes(Tenant tenant, String kind) {
    TenantRuntime t = tenant(tenant);
    return t.kindTypes(
        kind, () -> new KindTypes(backend, t.keys(), kind, TypeRegistry.open(serde)));
  }

  /** This runtime's id as a member of the tenants it hosts in. */
  public UUID memberId() {
    return memberId;
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
   * tenants fire in the caller's thread, and every scheduler re-arms its sleep.
   */
  public void clockAdvanced() {
    for (TenantRuntime t : tenants.values()) {
      t.clockAdvanced();
    }
  }

  /**
   * A type registry for one server: the allowed types and readers of a message type, state type and
   * allowed classes are built once and shared by the servers that declare them; the type table is
   * the server's own.
   */
  TypeRegistry types(JavaType messageType, JavaType stateType, Collection<Class<?>> allowed) {
    return typeRegistries
        .computeIfAbsent(
            List.of(messageType, stateType, Set.copyOf(allowed)),
            k -> new TypeRegistry(serde, messageType, stateType, allowed))
        .forServer();
  }

  void register(ServerProcess<?, ?> p) {
    String name = p.name().orElse(null);
    if (name != null && names.putIfAbsent(name, p) != null) {
      throw new IllegalStateException("a live process is already registered as name=" + name);
    }
    processes.add(p);
  }

  void unregister(ServerProcess<?, ?> p) {
    processes.remove(p);
    p.name().ifPresent(n -> names.remove(n, p));
  }

  /**
   * Stops every local process of the server {@code keys} names, in {@code incarnation} (after a
   * kill of it); processes of a server started again since are spared.
   */
  void stopLocal(ServerKeys keys, long incarnation) {
    for (ServerProcess<?, ?> p : processes) {
      if (Arrays.equals(p.keys().root().getKey(), keys.root().getKey())
          && (!ServerEntry.isIncarnation(incarnation)
              || p.incarnation() == 0
              || p.incarnation() == incarnation)) {
        p.stop();
      }
    }
  }

  /**
   * The live process registered under {@code name}.
   *
   * @param name the name
   * @return the process, if any
   */
  public Optional<ServerProcess<?, ?>> whereis(String name) {
    return Optional.ofNullable(names.get(name));
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
    for (ServerProcess<?, ?> p : processes) {
      p.stop();
    }
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
