package io.dgen.internal.process;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.Call;
import io.dgen.DGenException;
import io.dgen.DGenServer;
import io.dgen.DeadLetter;
import io.dgen.InitResult;
import io.dgen.Outbox;
import io.dgen.ProcessRef;
import io.dgen.ServerOptions;
import io.dgen.ServerRef;
import io.dgen.StartOptions;
import io.dgen.Tenant;
import io.dgen.admin.ServerControl;
import io.dgen.internal.base.CallerFailures;
import io.dgen.internal.base.RuntimeServices;
import io.dgen.internal.behaviour.Init;
import io.dgen.internal.codec.Envelope;
import io.dgen.internal.codec.ReplyTypes;
import io.dgen.internal.consume.CallerDrain;
import io.dgen.internal.consume.InlinePart;
import io.dgen.internal.keys.ServerEntry;
import io.dgen.internal.keys.ServerKeys;
import io.dgen.internal.queue.KindTypes;
import java.lang.reflect.Type;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import tools.jackson.databind.JavaType;

/**
 * One process of a durable server, and the {@link ServerRef} handed to users: a thin facade over
 * the process's components ({@link ProcessParts}), the routes of its calls and priority messages
 * ({@link CallRouter}) and its transactions ({@link ProcessTransactions}). It owns only its
 * creation in one of its roles ({@link ProcessRole}), argument checks, liveness checks, and that
 * every failure its callers get is a {@link DGenException} ({@link CallerFailures}).
 *
 * <p>Never reads or writes keys itself: each component owns its part of the key layout, and {@link
 * ProcessTransactions} the few transactions across them. See {@code docs/architecture.md} for the
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

  /** Its components, wired bottom-up. */
  private final ProcessParts<S, M> parts;

  /** The routes of its calls and priority messages. */
  private final CallRouter<S, M> router;

  /** Its start, eviction and kill. */
  private final ProcessTransactions<S, M> transactions;

  private ServerProcess(
      ProcessContext runtime,
      @Nullable DGenServer<S, M> server,
      Tuple tuid,
      ServerOptions options,
      JavaType stateType,
      JavaType messageType,
      Class<?> messageClass,
      ProcessRole role,
      @Nullable ProcessKind<S, M> kind,
      @Nullable KindTypes kindTypes) {
    this.parts =
        new ProcessParts<>(
            runtime,
            server,
            tuid,
            options,
            stateType,
            messageType,
            messageClass,
            role,
            kind,
            kindTypes,
            this);
    this.router = new CallRouter<>(parts);
    this.transactions = new ProcessTransactions<>(parts);
    if (role == ProcessRole.STARTED) {
      parts.lifecycle.onStop(() -> runtime.processes().unregister(this));
      parts.lifecycle.onStop(() -> parts.meters.server().stopped(this));
    }
  }

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
    Tuple tuid = init.tuid() != null ? init.tuid() : DefaultTuid.of(services, server, options);
    ServerProcess<S, M> p =
        new ServerProcess<>(
            runtime,
            server,
            tuid,
            options,
            stateType,
            messageType,
            messageType.getRawClass(),
            ProcessRole.STARTED,
            null,
            null);
    try {
      p.transactions.initialize(Objects.requireNonNull(init.state()), server.getClass().getName());
      runtime.processes().register(p);
    } catch (Throwable t) {
      // the process never lived: nothing else of it to stop, but its bucket's timers are retained
      runtime.tenant(p.parts.tenant).releaseTimers(p.parts.keys.bucket());
      throw t;
    }
    p.parts.meters.server().started(p);
    if (options.consume() && services.hooks().backgroundConsumers()) {
      p.parts.doorbell.register(p.parts.keys.bucket(), p.parts.keys.wakeId(), p.parts.loop);
      p.parts.loop.start();
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
    return ofKind(runtime, kind, tuid, ProcessRole.HOSTED);
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
      return ofKind(runtime, hosted, tuid, ProcessRole.REF);
    }
    JavaType object = runtime.services().serde().type(Object.class);
    return new ServerProcess<Object, M>(
        runtime, null, tuid, bare, object, object, messageClass, ProcessRole.REF, null, types);
  }

  private static <S, M> ServerProcess<S, M> ofKind(
      ProcessContext runtime, ProcessKind<S, M> kind, Tuple tuid, ProcessRole role) {
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
    if (parts.lifecycle.isAlive()) {
      parts.doorbell.register(parts.keys.bucket(), parts.keys.wakeId(), parts.loop);
    }
    parts.loop.start();
  }

  /** Runs {@code hook} when this process stops (a hosted one: when it is unloaded). */
  public void onStop(Runnable hook) {
    parts.lifecycle.onStop(hook);
  }

  /** Completes once this process stopped and has no batch in flight. */
  public CompletableFuture<@Nullable Void> quiet() {
    return parts.loop.quiet();
  }

  /** Since when its loop has been parked on an empty queue, or {@link Long#MIN_VALUE}. */
  public long idleSince() {
    return parts.loop.idleSince();
  }

  /**
   * A hosted server's eviction, if its queue is empty and it is unlocked ({@link
   * ProcessTransactions#evict}).
   *
   * @return true if it was evicted, or is gone (killed); false if it has work or a lock
   */
  public CompletableFuture<Boolean> evict() {
    return transactions.evict();
  }

  private void ensureAlive() {
    parts.lifecycle.ensureAlive();
  }

  // ---------------------------------------------------------------- pushes

  @Override
  public CompletableFuture<Void> castAsync(M message) {
    return ifAlive(
        "cast",
        () -> {
          return push(List.of(parts.queue.encode(Envelope.CAST, message, null)), "cast");
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
            envs.add(parts.queue.encode(Envelope.CAST, m, null));
          }
          if (envs.isEmpty()) {
            return CompletableFuture.completedFuture(null);
          }
          return push(envs, "castAll");
        });
  }

  /** Pushes plain casts, alone or with the other casts of this runtime's threads (group commit). */
  private CompletableFuture<Void> push(List<byte[]> envelopes, String operation) {
    ProcessKind<S, M> hosted = parts.role == ProcessRole.REF ? parts.kind : null;
    return parts
        .runtime
        .pushGroups()
        .push(parts.queue, parts.commits, envelopes, operation)
        .thenApply(
            done -> {
              if (hosted != null) {
                hosted.activateAfterPush(parts.tuid);
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
    if (!parts.lifecycle.isAlive()) {
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
      return CompletableFuture.failedFuture(CallerFailures.of(e, operation, parts.context));
    }
    return CallerFailures.mapped(f, operation, parts.context);
  }

  @Override
  public CompletableFuture<Boolean> castAsync(M message, String idempotencyKey) {
    return ifAlive("cast", () -> parts.requests.cast(message, idempotencyKey));
  }

  @Override
  public CompletableFuture<String> castAfterAsync(M message, Duration delay) {
    return ifAlive("castAfter", () -> parts.timers.castAfter(message, delay));
  }

  @Override
  public CompletableFuture<String> castAtAsync(M message, Instant when) {
    return ifAlive("castAt", () -> parts.timers.castAt(message, when));
  }

  @Override
  public CompletableFuture<String> castEveryAsync(M message, Duration period) {
    return ifAlive("castEvery", () -> parts.timers.castEvery(message, period));
  }

  @Override
  public CompletableFuture<String> castCronAsync(M message, String cron, java.time.ZoneId zone) {
    return ifAlive("castCron", () -> parts.timers.castCron(message, cron, zone));
  }

  @Override
  public CompletableFuture<Boolean> cancelTimerAsync(String timerId) {
    return ifAlive("cancelTimer", () -> parts.timers.cancel(timerId));
  }

  @Override
  public Outbox<M> outbox() {
    ensureAlive();
    return parts.requests.outbox();
  }

  @Override
  public CompletableFuture<Long> queueLengthAsync() {
    return ifAlive(
        "queueLength",
        () ->
            parts.commits.readBounded(
                parts.queue::length, "queueLength", parts.services.scheduler()));
  }

  // ---------------------------------------------------------------- calls

  @Override
  public <R> CompletableFuture<R> callAsync(Call<R> request) {
    return callAsync(request, parts.options.callTimeout());
  }

  @Override
  public <R> CompletableFuture<R> callAsync(Call<R> request, Duration timeout) {
    Objects.requireNonNull(request, "request must not be null");
    return router.call(CallRouter.<M>message(request), ReplyTypes.of(request.getClass()), timeout);
  }

  @Override
  public <R> CompletableFuture<R> callAsync(M request, Class<R> replyType, Duration timeout) {
    Objects.requireNonNull(replyType, "replyType must not be null");
    return router.call(request, replyType, timeout);
  }

  @Override
  public <R> CompletableFuture<R> callAsync(
      Call<R> request, String idempotencyKey, Duration timeout) {
    return ifAlive(
        "call",
        () -> parts.requests.<R>call(CallRouter.<M>message(request), idempotencyKey, timeout));
  }

  @Override
  public CompletableFuture<String> submitAsync(M request) {
    return ifAlive("submit", () -> parts.requests.submit(request));
  }

  @Override
  public <R> CompletableFuture<R> awaitReplyAsync(String callId, Duration timeout) {
    return ifAlive("awaitReply", () -> parts.requests.awaitReply(callId, timeout));
  }

  /**
   * A call routed by this process ({@link CallRouter#route}) if it is alive; null (nothing done) if
   * it is not.
   */
  @Override
  public <R> @Nullable CompletableFuture<R> callIfAlive(
      M request, @Nullable Type replyType, Duration timeout) {
    return parts.lifecycle.isAlive() ? router.route(request, replyType, timeout, false) : null;
  }

  // ---------------------------------------------------------------- priority messages

  @Override
  public <R> R priorityCall(Call<R> request) {
    return router.priorityCall(request);
  }

  @Override
  public void priorityCast(M message) {
    router.priorityCast(message);
  }

  @Override
  public void info(Object info) {
    router.info(info);
  }

  /**
   * This server's part in an atomic transaction of {@code caller}'s ({@link
   * CallRouter#atomicPart}).
   *
   * @throws IllegalArgumentException if this is another runtime's, or its calls do not run inline
   *     here (its behaviour is not here; batches over one, or a rate limit)
   */
  public InlinePart<S, M> atomicPart(RuntimeServices caller) {
    return router.atomicPart(caller);
  }

  // ---------------------------------------------------------------- failures and dead letters

  @Override
  public CompletableFuture<List<DeadLetter<M>>> deadLettersAsync() {
    return ifAlive("deadLetters", parts.deadLetters::list);
  }

  @Override
  public CompletableFuture<Boolean> requeueDeadLetterAsync(String id, boolean head) {
    return ifAlive("requeueDeadLetter", () -> parts.deadLetters.requeue(id, head));
  }

  @Override
  public CompletableFuture<Boolean> purgeDeadLetterAsync(String id) {
    return ifAlive("purgeDeadLetter", () -> parts.deadLetters.purge(id));
  }

  @Override
  public CompletableFuture<Integer> purgeDeadLettersAsync() {
    return ifAlive("purgeDeadLetters", parts.deadLetters::purgeAll);
  }

  // ---------------------------------------------------------------- lifecycle

  @Override
  public Tuple tuid() {
    return parts.tuid;
  }

  @Override
  public Tenant tenant() {
    return parts.tenant;
  }

  @Override
  public Optional<String> name() {
    return parts.options instanceof StartOptions s ? s.name() : Optional.empty();
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
    if (parts.role == ProcessRole.REF) {
      if (parts.kind == null) {
        throw new IllegalStateException(
            "this runtime does not host the kind of server "
                + parts.tuid
                + ": host it to drain its servers here");
      }
      return parts.kind.drainInCaller(parts.tuid, maxFailures);
    }
    return parts.loop.drainInCaller(maxFailures);
  }

  @Override
  public ProcessRef<M> ref() {
    return this;
  }

  @Override
  public ServerKeys keys() {
    return parts.keys;
  }

  @Override
  public boolean isAlive() {
    return parts.lifecycle.isAlive();
  }

  @Override
  public void stop() {
    parts.lifecycle.terminate(null);
  }

  @Override
  public CompletableFuture<Void> termination() {
    return parts.lifecycle.termination();
  }

  @Override
  public CompletableFuture<Void> killAsync(Object reason) {
    return ifAlive("kill", () -> transactions.kill(reason));
  }

  /** The incarnation of the server this process started in (see {@link ServerEntry}). */
  @Override
  public long incarnation() {
    return parts.queue.entry().incarnation();
  }

  @Override
  public String toString() {
    return "ServerRef{" + parts.context + (parts.lifecycle.isAlive() ? "" : " stopped") + "}";
  }
}
