package io.dgen.internal;

import com.apple.foundationdb.tuple.Tuple;
import com.google.common.base.Suppliers;
import com.google.common.reflect.TypeToken;
import io.dgen.Action;
import io.dgen.DGenException;
import io.dgen.DGenServer;
import io.dgen.DeadLetter;
import io.dgen.Event;
import io.dgen.From;
import io.dgen.InitResult;
import io.dgen.Outbox;
import io.dgen.Result;
import io.dgen.ServerRef;
import io.dgen.ServerStoppedException;
import io.dgen.StartOptions;
import io.dgen.StateTooLargeException;
import io.dgen.Tenant;
import io.dgen.backend.BackendException;
import io.dgen.backend.Futures;
import io.dgen.backend.KeyValue;
import io.dgen.backend.Transaction;
import io.dgen.internal.codec.Chunks;
import io.dgen.internal.codec.Envelope;
import io.dgen.internal.codec.StoredState;
import io.dgen.internal.codec.TypeRegistry;
import java.lang.reflect.Type;
import java.lang.reflect.TypeVariable;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import tools.jackson.databind.JavaType;
import tools.jackson.databind.JsonNode;

/**
 * One process of a durable server: the consume loop, the call protocol, and the handle returned to
 * users.
 *
 * <p>Threading: the consume loop runs on the shared worker pool, at most one batch at a time per
 * process ({@link #scheduled} is the guard). Calls, casts and priority messages run in the caller's
 * thread.
 *
 * @param <S> the state type
 * @param <M> the message type
 */
public final class ServerProcess<S, M> implements ServerRef<M> {

  private static final Logger log = LoggerFactory.getLogger(ServerProcess.class);

  private static final byte[] EMPTY = new byte[0];

  /** Leaves room in the value for the failure count and id written into a failing item. */
  private static final int MAX_ENVELOPE = Chunks.MAX_VALUE - 256;

  private static final int CACHE_MISS_BACKOFF_CAP_MS = 50;
  private static final long BATCH_SLICE_NANOS = TimeUnit.MILLISECONDS.toNanos(20);

  /** A batch stops taking items past about 1 MB of writes, far below FoundationDB's 10 MB. */
  static final long BATCH_BYTES = 1_000_000;

  /** A batch stops taking items after one second, far below FoundationDB's five. */
  static final long BATCH_NANOS = TimeUnit.SECONDS.toNanos(1);

  private final RuntimeCore core;
  private final DGenServer<S, M> server;
  private final Tenant tenant;
  private final Tuple tuid;
  private final StartOptions options;
  private final ServerKeys keys;
  private final TypeRegistry types;
  private final String context;
  private final StateStore<S> states;
  private final CommitRunner commits;
  private final ServerQueue<M> queue;
  private final ReplySlots slots;
  private final CallProtocol calls;
  private final CallbackInvoker<S, M> invoker;
  private final InlineRunner<S, M> inline;
  private final DeadLetters<M> deadLetters;
  private final Sweeper sweeper;
  private final LockCoordinator<S, M> locks;
  private final Lifecycle lifecycle;
  private final AtomicBoolean scheduled = new AtomicBoolean();

  private volatile @Nullable CompletableFuture<Void> idleWatch;
  // Touched only by the consume loop, which never runs concurrently with itself.
  private int consecutiveFailures;
  private int limitOverride;

