package io.dgen.internal.process;

import com.apple.foundationdb.tuple.Tuple;
import com.google.common.base.Suppliers;
import io.dgen.Call;
import io.dgen.DGenException;
import io.dgen.DGenServer;
import io.dgen.DeadLetter;
import io.dgen.From;
import io.dgen.InitResult;
import io.dgen.Outbox;
import io.dgen.ProcessRef;
import io.dgen.ServerOptions;
import io.dgen.ServerRef;
import io.dgen.StartOptions;
import io.dgen.Tenant;
import io.dgen.admin.ServerControl;
import io.dgen.backend.Futures;
import io.dgen.internal.base.CallerFailures;
import io.dgen.internal.base.Lifecycle;
import io.dgen.internal.base.RuntimeServices;
import io.dgen.internal.behaviour.CallbackInvoker;
import io.dgen.internal.behaviour.Init;
import io.dgen.internal.behaviour.Unhosted;
import io.dgen.internal.calls.CallProtocol;
import io.dgen.internal.calls.ReplySlots;
import io.dgen.internal.codec.Envelope;
import io.dgen.internal.codec.ReplyTypes;
import io.dgen.internal.codec.StoredState;
import io.dgen.internal.codec.TypeNames;
import io.dgen.internal.codec.TypeRegistry;
import io.dgen.internal.commit.CommitRunner;
import io.dgen.internal.commit.Fence;
import io.dgen.internal.consume.CallerDrain;
import io.dgen.internal.consume.ConsumeLoop;
import io.dgen.internal.consume.ConsumerBatch;
import io.dgen.internal.consume.ConsumerParts;
import io.dgen.internal.consume.InlinePart;
import io.dgen.internal.consume.InlineRunner;
import io.dgen.internal.consume.Meters;
import io.dgen.internal.doorbell.TenantWatcher;
import io.dgen.internal.idempotency.IdempotentRequests;
import io.dgen.internal.idempotency.Sweeper;
import io.dgen.internal.keys.Buckets;
import io.dgen.internal.keys.ServerEntry;
import io.dgen.internal.keys.ServerKeys;
import io.dgen.internal.limits.ConcurrencyGate;
import io.dgen.internal.limits.RateLimiter;
import io.dgen.internal.lock.DeadLetters;
import io.dgen.internal.lock.LockCoordinator;
import io.dgen.internal.observe.Metrics;
import io.dgen.internal.observe.Tracing;
import io.dgen.internal.queue.KindTypes;
import io.dgen.internal.queue.ServerQueue;
import io.dgen.internal.state.StateStore;
import io.dgen.internal.tenant.TenantRuntime;
import io.dgen.internal.timers.TimerScheduler;
import io.dgen.internal.timers.Timers;
import java.lang.reflect.Type;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import tools.jackson.databind.JavaType;

/**
 * One process of a durable server, and the {@link ServerRef} handed to users: a thin facade that
 * wires the process's components and delegates to them. It owns only the choice of a call's route
 * (inline or queued), argument checks, liveness checks, and that every failure its callers get is a
 * {@link DGenException} ({@link CallerFailures}).
 *
 * <p>Never reads or writes keys itself, except {@code kill}'s clear of the server's whole subspace:
 * each component owns its part of the key layout. See {@code docs/architecture.md} for the
 * components and who calls whom.
 *
 * <p>Threading: thread-safe. The consume loop runs on the runtime's executor, at most one batch at
 * a time per process; casts and priority messages run in the caller's thread; a call starts in the
 * caller's thread and completes without holding one.
 *
 * @param <S> the state type
 * @param <M> the message type
 */
