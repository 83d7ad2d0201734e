package io.dgen.internal.base;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.DGenListener;
import io.dgen.LockFencedException;
import io.dgen.ServerRef;
import io.dgen.Tenant;
import io.dgen.TerminalException;
import io.dgen.UndecodableDataException;
import io.dgen.backend.Backend;
import io.dgen.internal.codec.Serde;
import io.dgen.internal.codec.StateCodec;
import io.dgen.internal.codec.TypeRegistry;
import io.dgen.internal.observe.RuntimeHooks;
import java.time.Clock;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ScheduledExecutorService;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import tools.jackson.databind.JavaType;

/**
 * What the components of one runtime share, made once by the composition root ({@code RuntimeCore})
 * and handed down: the backend, the mapper and state codec, the executor, the bound on batches in
 * flight, the scheduler, the pool for blocking steps, the clocks, the retry backoff, the hooks
 * (metrics, tracing), the operation timeout, this runtime's member id, the shared type registries
 * and the application's listener.
 *
 * <p>It holds services, never components: a component that needs another is handed it.
 *
 * <p>Threading: thread-safe; every field is immutable or thread-safe.
 */
public final class RuntimeServices {

  private static final Logger log = LoggerFactory.getLogger(RuntimeServices.class);

  private final Backend backend;
  private final Serde serde;
  private final StateCodec codec;
  private final Executor executor;
  private final BatchPermits permits;
  private final ScheduledExecutorService scheduler;
  private final ExecutorService blocking;
  private final DeferredClears deferredClears;
  private final LongSupplier ticker;
  private final Clock clock;
  private final Duration retryInitial;
  private final Duration retryMax;
  private final RuntimeHooks hooks;
  private final OperationTimeouts operations;
  private final UUID memberId;
  private final DGenListener listener;
  private final Map<List<Object>, TypeRegistry> typeRegistries = new ConcurrentHashMap<>();

  /**
   * The services of one runtime.
   *
   * @param backend the backend (tracked by the metrics)
   * @param serde the mapper
   * @param codec the state codec
   * @param executor runs callbacks and the steps of asynchronous work
   * @param permits the bound on consumer batches in flight
   * @param scheduler backoffs, deadlines and timers
   * @param blocking threads for steps that block
   * @param deferredClears clears of reply slots already read, batched
   * @param ticker the nanosecond clock
   * @param clock the wall clock
   * @param retryInitial the first backoff after a failure
   * @param retryMax the backoff's cap
   * @param hooks background consumers or not, the metrics and the tracing
   * @param operations the bound on pushes, kills and the like
   * @param memberId this runtime's id as a member of the tenants it hosts in
   * @param listener hears events such as a fenced lock holder
   */
  public RuntimeServices(
      Backend backend,
      Serde serde,
      StateCodec codec,
      Executor executor,
      BatchPermits permits,
      ScheduledExecutorService scheduler,
      ExecutorService blocking,
      DeferredClears deferredClears,
      LongSupplier ticker,
      Clock clock,
      Duration retryInitial,
      Duration retryMax,
      RuntimeHooks hooks,
      OperationTimeouts operations,
      UUID memberId,
      DGenListener listener) {
    this.backend = backend;
    this.serde = serde;
    this.codec = codec;
    this.executor = executor;
    this.permits = permits;
    this.scheduler = scheduler;
    this.blocking = blocking;
    this.deferredClears = deferredClears;
    this.ticker = ticker;
    this.clock = clock;
    this.retryInitial = retryInitial;
    this.retryMax = retryMax;
    this.hooks = hooks;
    this.operations = operations;
    this.memberId = memberId;
    this.listener = listener;
  }

  /** The backend. */
  public Backend backend() {
    return backend;
  }

  /** The mapper. */
  public Serde serde() {
    return serde;
  }

  /** The state codec. */
  public StateCodec codec() {
    return codec;
  }

  /** Runs callbacks and the steps of asynchronous work. */
  public Executor executor() {
    return executor;
  }

  /** The bound on consumer batches in flight. */
  public BatchPermits permits() {
    return permits;
  }

  /** Backoffs, deadlines and timers. */
  public ScheduledExecutorService scheduler() {
    return scheduler;
  }

  /**
   * Threads for {@code handleLocked}, rare steps that wait for a commit, and the retries of a push
   * whose caller waits for it (the caller may be a worker thread).
   */
  public ExecutorService blocking() {
    return blocking;
  }

  /** Clears of reply slots already read, batched. */
  public DeferredClears deferredClears() {
    return deferredClears;
  }

  /** Background consumers or not, the metrics and the tracing. */
  public RuntimeHooks hooks() {
    return hooks;
  }

  /** The operation timeout of pushes, kills and the like. */
  public OperationTimeouts operations() {
    return operations;
  }

  /** This runtime's id as a member of the tenants it hosts in. */
  public UUID memberId() {
    return memberId;
  }

  /** The nanosecond clock. */
  public long nanoTime() {
    return ticker.getAsLong();
  }

  /** The wall clock's milliseconds. */
  public long wallMillis() {
    return clock.millis();
  }

  /** The wall clock: lock ages, timestamps, timers' due times. */
  public Clock clock() {
    return clock;
  }

  /** The backoff before retry number {@code failures} (1-based): doubling, capped. */
  public long backoffNanos(int failures) {
    long base = retryInitial.toNanos();
    int shift = Math.min(Math.max(failures - 1, 0), 30);
    long d = base << shift;
    return d <= 0 ? retryMax.toNanos() : Math.min(d, retryMax.toNanos());
  }

  /**
   * A type registry for one server: the allowed types and readers of a message type, state type and
   * allowed classes are built once and shared by the servers that declare them; the type table is
   * the server's own.
   */
  public TypeRegistry types(
      JavaType messageType, JavaType stateType, Collection<Class<?>> allowed) {
    return typeRegistries
        .computeIfAbsent(
            List.of(messageType, stateType, Set.copyOf(allowed)),
            k -> new TypeRegistry(serde, messageType, stateType, allowed))
        .forServer();
  }

  /**
   * Tells the listener that {@code server}'s lock holder was fenced; a listener's failure is
   * logged.
   */
  public void lockFenced(ServerRef<?> server, LockFencedException error) {
    tell("lockFenced", () -> listener.lockFenced(server, error));
  }

  /** Tells the listener that {@code server} refused a cast; a listener's failure is logged. */
  public void castRefused(ServerRef<?> server, Object message, TerminalException reason) {
    tell("castRefused", () -> listener.castRefused(server, message, reason));
  }

  /**
   * Tells the listener that {@code server}'s stored state cannot be decoded (its process stopped);
   * a listener's failure is logged.
   */
  public void stateUndecodable(ServerRef<?> server, UndecodableDataException error) {
    tell("stateUndecodable", () -> listener.stateUndecodable(server, error));
  }

  /**
   * Tells the listener and the metrics that a hosted server expired; a listener's failure is
   * logged.
   */
  public void serverExpired(Tenant tenant, Tuple tuid) {
    hooks.metrics().expired(tenant.path().toString(), String.valueOf(tuid.get(0)));
    tell("serverExpired", () -> listener.serverExpired(tenant, tuid));
  }

  private static void tell(String event, Runnable call) {
    try {
      call.run();
    } catch (RuntimeException e) {
      log.error("DGenListener.{} failed", event, e);
    }
  }
}
