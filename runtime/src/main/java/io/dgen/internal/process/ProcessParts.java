package io.dgen.internal.process;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.DGenServer;
import io.dgen.ServerOptions;
import io.dgen.ServerRef;
import io.dgen.StartOptions;
import io.dgen.Tenant;
import io.dgen.internal.base.Lifecycle;
import io.dgen.internal.base.RuntimeServices;
import io.dgen.internal.behaviour.CallbackInvoker;
import io.dgen.internal.behaviour.Unhosted;
import io.dgen.internal.calls.CallProtocol;
import io.dgen.internal.calls.ReplySlots;
import io.dgen.internal.codec.TypeRegistry;
import io.dgen.internal.commit.CommitRunner;
import io.dgen.internal.commit.Fence;
import io.dgen.internal.consume.ConsumeLoop;
import io.dgen.internal.consume.ConsumerBatch;
import io.dgen.internal.consume.ConsumerParts;
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
import java.util.Objects;
import org.jspecify.annotations.Nullable;
import tools.jackson.databind.JavaType;

/**
 * The components of one server's process, wired bottom-up (each gets only the ones below it) and
 * held for the process's facade ({@code ServerProcess}), its {@link CallRouter} and its {@link
 * ProcessTransactions}.
 *
 * <p>Threading: immutable once built; each component is thread-safe on its own.
 *
 * @param <S> the state type
 * @param <M> the message type
 */
final class ProcessParts<S, M> {

  final ProcessContext runtime;
  final RuntimeServices services;
  final Tenant tenant;
  final Tuple tuid;
  final ServerOptions options;

  /** Whether its options let it consume: a hosted kind's always do. */
  final boolean consume;

  final ServerKeys keys;
  final TypeRegistry types;
  final String context;
  final Lifecycle lifecycle;
  final StateStore<S> states;
  final CommitRunner commits;
  final ServerQueue<M> queue;
  final Timers<M> timers;
  final ReplySlots slots;
  final CallProtocol calls;
  final InlineRunner<S, M> inline;
  final DeadLetters<M> deadLetters;
  final TenantWatcher doorbell;
  final ConsumeLoop<S, M> loop;
  final Meters meters;
  final IdempotentRequests<M> requests;

  final ProcessRole role;
  final @Nullable ProcessKind<S, M> kind;
  final @Nullable Fence fence;

  /**
   * Wires a process's components. Registers on its lifecycle what its stop must undo: a started
   * process's retained bucket timers, a consuming one's doorbell registration and loop.
   *
   * @param server its behaviour, or null for a ref whose runtime does not host its kind
   * @param kindTypes the kind's type registry, or null for a started server
   * @param self the process, as the runtime's listener is told of it
   */
  ProcessParts(
      ProcessContext runtime,
      @Nullable DGenServer<S, M> server,
      Tuple tuid,
      ServerOptions options,
      JavaType stateType,
      JavaType messageType,
      Class<?> messageClass,
      ProcessRole role,
      @Nullable ProcessKind<S, M> kind,
      @Nullable KindTypes kindTypes,
      ServerRef<M> self) {
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
    this.fence =
        role == ProcessRole.HOSTED ? Objects.requireNonNull(kind).fence(keys.bucket()) : null;
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
            role != ProcessRole.STARTED,
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
    if (role == ProcessRole.STARTED) {
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
    Object id =
        kind != null ? kind.idOf(tuid) : role == ProcessRole.STARTED ? tuid : tuid.popFront();
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
            (message, reason) -> services.castRefused(self, message, reason),
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
            role == ProcessRole.REF,
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
        role != ProcessRole.REF && consume
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
            role == ProcessRole.HOSTED ? Objects.requireNonNull(kind).lockHolders() : null,
            services::wallMillis,
            fenced -> services.lockFenced(self, fenced),
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
                undecodable -> services.stateUndecodable(self, undecodable)),
            doorbell,
            keys.bucket(),
            rate,
            gate,
            context);
    if (role != ProcessRole.REF && consume) {
      lifecycle.onStop(
          () -> {
            doorbell.unregister(keys.bucket(), keys.wakeId(), loop);
            loop.stopped();
          });
    }
  }
}