  private ServerProcess(
      RuntimeCore core,
      DGenServer<S, M> server,
      Tuple tuid,
      StartOptions options,
      JavaType stateType,
      JavaType messageType) {
    this.core = core;
    this.server = server;
    this.tenant = options.tenant();
    this.tuid = tuid;
    this.options = options;
    this.keys = new ServerKeys(tenant.subspace(), tuid);
    this.types = new TypeRegistry(core.serde(), messageType, stateType, options.allowedTypes());
    this.context = "tenant=" + tenant.path() + " tuid=" + tuid;
    this.states =
        new StateStore<>(keys, core.codec(), core.serde(), stateType, options.cache(), context);
    this.commits = new CommitRunner(core.backend(), keys, states);
    this.queue = new ServerQueue<>(keys, core.serde(), types, context);
    this.slots =
        new ReplySlots(core.backend(), keys, core.serde(), types, core::wallMillis, context);
    this.calls = new CallProtocol(core, commits, queue, slots, context);
    this.invoker =
        new CallbackInvoker<>(server, core.backend(), tenant, tuid, core::nanoTime, context);
    this.lifecycle = new Lifecycle(context);
    this.inline =
        new InlineRunner<>(
            keys,
            commits,
            states,
            queue,
            calls,
            slots,
            invoker,
            lifecycle,
            core::nanoTime,
            context);
    this.deadLetters =
        new DeadLetters<>(
            core.backend(),
            keys,
            core.serde(),
            commits,
            queue,
            slots,
            invoker,
            core::wallMillis,
            context);
    this.sweeper = new Sweeper(keys, core::wallMillis);
    this.locks =
        new LockCoordinator<>(
            keys,
            core.serde(),
            commits,
            states,
            queue,
            slots,
            invoker,
            lifecycle,
            options.lockTimeout(),
            core::wallMillis,
            context);
    lifecycle.onStop(
        () -> {
          CompletableFuture<Void> w = idleWatch;
          if (w != null) {
            w.cancel(false);
          }
        });
    lifecycle.onStop(() -> core.unregister(this));
  }

  /**
   * Runs {@code init}, writes the initial state unless durable state exists (or {@code reset}),
   * registers the process and starts consuming.
   *
   * @throws DGenException if {@code init} throws or refuses
   */
  public static <S, M> ServerProcess<S, M> start(
      RuntimeCore core, DGenServer<S, M> server, @Nullable Object arg, StartOptions options) {
    Objects.requireNonNull(server, "server must not be null");
    Objects.requireNonNull(options, "options must not be null");
    JavaType stateType = core.serde().type(typeArgument(server, 0));
    JavaType messageType = core.serde().type(typeArgument(server, 1));
    InitResult<S> init;
    try {
      init = server.init(arg);
    } catch (Exception e) {
      throw new DGenException(
          "init failed: server=" + server.getClass().getName() + " tenant=" + options.tenant(), e);
    }
    if (init == null) {
      throw new DGenException(
          "init returned null: server="
              + server.getClass().getName()
              + "; return InitResult.ok(state) or InitResult.error(reason)");
    }
    if (init.isError()) {
      throw new DGenException(
          "init refused to start: server="
              + server.getClass().getName()
              + " reason="
              + init.error());
    }
    Tuple tuid =
        init.tuid() != null ? init.tuid() : Tuple.from("dgen_server", server.getClass().getName());
    ServerProcess<S, M> p =
        new ServerProcess<>(core, server, tuid, options, stateType, messageType);
    p.initialize(Objects.requireNonNull(init.state()));
    core.register(p);
    if (options.consume()) {
      p.schedule();
    }
    return p;
  }

  private static Type typeArgument(DGenServer<?, ?> server, int index) {
    TypeVariable<?> variable = DGenServer.class.getTypeParameters()[index];
    Type resolved = TypeToken.of(server.getClass()).resolveType(variable).getType();
    if (resolved instanceof TypeVariable<?>) {
      throw new IllegalArgumentException(
          "cannot resolve the "
              + (index == 0 ? "state" : "message")
              + " type of "
              + server.getClass().getName()
              + ": implement DGenServer<S, M> with concrete type arguments");
    }
    return resolved;
  }

  private void initialize(S initial) {
    JsonNode tree = core.serde().toTree(initial);
    commits.commit(tx -> states.initialize(tx, tree, options.reset()));
  }

  // ---------------------------------------------------------------- pushes

  private void ensureAlive() {
    lifecycle.ensureAlive();
  }