public final class ServerProcess<S, M>
    implements ProcessRef<M>, ServerControl<M>, ProcessKind.Loaded<M>, LocalProcesses.Member {

  private static final Logger log = LoggerFactory.getLogger(ServerProcess.class);

  private final ProcessContext runtime;
  private final RuntimeServices services;
  private final Tenant tenant;
  private final Tuple tuid;
  private final ServerOptions options;

  /** Whether its options let it consume: a hosted kind's always do. */
  private final boolean consume;

  private final ServerKeys keys;
  private final TypeRegistry types;
  private final String context;
  private final Lifecycle lifecycle;
  private final StateStore<S> states;
  private final CommitRunner commits;
  private final ServerQueue<M> queue;
  private final Timers<M> timers;
  private final ReplySlots slots;
  private final CallProtocol calls;
  private final InlineRunner<S, M> inline;
  private final DeadLetters<M> deadLetters;
  private final TenantWatcher doorbell;
  private final ConsumeLoop<S, M> loop;
  private final Meters meters;
  private final IdempotentRequests<M> requests;

  /** How a process came to be, which decides what it owns and does. */
  enum Role {
    /** {@code DGen.start}: consumes if its options say so, alongside any other process. */
    STARTED,
    /** Loaded by the holder of its bucket's lease: consumes alone, created by its first message. */
    HOSTED,
    /** {@code DGen.ref}: a handle that publishes, calls and administers; never consumes. */
    REF
  }

  private final Role role;
  private final @Nullable ProcessKind<S, M> kind;
  private final @Nullable Fence fence;

  private ServerProcess(
      ProcessContext runtime,
      @Nullable DGenServer<S, M> server,
      Tuple tuid,
      ServerOptions options,
      JavaType stateType,
      JavaType messageType,
      Class<?> messageClass,
      Role role,
      @Nullable ProcessKind<S, M> kind,
      @Nullable KindTypes kindTypes) {
    this.runtime = runtime;
    this.services = runtime.services();
    this.role = role;
    this.kind = kind;
    this.tenant = options.tenant();
    this.tuid = tuid;
    this.options = options;
    this.consume = !(options instanceof StartOptions s) || s.consume();
    this.keys = new ServerKeys(tenant.subspace(), Buckets.of(tenant.bucketCount()), tuid);
    this.types =
        kindTypes != null
            ? kindTypes.registry()
            : services.types(messageType, stateType, options.allowedTypes());
    this.context = "tenant=" + tenant.path() + " tuid=" + tuid;
    this.lifecycle = new Lifecycle(context);
    this.fence = role == Role.HOSTED ? Objects.requireNonNull(kind).fence(keys.bucket()) : null;
    TenantRuntime here = runtime.tenant(tenant);
    this.doorbell = here.doorbell();
    // Wired bottom-up: each component gets only the ones below it.
    // A started server's entry names the incarnation its processes belong to; a hosted one's
    // (a ref's, too) is created by its first push.
    ServerEntry entry =
        new ServerEntry(
            here.keys(), keys, kindTypes != null, lifecycle, services::wallMillis, context);
    this.states =
        new StateStore<>(
            keys,
            services.codec(),
            services.serde(),
            stateType,
            options.cache(),
            role != Role.STARTED,
            entry,
            context);
    this.commits =
        new CommitRunner(
            services.backend(), keys, states, services::nanoTime, services.operations(), context);
    this.queue =
        new ServerQueue<>(
            keys,
            doorbell,
            services.serde(),
            types,
            kindTypes,
            entry,
            messageClass,
            services
                .hooks()
                .tracing()
                .server(
                    Tracing.destination(tenant.path(), kindTypes != null ? tuid.get(0) : null),
                    tuid.toString()),
            context);
    Runnable scheduled;
    if (role == Role.STARTED) {
      // a started process fires its bucket's timers while it lives
      TimerScheduler bucketTimers = here.retainTimers(keys.bucket());
      lifecycle.onStop(() -> here.releaseTimers(keys.bucket()));
      scheduled = bucketTimers::wake;
    } else {
      scheduled = () -> here.wakeTimers(keys.bucket()); // the holder fires them
    }
    this.timers = Timers.create(services, here.keys(), tuid, keys, queue, commits, scheduled);
    this.slots =
        new ReplySlots(
            services.backend(),
            services.codec(),
            services.deferredClears(),
            doorbell,
            keys,
            services.serde(),
            types,
            services::wallMillis,
            context);
    DGenServer<S, M> behaviour = server != null ? server : Unhosted.of(tuid);
    Metrics.Server m =
        server == null
            ? Metrics.Server.NONE
            : services.hooks().metrics().server(tenant.path().toString(), server.getClass());
    this.meters = new Meters(m, services::nanoTime);
    // A started server has no kind: its id is its whole tuid.
    Object id = kind != null ? kind.idOf(tuid) : role == Role.STARTED ? tuid : tuid.popFront();
    CallbackInvoker<S, M> invoker =
        new CallbackInvoker<>(
            behaviour,
            services.backend(),
            tenant,
            tuid,
            id,
            timers,
            services::nanoTime,
            m,
            (message, reason) -> services.castRefused(this, message, reason),
            context);
    this.calls = new CallProtocol(services, commits, queue, slots, doorbell, context);
    this.requests =
        new IdempotentRequests<>(
            services, keys, commits, queue, timers, slots, calls, options.idempotencyRetention());
    this.inline =
        new InlineRunner<>(
            keys,
            commits,
            states,
            queue,
            calls,
            invoker,
            lifecycle,
            services::nanoTime,
            services.executor(),
            fence,
            role == Role.REF,
            kind != null && kind.options().expireAfter().isPresent(),
            context);
    this.deadLetters =
        new DeadLetters<>(
            services,
            keys,
            services.serde(),
            commits,
            queue,
            slots,
            invoker,
            services::wallMillis,
            context);
    ConcurrencyGate gate = options.concurrencyLimit().map(runtime.limits()::gate).orElse(null);
    RateLimiter rate =
        role != Role.REF && consume
            ? options.rateLimit().map(runtime.limits()::rate).orElse(null)
            : null;
    LockCoordinator<S, M> locks =
        new LockCoordinator<>(
            keys,
            services.serde(),
            commits,
            states,
            queue,
            slots,
            invoker,
            deadLetters,
            options.deadLetterThreshold().orElse(Integer.MAX_VALUE),
            lifecycle,
            options.lockTimeout(),
            role == Role.HOSTED ? Objects.requireNonNull(kind).lockHolders() : null,
            services::wallMillis,
            fenced -> services.lockFenced(this, fenced),
            gate,
            context);
    ConsumerBatch<S, M> batches =
        new ConsumerBatch<>(
            queue,
            states,
            locks,
            invoker,
            slots,
            deadLetters,
            new Sweeper(keys, services::wallMillis),
            services::nanoTime,
            fence,
            gate,
            services::wallMillis,
            options.lockTimeout().orElse(null),
            context);
    this.loop =
        new ConsumeLoop<>(
            services,
            runtime.consumeGroups(),
            new ConsumerParts<>(
                commits,
                batches,
                states,
                locks,
                deadLetters,
                invoker,
                lifecycle,
                options.consumeK(),
                options.deadLetterThreshold().orElse(Integer.MAX_VALUE),
                undecodable -> services.stateUndecodable(this, undecodable)),
            doorbell,
            keys.bucket(),
            rate,
            gate,
            context);
    if (role != Role.REF && consume) {
      lifecycle.onStop(
          () -> {
            doorbell.unregister(keys.bucket(), keys.wakeId(), loop);
            loop.stopped();
          });
    }
    if (role == Role.STARTED) {
      lifecycle.onStop(() -> runtime.processes().unregister(this));
      lifecycle.onStop(() -> m.stopped(this));
    }
  }

  /**
   * The default tuid {@code ("dgen_server", name)}: the behaviour's logical name if it is annotated
   * with {@link io.dgen.TypeName} (else its class name); if no server has state under it but one
   * has under an alias, that one (a renamed behaviour keeps its server). One read-only transaction,
   * only for an annotated behaviour with aliases.
   */
  private static Tuple defaultTuid(
      RuntimeServices services, DGenServer<?, ?> server, ServerOptions options) {
    Tuple named = Tuple.from(DEFAULT_TUID_PREFIX, TypeNames.name(server.getClass()));
    io.dgen.TypeName annotation = server.getClass().getAnnotation(io.dgen.TypeName.class);
    if (annotation == null || annotation.aliases().length == 0) {
      return named;
    }
    Tenant tenant = options.tenant();
    Buckets buckets = Buckets.of(tenant.bucketCount());
    Tuple found =
        services
            .backend()
            .run(
                tx -> {
                  if (tx.get(new ServerKeys(tenant.subspace(), buckets, named).versionKey())
                      != null) {
                    return named;
                  }
                  for (String alias : annotation.aliases()) {
                    Tuple old = Tuple.from(DEFAULT_TUID_PREFIX, alias);
                    if (tx.get(new ServerKeys(tenant.subspace(), buckets, old).versionKey())
                        != null) {
                      return old;
                    }
                  }
                  return named;
                });
    if (!found.equals(named)) {
      log.info(
          "behaviour {} starts the server stored under its alias: tuid={}",
          server.getClass().getName(),
          found);
    }
    return found;
  }

  /** The first element of a default tuid. */
  static final String DEFAULT_TUID_PREFIX = "dgen_server";

  /**
   * Runs {@code init}, writes the initial state unless durable state exists (or {@code reset}),
   * registers the process and starts consuming.
   *
   * @throws DGenException if {@code init} throws or refuses
   */
  public static <S, M> ServerProcess<S, M> start(
      ProcessContext runtime, DGenServer<S, M> server, @Nullable Object arg, StartOptions options) {
    RuntimeServices services = runtime.services();
    Objects.requireNonNull(server, "server must not be null");
    Objects.requireNonNull(options, "options must not be null");
    JavaType stateType = services.serde().type(Init.typeArgument(server, 0));
    JavaType messageType = services.serde().type(Init.typeArgument(server, 1));
    InitResult<S> init = Init.run(server, arg, options);
    Tuple tuid = init.tuid() != null ? init.tuid() : defaultTuid(services, server, options);
    ServerProcess<S, M> p =
        new ServerProcess<>(
            runtime,
            server,
            tuid,
            options,
            stateType,
            messageType,
            messageType.getRawClass(),
            Role.STARTED,
            null,
            null);
    try {
      p.initialize(Objects.requireNonNull(init.state()), server.getClass().getName());
      runtime.processes().register(p);
    } catch (Throwable t) {
      // the process never lived: nothing else of it to stop, but its bucket's timers are retained
      runtime.tenant(p.tenant).releaseTimers(p.keys.bucket());
      throw t;
    }
    p.meters.server().started(p);
    if (options.consume() && services.hooks().backgroundConsumers()) {
      p.doorbell.register(p.keys.bucket(), p.keys.wakeId(), p.loop);
      p.loop.start();
    }
    return p;
  }

  /**
   * A hosted server's process, loaded by the holder of its bucket's lease: no transaction (its
   * first batch runs {@code init} if it has no state); the caller starts it ({@link
   * #startConsuming}).
   */
  public static <S, M> ServerProcess<S, M> hosted(
      ProcessContext runtime, ProcessKind<S, M> kind, Tuple tuid) {
    return ofKind(runtime, kind, tuid, Role.HOSTED);
  }

  /**
   * A ref of server {@code tuid} (the kind first): with the kind's behaviour and options if this
   * runtime hosts it ({@code hosted}), else publish-only with the open registry {@code types}. No
   * transaction.
   *
   * @param messageClass the message type this runtime gives the kind
   */
  public static <M> ServerRef<M> ref(
      ProcessContext runtime,
      @Nullable ProcessKind<?, M> hosted,
      KindTypes types,
      Class<?> messageClass,
      Tuple tuid,
      StartOptions bare) {
    if (hosted != null) {
      return ofKind(runtime, hosted, tuid, Role.REF);
    }
    JavaType object = runtime.services().serde().type(Object.class);
    return new ServerProcess<Object, M>(
        runtime, null, tuid, bare, object, object, messageClass, Role.REF, null, types);
  }

  private static <S, M> ServerProcess<S, M> ofKind(
      ProcessContext runtime, ProcessKind<S, M> kind, Tuple tuid, Role role) {
    return new ServerProcess<>(
        runtime,
        kind.newBehaviour(),
        tuid,
        kind.options(),
        kind.stateType(),
        kind.messageType(),
        kind.messageType().getRawClass(),
        role,
        kind,
        kind.types());
  }

  /**
   * Starts a hosted process's consume loop (after it was put where activations find it); the loop
   * of one stopped meanwhile only ends, so that its {@link #quiet} completes.
   */
  public void startConsuming() {
    if (lifecycle.isAlive()) {
      doorbell.register(keys.bucket(), keys.wakeId(), loop);
    }
    loop.start();
  }

  /** Runs {@code hook} when this process stops (a hosted one: when it is unloaded). */
  public void onStop(Runnable hook) {
    lifecycle.onStop(hook);
  }

  /** Completes once this process stopped and has no batch in flight. */
  public CompletableFuture<@Nullable Void> quiet() {
    return loop.quiet();
  }

  /** Since when its loop has been parked on an empty queue, or {@link Long#MIN_VALUE}. */
  public long idleSince() {
    return loop.idleSince();
  }

  /**
   * A hosted server's eviction: one transaction that reads its queue (serializably: a push landing
   * meanwhile conflicts with it) and its lock, and if the queue is empty and the server unlocked,
   * marks its entry idle and clears its ready index entry; with an expiry, records when it expires
   * unless a timer of it is pending ({@code Expiry}).
   *
   * @return true if it was evicted, or is gone (killed); false if it has work or a lock
   */
  public CompletableFuture<Boolean> evict() {
    return services
        .backend()
        .runAsync(
            tx -> {
              var head =
                  tx.getRangeAsync(keys.items().range().begin, keys.items().range().end, 1, false);
              var lock = tx.getAsync(keys.lockKey());
              var entry =
                  queue
                      .entry()
                      .evict(
                          tx,
                          ServerEntry.expiresAtEviction(
                              services.wallMillis(),
                              Objects.requireNonNull(kind).options(),
                              keys,
                              tx));
              tx.clear(keys.stuckKey()); // a server that could be evicted is stuck no more
              // The entry's idle mark is written whatever the queue holds: a busy server throws,
              // and the transaction commits nothing.
              return head.thenCombine(lock, (h, l) -> h.isEmpty() && l == null)
                  .thenCombine(entry, (empty, marked) -> empty)
                  .thenApply(
                      empty -> {
                        if (!empty) {
                          throw new Busy();
                        }
                        return true;
                      });
            })
        .exceptionally(
            e -> {
              if (io.dgen.backend.Futures.unwrap(e) instanceof Busy) {
                return false;
              }
              throw e instanceof RuntimeException r
                  ? r
                  : new java.util.concurrent.CompletionException(e);
            });
  }

  /** An eviction found work or a lock: nothing it wrote may commit. */
  private static final class Busy extends RuntimeException {
    private static final long serialVersionUID = 1L;

    Busy() {
      super("busy", null, false, false);
    }
  }

  /**
   * Loads (and completes) the type table, writes the initial state and the server's entry in the
   * tenant's server index, in one transaction; the table is learned once that has committed.
   */
  private void initialize(S initial, String behaviour) {
    Started started =
        commits.commit(
            tx -> {
              var table = queue.readTypes(tx); // both overlap the state store's read
              var index = queue.entry().readForIndex(tx);
              StateStore.Written written =
                  states.initialize(tx, initial, options instanceof StartOptions s && s.reset());
              long incarnation = queue.entry().index(tx, index, behaviour);
              return new Started(queue.completeTypes(tx, table), written, incarnation);
            });
    Objects.requireNonNull(started);
    types.learn(started.types());
    queue.entry().startedIn(started.incarnation());
  }

  /**
   * What the start transaction did: the type table it saw or wrote, the state it wrote, and the
   * incarnation of the server it started in.
   */
  private record Started(
      Map<Integer, String> types, StateStore.@Nullable Written state, long incarnation)
      implements CommitRunner.WritesState {
    @Override
    public @Nullable StoredState written() {
      return state == null ? null : state.written();
    }
  }

  private void ensureAlive() {
    lifecycle.ensureAlive();
  }

  // ---------------------------------------------------------------- pushes

  @Override
  public CompletableFuture<Void> castAsync(M message) {
    return ifAlive(
        "cast",
        () -> {
          return push(List.of(queue.encode(Envelope.CAST, message, null)), "cast");
        });
  }

  @Override
  public CompletableFuture<Void> castAllAsync(List<? extends M> messages) {
    return ifAlive(
        "castAll",
        () -> {
          Objects.requireNonNull(messages, "messages must not be null");
          List<byte[]> envs = new ArrayList<>(messages.size());
          for (M m : messages) {
            envs.add(queue.encode(Envelope.CAST, m, null));
          }
          if (envs.isEmpty()) {
            return CompletableFuture.completedFuture(null);
          }
          return push(envs, "castAll");
        });
  }

  /** Pushes plain casts, alone or with the other casts of this runtime's threads (group commit). */
  private CompletableFuture<Void> push(List<byte[]> envelopes, String operation) {
    ProcessKind<S, M> hosted = role == Role.REF ? kind : null;
    return runtime
        .pushGroups()
        .push(queue, commits, envelopes, operation)
        .thenApply(
            done -> {
              if (hosted != null) {
                hosted.activateAfterPush(tuid);
              }
              return null;
            });
  }

  /**
   * Runs {@code operation}'s {@code op} if this process is alive, else returns a future failed with
   * {@link io.dgen.ServerStoppedException}. Bad arguments still throw at once, from {@code op}; any
   * other failure fails the future, as a {@link io.dgen.DGenException} ({@link CallerFailures}).
   */
  private <T> CompletableFuture<T> ifAlive(String operation, Supplier<CompletableFuture<T>> op) {
    if (!lifecycle.isAlive()) {
      try {
        ensureAlive();
      } catch (RuntimeException stopped) {
        return CompletableFuture.failedFuture(stopped);
      }
    }
    CompletableFuture<T> f;
    try {
      f = op.get();
    } catch (IllegalArgumentException | NullPointerException badArgument) {
      throw badArgument;
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(CallerFailures.of(e, operation, context));
    }
    return CallerFailures.mapped(f, operation, context);
  }

  @Override
  public CompletableFuture<Boolean> castAsync(M message, String idempotencyKey) {
    return ifAlive("cast", () -> requests.cast(message, idempotencyKey));
  }

  @Override
  public CompletableFuture<String> castAfterAsync(M message, Duration delay) {
    return ifAlive("castAfter", () -> timers.castAfter(message, delay));
  }

  @Override
  public CompletableFuture<String> castAtAsync(M message, Instant when) {
    return ifAlive("castAt", () -> timers.castAt(message, when));
  }

  @Override
  public CompletableFuture<String> castEveryAsync(M message, Duration period) {
    return ifAlive("castEvery", () -> timers.castEvery(message, period));
  }

  @Override
  public CompletableFuture<String> castCronAsync(M message, String cron, java.time.ZoneId zone) {
    return ifAlive("castCron", () -> timers.castCron(message, cron, zone));
  }

  @Override
  public CompletableFuture<Boolean> cancelTimerAsync(String timerId) {
    return ifAlive("cancelTimer", () -> timers.cancel(timerId));
  }

  @Override
  public Outbox<M> outbox() {
    ensureAlive();
    return requests.outbox();
  }

  @Override
  public CompletableFuture<Long> queueLengthAsync() {
    return ifAlive(
        "queueLength",
        () -> commits.readBounded(queue::length, "queueLength", services.scheduler()));
  }

  // ---------------------------------------------------------------- calls

  @Override
  public <R> CompletableFuture<R> callAsync(Call<R> request) {
    return callAsync(request, options.callTimeout());
  }

  @Override
  public <R> CompletableFuture<R> callAsync(Call<R> request, Duration timeout) {
    Objects.requireNonNull(request, "request must not be null");
    return callInternal(message(request), ReplyTypes.of(request.getClass()), timeout);
  }

  @Override
  public <R> CompletableFuture<R> callAsync(M request, Class<R> replyType, Duration timeout) {
    Objects.requireNonNull(replyType, "replyType must not be null");
    return callInternal(request, replyType, timeout);
  }

  /**
   * A typed request as this server's message: a {@link Call} of another type is refused when it is
   * encoded or run, before anything is written.
   */
  @SuppressWarnings("unchecked")
  private M message(Call<?> request) {
    return (M) request;
  }

  @Override
  public <R> CompletableFuture<R> callAsync(
      Call<R> request, String idempotencyKey, Duration timeout) {
    return ifAlive("call", () -> requests.<R>call(message(request), idempotencyKey, timeout));
  }

  @Override
  public CompletableFuture<String> submitAsync(M request) {
    return ifAlive("submit", () -> requests.submit(request));
  }

  @Override
  public <R> CompletableFuture<R> awaitReplyAsync(String callId, Duration timeout) {
    return ifAlive("awaitReply", () -> requests.awaitReply(callId, timeout));
  }

  private <R> CompletableFuture<R> callInternal(
      M request, @Nullable Type replyType, Duration timeout) {
    Objects.requireNonNull(request, "request must not be null");
    queue.tag(request); // a wrong type throws at once, in the async form too
    IdempotentRequests.checkTimeout(timeout);
    ProcessKind.Loaded<M> local =
        role == Role.REF && kind != null ? kind.loadedProcess(tuid) : null;
    if (local != null && options.consumeK() == 1 && options.rateLimit().isEmpty()) {
      // Inline where it runs. A process unloaded since it was looked up (a hand-off, an eviction,
      // a deactivation) refuses before anything ran: the call is then queued as by any ref, for
      // whichever process runs the server next. For a ref, "stopped" would mean killed.
      CompletableFuture<R> inline = local.callIfAlive(request, replyType, timeout);
      if (inline != null) {
        return CallerFailures.mapped(inline, "call", context);
      }
    }
    return CallerFailures.mapped(route(request, replyType, timeout, true), "call", context);
  }

  /** {@link #callInternal} in this process if it is alive; null (nothing done) if it is not. */
  @Override
  public <R> @Nullable CompletableFuture<R> callIfAlive(
      M request, @Nullable Type replyType, Duration timeout) {
    return lifecycle.isAlive() ? route(request, replyType, timeout, false) : null;
  }

  /** Runs the call inline in this process or queues it (a ref's, or with batches over one). */
  private <R> CompletableFuture<R> route(
      M request, @Nullable Type replyType, Duration timeout, boolean checkAlive) {
    long start = services.nanoTime();
    try {
      if (checkAlive) {
        ensureAlive();
      }
      From from = slots.newFrom();
      queue.tag(request); // refuse a message of a wrong type before any transaction
      // Serialized only if the call is queued: an inline call never stores its envelope.
      Supplier<byte[]> env = Suppliers.memoize(() -> queue.encode(Envelope.CALL, request, from));
      CallProtocol.Waiting<R> waiting = calls.waiting(from, replyType, timeout);
      CompletableFuture<InlineRunner.Outcome<S>> sent =
          runsInline()
              ? inline.call(request, from, env, waiting)
              : calls
                  .pushOnce(env.get(), waiting)
                  .thenApply(pushed -> InlineRunner.Outcome.queuedInstead());
      CompletableFuture<R> reply =
          sent.handle(
                  (outcome, err) -> {
                    if (err != null) {
                      waiting.abandon(Futures.unwrap(err));
                      return waiting.result();
                    }
                    return outcome.queued()
                        ? waiting.await()
                        : CompletableFuture.completedFuture(
                            slots.<R>local(outcome.reply(), replyType));
                  })
              .thenCompose(f -> f);
      return meters.call(start, sent, reply);
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  // ---------------------------------------------------------------- priority messages

  @Override
  public <R> R priorityCall(Call<R> request) {
    queue.checkType(request);
    Type replyType = ReplyTypes.of(request.getClass());
    return priority(
        "priorityCall",
        () -> {
          if (behaviourElsewhere()) {
            return toHolder(Envelope.CALL, request, replyType);
          }
          try {
            return meters.priority(
                () ->
                    slots.<R>local(
                        inline.priorityCall(message(request), slots.newFrom()), replyType));
          } catch (InlineRunner.ToHolder mayHaveExpired) {
            return toHolder(Envelope.CALL, request, replyType);
          }
        });
  }

  @Override
  public void priorityCast(M message) {
    queue.checkType(message);
    ServerQueue.refuseCall(message);
    priorityNoReply("priorityCast", Envelope.CAST, message, () -> inline.priorityCast(message));
  }

  @Override
  public void info(Object info) {
    Objects.requireNonNull(info, "info must not be null");
    priorityNoReply("info", Envelope.INFO, info, () -> inline.info(info));
  }

  /**
   * A priority cast or info: run {@code here}, or by the holder if the kind is hosted elsewhere.
   */
  private void priorityNoReply(String operation, int type, Object message, Runnable here) {
    priority(
        operation,
        () -> {
          if (behaviourElsewhere()) {
            return toHolder(type, message, null);
          }
          try {
            here.run();
          } catch (InlineRunner.ToHolder mayHaveExpired) {
            return toHolder(type, message, null);
          }
          return null;
        });
  }

  /** Runs a priority message in the caller's thread; its failure as {@link CallerFailures} says. */
  private <R> R priority(String operation, Supplier<R> run) {
    try {
      return run.get();
    } catch (IllegalArgumentException | NullPointerException badArgument) {
      throw badArgument;
    } catch (RuntimeException e) {
      throw CallerFailures.toThrow(e, operation, context);
    }
  }

  /**
   * Whether a call runs inline when the queue is empty and the server unlocked: with {@code
   * consumeK} 1 and no rate limit, in a process that consumes, or through a ref in any runtime that
   * hosts the kind (its behaviour is here), whether or not it holds the server's bucket.
   */
  private boolean runsInline() {
    return (role == Role.REF ? kind != null : consume)
        && options.consumeK() == 1
        && options.rateLimit().isEmpty();
  }

  /**
   * This server's part in an atomic transaction of {@code caller}'s: the inline runner whose steps
   * it runs, as an inline call's (a ref's, as a visitor's).
   *
   * @throws IllegalArgumentException if this is another runtime's, or its calls do not run inline
   *     here (its behaviour is not here; batches over one, or a rate limit)
   */
  public InlinePart<S, M> atomicPart(RuntimeServices caller) {
    if (caller != services) {
      throw new IllegalArgumentException("server " + tuid + " is a ref of another DGen");
    }
    ensureAlive();
    if (!runsInline()) {
      throw new IllegalArgumentException(
          (behaviourElsewhere()
                  ? "this runtime does not host the kind of server "
                      + tuid
                      + ", so it cannot run its callbacks: host the kind here (holdBuckets(false)"
                      + " hosts it without taking its buckets)"
                  : "the calls of server "
                      + tuid
                      + " never run inline (it does not consume here, consumes in batches over"
                      + " one, or is rate limited), so atomic work cannot run them")
              + "; nothing was committed: "
              + context);
    }
    return new InlinePart<>(inline, slots, queue, keys, context);
  }

  /** Whether this is a ref whose runtime does not host its kind: its code runs elsewhere. */
  private boolean behaviourElsewhere() {
    return role == Role.REF && kind == null;
  }

  /**
   * A priority message of a ref whose runtime does not host the kind: queued at the head for the
   * holder, which runs it next and replies; waits at most the call timeout.
   */
  @SuppressWarnings("unchecked")
  private <R> R toHolder(int type, Object message, @Nullable Type replyType) {
    ensureAlive();
    From from = slots.newFrom();
    byte[] env = queue.encode(type | Envelope.PRIORITY, (M) message, from);
    return Futures.join(calls.<R>toHolder(env, from, replyType, options.callTimeout()));
  }

  // ---------------------------------------------------------------- failures and dead letters

  @Override
  public CompletableFuture<List<DeadLetter<M>>> deadLettersAsync() {
    return ifAlive("deadLetters", deadLetters::list);
  }

  @Override
  public CompletableFuture<Boolean> requeueDeadLetterAsync(String id, boolean head) {
    return ifAlive("requeueDeadLetter", () -> deadLetters.requeue(id, head));
  }

  @Override
  public CompletableFuture<Boolean> purgeDeadLetterAsync(String id) {
    return ifAlive("purgeDeadLetter", () -> deadLetters.purge(id));
  }

  @Override
  public CompletableFuture<Integer> purgeDeadLettersAsync() {
    return ifAlive("purgeDeadLetters", deadLetters::purgeAll);
  }

  // ---------------------------------------------------------------- lifecycle

  @Override
  public Tuple tuid() {
    return tuid;
  }

  @Override
  public Tenant tenant() {
    return tenant;
  }

  @Override
  public Optional<String> name() {
    return options instanceof StartOptions s ? s.name() : Optional.empty();
  }

  /**
   * The test kit's drain: runs the queue to empty in this thread ({@link CallerDrain#run}). A ref's
   * drains the server's process in this runtime, which must hold its bucket.
   *
   * @throws IllegalStateException if the runtime has background consumers, or this is a ref whose
   *     kind this runtime does not host or whose bucket it does not hold
   */
  public int drainInCaller(int maxFailures) {
    ensureAlive();
    if (role == Role.REF) {
      if (kind == null) {
        throw new IllegalStateException(
            "this runtime does not host the kind of server "
                + tuid
                + ": host it to drain its servers here");
      }
      return kind.drainInCaller(tuid, maxFailures);
    }
    return loop.drainInCaller(maxFailures);
  }

  @Override
  public ProcessRef<M> ref() {
    return this;
  }

  @Override
  public ServerKeys keys() {
    return keys;
  }

  @Override
  public boolean isAlive() {
    return lifecycle.isAlive();
  }

  @Override
  public void stop() {
    lifecycle.terminate(null);
  }

  @Override
  public CompletableFuture<Void> termination() {
    return lifecycle.termination();
  }

  @Override
  public CompletableFuture<Void> killAsync(Object reason) {
    return ifAlive(
        "kill",
        () -> {
          // Idempotent by the incarnation its first attempt found (a commit marker would outlive
          // the server): a retry after an applied commit_unknown_result spares a server started
          // meanwhile.
          ServerKeys.KillTarget target = new ServerKeys.KillTarget();
          return services
              .operations()
              .runAsync(
                  services.backend(),
                  tx -> keys.killAsync(tx, doorbell.keys(), target, services.blocking()),
                  services.scheduler(),
                  "kill",
                  context)
              .thenRun(
                  () -> {
                    log.info("server killed: {} reason={}", context, reason);
                    runtime.processes().stopLocal(keys, target.incarnation());
                  });
        });
  }

  /** The incarnation of the server this process started in (see {@link ServerEntry}). */
  @Override
  public long incarnation() {
    return queue.entry().incarnation();
  }

  @Override
  public String toString() {
    return "ServerRef{" + context + (lifecycle.isAlive() ? "" : " stopped") + "}";
  }
}