  @Override
  public void cast(M message) {
    ensureAlive();
    byte[] env = queue.encode(Envelope.CAST, message, null);
    commits.commit(
        tx -> {
          queue.push(tx, ServerKeys.LANE_NORMAL, env);
          return null;
        });
  }

  @Override
  public void castAll(List<? extends M> messages) {
    ensureAlive();
    Objects.requireNonNull(messages, "messages must not be null");
    List<byte[]> envs = new ArrayList<>(messages.size());
    for (M m : messages) {
      envs.add(queue.encode(Envelope.CAST, m, null));
    }
    if (envs.isEmpty()) {
      return;
    }
    commits.commit(
        tx -> {
          for (byte[] env : envs) {
            queue.push(tx, ServerKeys.LANE_NORMAL, env);
          }
          return null;
        });
  }

  @Override
  public Outbox<M> outbox() {
    ensureAlive();
    return queue.outbox();
  }

  @Override
  public long queueLength() {
    ensureAlive();
    return core.backend().run(queue::length);
  }

  // ---------------------------------------------------------------- calls

  @Override
  public <R> R call(M request) {
    return call(request, options.callTimeout());
  }

  @Override
  public <R> R call(M request, Duration timeout) {
    return Futures.join(this.<R>callInternal(request, null, timeout));
  }

  @Override
  public <R> R call(M request, Class<R> replyType, Duration timeout) {
    Objects.requireNonNull(replyType, "replyType must not be null");
    return Futures.join(callInternal(request, replyType, timeout));
  }

  @Override
  public <R> CompletableFuture<R> callAsync(M request) {
    return callAsync(request, options.callTimeout());
  }

  @Override
  public <R> CompletableFuture<R> callAsync(M request, Duration timeout) {
    return callInternal(request, null, timeout);
  }

  private <R> CompletableFuture<R> callInternal(
      M request, @Nullable Class<R> replyType, Duration timeout) {
    Objects.requireNonNull(request, "request must not be null");
    Objects.requireNonNull(timeout, "timeout must not be null");
    if (timeout.isNegative()
        || timeout.isZero()
        || timeout.compareTo(ReplySlots.MAX_CALL_TIMEOUT) > 0) {
      throw new IllegalArgumentException(
          "timeout must be positive and at most "
              + ReplySlots.MAX_CALL_TIMEOUT
              + ", was "
              + timeout);
    }
    try {
      ensureAlive();
      From from = slots.newFrom();
      types.messageTag(request); // refuse a message of a wrong type before any transaction
      // Serialized only if the call is queued: an inline call never stores its envelope.
      Supplier<byte[]> env = Suppliers.memoize(() -> queue.encode(Envelope.CALL, request, from));
      CompletableFuture<Void> watch;
      if (options.consume() && options.consumeK() == 1) {
        InlineRunner.Outcome<S> outcome = inline.call(request, from, env);
        if (outcome.watch() == null) {
          return CompletableFuture.completedFuture(slots.local(outcome.reply(), replyType));
        }
        watch = outcome.watch();
      } else {
        watch = calls.pushOnce(env.get(), from);
      }
      return calls.await(from, watch, replyType, timeout);
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  // ---------------------------------------------------------------- priority messages

  @Override
  public <R> R priorityCall(M request) {
    Objects.requireNonNull(request, "request must not be null");
    return slots.local(inline.priorityCall(request, slots.newFrom()), null);
  }

  @Override
  public void priorityCast(M message) {
    Objects.requireNonNull(message, "message must not be null");
    inline.priorityCast(message);
  }

  @Override
  public void info(Object info) {
    Objects.requireNonNull(info, "info must not be null");
    inline.info(info);
  }

  // ---------------------------------------------------------------- the consume loop

  private void schedule() {
    if (lifecycle.isAlive() && scheduled.compareAndSet(false, true)) {
      try {
        core.workers().execute(this::drain);
      } catch (RejectedExecutionException e) {
        scheduled.set(false); // the runtime is closing
      }
    }
  }

  private void scheduleAfter(long nanos) {
    try {
      core.scheduler().schedule(this::schedule, nanos, TimeUnit.NANOSECONDS);
    } catch (RejectedExecutionException e) {
      // the runtime is closing
    }
  }

  /** What one consumer transaction found or did. */
  private record Batch<S, M>(
      @Nullable CompletableFuture<Void> watch,
      long lockExpiresAt,
      boolean busted,
      int processed,
      @Nullable S state,
      List<List<Action<S>>> actions,
      @Nullable Object stopReason,
      LockCoordinator.@Nullable Held<M> lock,
      @Nullable StoredState written)
      implements CommitRunner.WritesState {

    static <S, M> Batch<S, M> idle(CompletableFuture<Void> watch) {
      return new Batch<>(watch, -1, false, 0, null, List.of(), null, null, null);
    }

    static <S, M> Batch<S, M> locked(LockCoordinator.Meeting meeting) {
      return new Batch<>(
          meeting.watch(),
          meeting.expiresAt(),
          meeting.busted(),
          0,
          null,
          List.of(),
          null,
          null,
          null);
    }
  }

  /** A callback failed on {@code item}, the {@code index}-th item of its batch. */
  private static final class ItemFailure extends RuntimeException {
    private static final long serialVersionUID = 1L;
    final transient KeyValue item;
    final int index;

    ItemFailure(Throwable cause, KeyValue item, int index) {
      super(cause.getMessage(), cause, false, false);
      this.item = item;
      this.index = index;
    }
  }

  private void drain() {
    long sliceEnd = core.nanoTime() + BATCH_SLICE_NANOS;
    try {
      while (lifecycle.isAlive()) {
        int limit = limitOverride > 0 ? limitOverride : options.consumeK();
        Batch<S, M> batch;
        try {
          batch = Objects.requireNonNull(commits.commit(tx -> consumeOnce(tx, limit)));
        } catch (ItemFailure failure) {
          onItemFailure(failure);
          return;
        }
        if (batch.busted()) {
          continue;
        }
        if (batch.watch() != null) {
          park(batch.watch(), batch.lockExpiresAt());
          return;
        }
        limitOverride = 0;
        consecutiveFailures = 0;
        for (List<Action<S>> actions : batch.actions()) {
          invoker.runActions(actions, Objects.requireNonNull(batch.state()));
        }
        if (batch.stopReason() != null) {
          lifecycle.stopIfAsked(batch.stopReason());
          return;
        }
        if (batch.lock() != null) {
          LockCoordinator.Held<M> lock = batch.lock();
          S locked = Objects.requireNonNull(batch.state());
          // keeps `scheduled` set until handleLocked's run has ended
          core.lockedWork().execute(() -> afterLocked(locks.runLocked(lock, locked)));
          return;
        }
        int misses = states.missStreak();
        if (misses >= 3) {
          scheduled.set(false);
          scheduleAfter(
              TimeUnit.MILLISECONDS.toNanos(
                  Math.min(CACHE_MISS_BACKOFF_CAP_MS, 1L << Math.min(misses - 3, 6))));
          return;
        }
        if (core.nanoTime() - sliceEnd > 0) {
          scheduled.set(false); // let other servers' batches run, then continue
          schedule();
          return;
        }
      }
      scheduled.set(false);
    } catch (ServerStoppedException e) {
      log.warn("stopping consumer: {}", e.getMessage());
      scheduled.set(false);
      stop();
    } catch (RuntimeException e) {
      retryLater("consumer transaction failed", e);
    } catch (Error e) {
      scheduled.set(false);
      log.error("consumer died: {}", context, e);
      throw e;
    }
  }

  private void afterLocked(LockCoordinator.Run run) {
    switch (run.ending()) {
      case RELEASED -> {
        consecutiveFailures = 0;
        scheduled.set(false);
        schedule();
      }
      case FAILED ->
          retryLater(
              "handleLocked failed; the lock is released and its message re-queued",
              Objects.requireNonNull(run.cause()));
      case FENCED -> {
        Throwable fenced = Objects.requireNonNull(run.cause());
        log.error("{}; stopping this process", fenced.getMessage());
        lifecycle.terminate(fenced);
      }
      case STOPPED -> {
        // the process stopped itself; `scheduled` stays set, as nothing is to run any more
      }
    }
  }

  private void retryLater(String what, Throwable cause) {
    consecutiveFailures++;
    long delay = core.backoffNanos(consecutiveFailures);
    log.warn(
        "{}; retrying in {} ms: {} failures={}",
        what,
        TimeUnit.NANOSECONDS.toMillis(delay),
        context,
        consecutiveFailures,
        cause);
    states.invalidate();
    scheduled.set(false);
    scheduleAfter(delay);
  }

  /** Sleeps on a watch (and, for a lock with a timeout, until it expires) without a thread. */
  private void park(CompletableFuture<Void> watch, long lockExpiresAt) {
    idleWatch = watch;
    scheduled.set(false);
    watch.whenComplete((v, err) -> onIdleWatch(err));
    if (lockExpiresAt >= 0) {
      long delayMs = Math.max(0, lockExpiresAt - core.wallMillis()) + 1;
      scheduleAfter(TimeUnit.MILLISECONDS.toNanos(delayMs));
    }
    if (!lifecycle.isAlive()) {
      watch.cancel(false);
    }
  }

  private void onIdleWatch(@Nullable Throwable err) {
    if (!lifecycle.isAlive()) {
      return;
    }
    if (err == null) {
      schedule();
      return;
    }
    Throwable c = Futures.unwrap(err);
    if (c instanceof CancellationException) {
      return;
    }
    if (c instanceof BackendException be && be.code() == BackendException.TOO_MANY_WATCHES) {
      log.warn(
          "idle consumer cannot watch its queue (too many watches); polling every 100 ms: {}",
          context);
    } else {
      log.warn("idle watch failed; polling in 100 ms: {}", context, c);
    }
    scheduleAfter(TimeUnit.MILLISECONDS.toNanos(100));
  }

  /**
   * One consumer transaction: check the lock, peek up to {@code limit} items, run their callbacks
   * carrying the state in memory, write the state once, write replies, pop the items.
   */
  private Batch<S, M> consumeOnce(Transaction tx, int limit) {
    long start = core.nanoTime();
    // Snapshot read of the queue: concurrent pushes must not abort this batch (DESIGN §8). Read
    // conflicts are added below for exactly the items popped. The lock key is read serializably,
    // so a lock taken concurrently aborts this batch.
    CompletableFuture<List<KeyValue>> peek = queue.peek(tx, limit);
    CompletableFuture<byte @Nullable []> lockRead = locks.read(tx);
    CompletableFuture<byte @Nullable []> version = states.prefetchVersion(tx, true);
    byte[] lockBytes = Futures.join(lockRead);
    if (lockBytes != null) {
      return Batch.locked(locks.meet(tx, lockBytes));
    }
    List<KeyValue> batch = Futures.join(peek);
    if (batch.isEmpty()) {
      return Batch.idle(queue.watchPushes(tx));
    }
    StateStore.Loaded<S> loaded = states.load(tx, version, true);
    S state = loaded.state();
    List<List<Action<S>>> actions = new ArrayList<>();
    Object stopReason = null;
    LockCoordinator.Held<M> lock = null;
    int processed = 0;
    for (KeyValue item : batch) {
      if (processed > 0
          && (batchBytes(tx) > BATCH_BYTES || core.nanoTime() - start > BATCH_NANOS)) {
        break; // the rest stays queued for the next batch
      }
      queue.pop(tx, item);
      processed++;
      Envelope env;
      M msg;
      try {
        env = queue.envelope(item.value());
        msg = queue.message(env);
      } catch (RuntimeException e) {
        deadLetters.moveUndecodable(tx, item, e);
        continue;
      }
      From from = env.isCall() ? new From(env.s(), Objects.requireNonNull(env.i())) : null;
      Result<S> r;
      try {
        r =
            from != null
                ? invoker.handleCall(tx, msg, from, state, start)
                : invoker.handleCast(tx, msg, state, start);
      } catch (CallbackInvoker.CallbackFailure failure) {
        throw new ItemFailure(failure.reason(), item, processed - 1);
      }
      state = r.state();
      if (r.kind() == Result.Kind.LOCK) {
        lock =
            locks.take(
                tx,
                item.value(),
                new Event<>(from != null ? Event.Type.CALL : Event.Type.CAST, msg, from));
        break;
      }
      if (from != null) {
        slots.write(tx, from, slots.ok(r.reply()));
      }
      if (!r.actions().isEmpty()) {
        actions.add(r.actions());
      }
      if (r.kind() == Result.Kind.STOP) {
        stopReason = r.reason();
        break;
      }
    }
    StoredState written;
    try {
      written = states.write(tx, loaded, state);
    } catch (StateTooLargeException e) {
      // Blame the last item: the batch is then retried up to it, so the item that made the
      // state too large ends up alone, failing, and (with a threshold) dead-lettered.
      throw new ItemFailure(e, batch.get(processed - 1), processed - 1);
    }
    queue.popped(tx, processed);
    sweeper.sweep(tx);
    return new Batch<>(null, -1, false, processed, state, actions, stopReason, lock, written);
  }

  /**
   * The bytes a batch has written so far. The runtime's own transactions keep a running total;
   * {@link Transaction#getApproximateSize()} is O(writes) in the memory backend and a client call
   * on FoundationDB, so asking it per item made a batch O(K²).
   */
  private static long batchBytes(Transaction tx) {
    return tx instanceof TrackingTransaction own ? own.mutationBytes() : tx.getApproximateSize();
  }

  // ---------------------------------------------------------------- failures and dead letters

  /**
   * A callback failed: count the failure against that item in its own transaction (the batch's was
   * aborted), dead-letter it at the threshold, and retry the batch up to the failing item so that
   * its neighbours commit without it.
   */
  private void onItemFailure(ItemFailure failure) {
    limitOverride = Math.max(1, failure.index);
    Throwable cause = Objects.requireNonNull(failure.getCause());
    int threshold = options.deadLetterThreshold().orElse(Integer.MAX_VALUE);
    int attempts;
    try {
      attempts = deadLetters.recordFailure(failure.item, cause, threshold);
    } catch (RuntimeException e) {
      cause.addSuppressed(e);
      retryLater("callback failed and its failure could not be recorded", cause);
      return;
    }
    if (attempts >= threshold) {
      limitOverride = 0;
      consecutiveFailures = 0;
      deadLetters.afterDeadLetter(failure.item, attempts);
      scheduled.set(false);
      schedule();
      return;
    }
    retryLater("callback failed, transaction aborted (attempt " + attempts + ")", cause);
  }

  @Override
  public List<DeadLetter<M>> deadLetters() {
    ensureAlive();
    return deadLetters.list();
  }

  @Override
  public boolean requeueDeadLetter(String id, boolean head) {
    ensureAlive();
    return deadLetters.requeue(id, head);
  }

  @Override
  public boolean purgeDeadLetter(String id) {
    ensureAlive();
    return deadLetters.purge(id);
  }

  @Override
  public int purgeDeadLetters() {
    ensureAlive();
    return deadLetters.purgeAll();
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
    return options.name();
  }

  ServerKeys keys() {
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
  public void kill(Object reason) {
    ensureAlive();
    core.backend() // idempotent: no commit marker, which would outlive the server
        .run(
            tx -> {
              tx.clearRange(keys.root().range().begin, keys.root().range().end);
              return null;
            });
    log.info("server killed: {} reason={}", context, reason);
    core.stopLocal(keys);
  }

  @Override
  public String toString() {
    return "ServerRef{" + context + (lifecycle.isAlive() ? "" : " stopped") + "}";
  }
}
