package io.dgen.internal;

import com.apple.foundationdb.subspace.Subspace;
import com.apple.foundationdb.tuple.Tuple;
import com.google.common.reflect.TypeToken;
import io.dgen.Action;
import io.dgen.CallTimeoutException;
import io.dgen.CallbackException;
import io.dgen.DGenException;
import io.dgen.DGenServer;
import io.dgen.DeadLetterException;
import io.dgen.From;
import io.dgen.InitResult;
import io.dgen.Outbox;
import io.dgen.Result;
import io.dgen.ServerRef;
import io.dgen.ServerStoppedException;
import io.dgen.StartOptions;
import io.dgen.Tenant;
import io.dgen.TransactionTooLongException;
import io.dgen.TxContext;
import io.dgen.UndecodableDataException;
import io.dgen.backend.BackendException;
import io.dgen.backend.Futures;
import io.dgen.backend.KeyValue;
import io.dgen.backend.Transaction;
import io.dgen.internal.codec.Chunks;
import io.dgen.internal.codec.Envelope;
import io.dgen.internal.codec.Reply;
import io.dgen.internal.codec.StoredState;
import io.dgen.internal.codec.TypeRegistry;
import java.lang.reflect.Type;
import java.lang.reflect.TypeVariable;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
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
 * thread. The state cache is an immutable snapshot in a volatile field: whoever commits last
 * publishes it, and a stale cache is merely a miss.
 *
 * @param <S> the state type
 * @param <M> the message type
 */
public final class ServerProcess<S, M> implements ServerRef<M> {

  private static final Logger log = LoggerFactory.getLogger(ServerProcess.class);

  /** FoundationDB's transaction lifetime; callbacks that reach it fail instead of retrying. */
  static final long TRANSACTION_LIMIT_NANOS = TimeUnit.SECONDS.toNanos(5);

  private static final byte[] EMPTY = new byte[0];
  private static final int MAX_ENVELOPE = Chunks.MAX_VALUE;
  private static final int CACHE_MISS_BACKOFF_CAP_MS = 50;
  private static final long BATCH_SLICE_NANOS = TimeUnit.MILLISECONDS.toNanos(20);

  private final RuntimeCore core;
  private final DGenServer<S, M> server;
  private final Tenant tenant;
  private final Tuple tuid;
  private final StartOptions options;
  private final ServerKeys keys;
  private final JavaType stateType;
  private final TypeRegistry types;
  private final String context;
  private final AtomicBoolean alive = new AtomicBoolean(true);
  private final AtomicBoolean scheduled = new AtomicBoolean();
  private final Outbox<M> outbox = new ProcessOutbox();

  private volatile @Nullable Cached cache;
  private volatile @Nullable CompletableFuture<Void> idleWatch;
  // Touched only by the consume loop, which never runs concurrently with itself.
  private int consecutiveFailures;
  private int cacheMisses;

  private record Cached(byte[] stamp, StoredState stored) {}

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
    this.stateType = stateType;
    this.types = new TypeRegistry(core.serde(), messageType, stateType, options.allowedTypes());
    this.context = "tenant=" + tenant.path() + " tuid=" + tuid;
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
    Committed<StoredState> c =
        commit(
            tx -> {
              byte[] version = tx.get(keys.versionKey());
              if (version != null && !options.reset()) {
                return null;
              }
              StoredState stored = core.codec().write(tx, keys.state(), null, tree);
              tx.setVersionstampedValue(keys.versionKey(), EMPTY);
              return stored;
            });
    if (c.value() != null && c.stamp() != null) {
      cache = new Cached(c.stamp(), c.value());
    }
  }

  // ---------------------------------------------------------------- transactions

  /** A body's result and, if it wrote the state, the commit's versionstamp. */
  private record Committed<T>(@Nullable T value, byte @Nullable [] stamp) {}

  private interface Body<T> {
    @Nullable T apply(Transaction tx);
  }

  /**
   * Runs {@code body} and, if it wrote the version key, waits for the commit's stamp. The stamp
   * future is taken by the attempt that commits, so only its stamp escapes.
   */
  private <T> Committed<T> commit(Body<T> body) {
    Object[] out =
        core.backend()
            .run(
                tx -> {
                  T value = body.apply(tx);
                  StoredState written =
                      value instanceof StoredState s
                          ? s
                          : value instanceof Stateful st ? st.written() : null;
                  return new Object[] {value, written == null ? null : tx.getVersionstamp()};
                });
    @SuppressWarnings("unchecked")
    T value = (T) out[0];
    @SuppressWarnings("unchecked")
    CompletableFuture<byte[]> stamp = (CompletableFuture<byte[]>) out[1];
    return new Committed<>(value, stamp == null ? null : Futures.join(stamp));
  }

  /** A body result that may carry a written state. */
  private interface Stateful {
    @Nullable StoredState written();
  }

  private void publishCache(@Nullable StoredState written, byte @Nullable [] stamp) {
    if (options.cache() && written != null && stamp != null) {
      cache = new Cached(stamp, written);
    }
  }

  /** The state as read in {@code tx}: from the cache when the version key still matches. */
  private record Loaded<S>(StoredState stored, S state) {}

  private Loaded<S> load(
      Transaction tx,
      @Nullable CompletableFuture<byte @Nullable []> prefetchedVersion,
      boolean consumer) {
    Cached c = options.cache() ? cache : null;
    if (c != null) {
      byte[] version =
          prefetchedVersion != null ? Futures.join(prefetchedVersion) : tx.get(keys.versionKey());
      if (version != null && Arrays.equals(version, c.stamp())) {
        if (consumer) {
          cacheMisses = 0;
        }
        return new Loaded<>(c.stored(), decodeState(c.stored()));
      }
      if (consumer) {
        cacheMisses++;
      }
    }
    Subspace space = keys.state();
    List<KeyValue> rows = new ArrayList<>(tx.getRange(space.range().begin, space.range().end));
    rows.removeIf(kv -> Arrays.equals(kv.key(), keys.versionKey()));
    StoredState stored = core.codec().decode(space, rows);
    if (stored == null) {
      throw new ServerStoppedException(
          "server has no durable state (it was killed or never started): " + context);
    }
    return new Loaded<>(stored, decodeState(stored));
  }

  private S decodeState(StoredState stored) {
    try {
      return core.serde().fromTree(stored.tree(), stateType);
    } catch (RuntimeException e) {
      throw new UndecodableDataException(
          "stored state does not decode as " + stateType + ": " + context, e);
    }
  }

  /** Writes {@code state} as a diff; returns what is stored now, or null if nothing changed. */
  private @Nullable StoredState writeState(Transaction tx, Loaded<S> loaded, S state) {
    StoredState written =
        core.codec().write(tx, keys.state(), loaded.stored(), core.serde().toTree(state));
    if (written == loaded.stored()) {
      return null;
    }
    tx.setVersionstampedValue(keys.versionKey(), EMPTY);
    return written;
  }

  private void checkAge(long startNanos, String what) {
    long elapsed = core.nanoTime() - startNanos;
    if (elapsed >= TRANSACTION_LIMIT_NANOS) {
      throw new TransactionTooLongException(
          what
              + " ran "
              + TimeUnit.NANOSECONDS.toMillis(elapsed)
              + " ms, past FoundationDB's 5000 ms transaction limit: callbacks run inside a"
              + " transaction and must be fast; move slow work to actions or lock mode. "
              + context);
    }
  }

  private record Ctx(Transaction transaction, Tenant tenant, Tuple tuid) implements TxContext {}

  // ---------------------------------------------------------------- pushes

  private byte[] encodeEnvelope(int kind, M message, @Nullable From from) {
    Objects.requireNonNull(message, "message must not be null");
    String tag = types.messageTag(message);
    Envelope env =
        new Envelope(
            kind,
            tag,
            core.serde().toTree(message),
            from == null ? 0 : from.slotSeconds(),
            from == null ? null : from.slotId());
    byte[] bytes = core.serde().toBytes(env);
    if (bytes.length > MAX_ENVELOPE) {
      throw new IllegalArgumentException(
          "message encodes to "
              + bytes.length
              + " bytes; a queued message must fit in one value of "
              + MAX_ENVELOPE
              + " bytes (store large data under your own keys and send a reference): "
              + context);
    }
    return bytes;
  }

  private void push(Transaction tx, long lane, byte[] envelope) {
    tx.setVersionstampedKey(
        keys.itemPrefix(), keys.newItemKey(lane, UserVersions.next(tx)), envelope);
    tx.add(keys.pushCounter(), 1);
  }

  private From newFrom() {
    return new From(
        TimeUnit.MILLISECONDS.toSeconds(System.currentTimeMillis()), UUID.randomUUID().toString());
  }

  private Subspace slotOf(From from) {
    return keys.slot(from.slotSeconds(), from.slotId());
  }

  /** Writes an empty reply slot, pushes the call, and returns the watch on the slot. */
  private CompletableFuture<Void> pushCall(Transaction tx, byte[] envelope, From from) {
    byte[] chunk0 = ServerKeys.slotChunk(slotOf(from), 0);
    tx.set(chunk0, EMPTY);
    push(tx, ServerKeys.LANE_NORMAL, envelope);
    return tx.watch(chunk0);
  }

  private void ensureAlive() {
    if (!alive.get()) {
      throw new ServerStoppedException("process was stopped: " + context);
    }
  }

  @Override
  public void cast(M message) {
    ensureAlive();
    byte[] env = encodeEnvelope(Envelope.CAST, message, null);
    core.backend()
        .run(
            tx -> {
              push(tx, ServerKeys.LANE_NORMAL, env);
              return null;
            });
  }

  @Override
  public void castAll(List<? extends M> messages) {
    ensureAlive();
    Objects.requireNonNull(messages, "messages must not be null");
    List<byte[]> envs = new ArrayList<>(messages.size());
    for (M m : messages) {
      envs.add(encodeEnvelope(Envelope.CAST, m, null));
    }
    if (envs.isEmpty()) {
      return;
    }
    core.backend()
        .run(
            tx -> {
              for (byte[] env : envs) {
                push(tx, ServerKeys.LANE_NORMAL, env);
              }
              return null;
            });
  }

  @Override
  public Outbox<M> outbox() {
    ensureAlive();
    return outbox;
  }

  private final class ProcessOutbox implements Outbox<M> {
    @Override
    public void cast(Transaction tx, M message) {
      Objects.requireNonNull(tx, "transaction must not be null");
      push(tx, ServerKeys.LANE_NORMAL, encodeEnvelope(Envelope.CAST, message, null));
    }

    @Override
    public void castAll(Transaction tx, List<? extends M> messages) {
      for (M m : messages) {
        cast(tx, m);
      }
    }
  }

  @Override
  public long queueLength() {
    ensureAlive();
    return core.backend()
        .run(
            tx -> {
              var snap = tx.snapshot();
              var n = snap.getAsync(keys.pushCounter());
              var p = snap.getAsync(keys.popCounter());
              return ServerKeys.decodeCounter(Futures.join(n))
                  - ServerKeys.decodeCounter(Futures.join(p));
            });
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
    if (timeout.isNegative() || timeout.isZero()) {
      throw new IllegalArgumentException("timeout must be positive, was " + timeout);
    }
    try {
      ensureAlive();
      From from = newFrom();
      byte[] env = encodeEnvelope(Envelope.CALL, request, from);
      CompletableFuture<Void> watch;
      if (options.consume() && options.consumeK() == 1) {
        Inline<S> inline = inlineCall(request, from, env);
        if (inline.watch() == null) {
          runActions(inline.actions(), inline.state());
          stopIfAsked(inline.stopReason());
          return CompletableFuture.completedFuture(cast(inline.reply(), replyType));
        }
        watch = inline.watch();
      } else {
        watch = core.backend().run(tx -> pushCall(tx, env, from));
      }
      return awaitReply(from, watch, replyType, timeout);
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  @SuppressWarnings("unchecked")
  private <R> R cast(@Nullable Object reply, @Nullable Class<R> replyType) {
    if (replyType == null || reply == null || replyType.isInstance(reply)) {
      return (R) reply;
    }
    return core.serde().fromTree(core.serde().toTree(reply), core.serde().type(replyType));
  }

  /** The outcome of an inline attempt: a reply, or the watch of a call that was queued. */
  private record Inline<S>(
      @Nullable Object reply,
      @Nullable S state,
      List<Action<S>> actions,
      @Nullable Object stopReason,
      @Nullable CompletableFuture<Void> watch,
      @Nullable StoredState written)
      implements Stateful {}

  /** Thrown out of a transaction body to abort it when a callback failed. */
  private static final class CallbackAbort extends RuntimeException {
    private static final long serialVersionUID = 1L;

    CallbackAbort(Throwable cause) {
      super(cause.getMessage(), cause, false, false);
    }
  }

  private Inline<S> inlineCall(M request, From from, byte[] env) {
    Committed<Inline<S>> c;
    try {
      c =
          commit(
              tx -> {
                long start = core.nanoTime();
                // A snapshot read: a concurrent push must not abort the inline call; the call then
                // serializes before that push, which is a legal order for concurrent operations.
                CompletableFuture<List<KeyValue>> head =
                    tx.snapshot()
                        .getRangeAsync(
                            keys.items().range().begin, keys.items().range().end, 1, false);
                CompletableFuture<byte @Nullable []> version =
                    options.cache() ? tx.getAsync(keys.versionKey()) : null;
                if (!Futures.join(head).isEmpty()) {
                  return new Inline<>(null, null, List.of(), null, pushCall(tx, env, from), null);
                }
                Loaded<S> loaded = load(tx, version, false);
                Result<S> r;
                try {
                  r =
                      checked(
                          server.handleCallTx(
                              new Ctx(tx, tenant, tuid), request, from, loaded.state()),
                          "handleCall");
                  checkAge(start, "handleCall");
                } catch (TransactionTooLongException e) {
                  throw new CallbackAbort(e);
                } catch (Exception e) {
                  throw new CallbackAbort(e);
                }
                if (r.kind() == Result.Kind.LOCK) {
                  throw new CallbackAbort(lockUnsupported());
                }
                StoredState written = writeState(tx, loaded, r.state());
                return new Inline<>(
                    r.reply(),
                    r.state(),
                    r.actions(),
                    r.kind() == Result.Kind.STOP ? r.reason() : null,
                    null,
                    written);
              });
    } catch (CallbackAbort abort) {
      // The failed attempt committed nothing; queue the call (without a reply slot: the caller
      // gets the error now) so that consumers retry it, as the seed does.
      core.backend()
          .run(
              tx -> {
                push(tx, ServerKeys.LANE_NORMAL, env);
                return null;
              });
      throw new CallbackException(
          "inline handleCall failed; the call was queued for retry: " + context,
          Objects.requireNonNull(abort.getCause()));
    }
    Inline<S> inline = Objects.requireNonNull(c.value());
    publishCache(inline.written(), c.stamp());
    return inline;
  }

  private static IllegalStateException lockUnsupported() {
    return new IllegalStateException("Result.lock is not supported yet by this runtime");
  }

  private <R> CompletableFuture<R> awaitReply(
      From from, CompletableFuture<Void> watch, @Nullable Class<R> replyType, Duration timeout) {
    CompletableFuture<R> result = new CompletableFuture<>();
    awaitInto(from, watch, replyType, core.nanoTime() + timeout.toNanos(), timeout, result);
    return result;
  }

  /**
   * Completes {@code result} from the reply slot when the watch fires, or at the deadline. Both
   * paths read and clear the slot in one transaction; whichever claims the call first does it, so a
   * reply that lands just before the deadline is still delivered.
   */
  private <R> void awaitInto(
      From from,
      CompletableFuture<Void> watch,
      @Nullable Class<R> replyType,
      long deadline,
      Duration timeout,
      CompletableFuture<R> result) {
    AtomicBoolean claimed = new AtomicBoolean();
    ScheduledFuture<?> timer =
        core.scheduler()
            .schedule(
                () ->
                    core.workers()
                        .execute(
                            () -> {
                              if (claimed.compareAndSet(false, true)) {
                                watch.cancel(false);
                                finishCall(from, replyType, deadline, timeout, true, result);
                              }
                            }),
                Math.max(0, deadline - core.nanoTime()),
                TimeUnit.NANOSECONDS);
    watch.whenComplete(
        (v, err) -> {
          if (err instanceof CancellationException) {
            return;
          }
          core.workers()
              .execute(
                  () -> {
                    if (!claimed.compareAndSet(false, true)) {
                      return;
                    }
                    timer.cancel(false);
                    if (err != null) {
                      clearSlotQuietly(from);
                      result.completeExceptionally(watchFailure(err));
                    } else {
                      finishCall(from, replyType, deadline, timeout, false, result);
                    }
                  });
        });
  }

  private RuntimeException watchFailure(Throwable err) {
    Throwable c = Futures.unwrap(err);
    if (c instanceof BackendException be && be.code() == BackendException.TOO_MANY_WATCHES) {
      return new DGenException(
          "cannot wait for the reply: the backend's limit of outstanding watches is reached (each"
              + " call in flight and each idle consumer holds one); raise the backend's max-watches"
              + " knob or send fewer calls at once. The call stays queued: "
              + context,
          c);
    }
    return c instanceof RuntimeException re
        ? re
        : new DGenException("waiting for a reply failed: " + context, c);
  }

  private <R> void finishCall(
      From from,
      @Nullable Class<R> replyType,
      long deadline,
      Duration timeout,
      boolean timedOut,
      CompletableFuture<R> result) {
    try {
      Subspace slot = slotOf(from);
      byte[] chunk0 = ServerKeys.slotChunk(slot, 0);
      Object[] read =
          core.backend()
              .run(
                  tx -> {
                    List<KeyValue> rows = tx.getRange(slot.range().begin, slot.range().end);
                    boolean empty = !rows.isEmpty() && rows.get(0).value().length == 0;
                    if (empty && !timedOut) {
                      return new Object[] {rows, tx.watch(chunk0)}; // no reply yet: wait again
                    }
                    tx.clearRange(slot.range().begin, slot.range().end);
                    return new Object[] {rows, null};
                  });
      @SuppressWarnings("unchecked")
      List<KeyValue> rows = (List<KeyValue>) read[0];
      @SuppressWarnings("unchecked")
      CompletableFuture<Void> again = (CompletableFuture<Void>) read[1];
      if (again != null) {
        awaitInto(from, again, replyType, deadline, timeout, result);
      } else if (rows.isEmpty()) {
        result.completeExceptionally(
            new ServerStoppedException(
                "the reply slot was removed before a reply arrived (the server was killed): "
                    + context));
      } else if (rows.get(0).value().length == 0) {
        result.completeExceptionally(
            new CallTimeoutException(
                "no reply within "
                    + timeout.toMillis()
                    + " ms; the call stays queued and will still execute: "
                    + context
                    + " from="
                    + from));
      } else {
        result.complete(cast(decodeReply(rows, replyType), replyType));
      }
    } catch (RuntimeException e) {
      result.completeExceptionally(e);
    }
  }

  private @Nullable Object decodeReply(List<KeyValue> rows, @Nullable Class<?> replyType) {
    List<byte[]> parts = new ArrayList<>(rows.size());
    for (KeyValue kv : rows) {
      parts.add(kv.value());
    }
    Reply reply;
    try {
      reply = core.serde().read(Chunks.join(parts), Reply.class);
    } catch (RuntimeException e) {
      throw new UndecodableDataException("stored reply is not valid: " + context, e);
    }
    if (reply.e() != null) {
      if ("dead_letter".equals(reply.e())) {
        throw new DeadLetterException(String.valueOf(reply.msg()), reply.n());
      }
      throw new DGenException("call failed: " + reply.e() + ": " + reply.msg() + " " + context);
    }
    return types.decodeReply(
        Objects.requireNonNull(reply.t(), "reply tag"),
        Objects.requireNonNull(reply.v(), "reply value"),
        replyType);
  }

  private void clearSlotQuietly(From from) {
    try {
      Subspace slot = slotOf(from);
      core.backend()
          .run(
              tx -> {
                tx.clearRange(slot.range().begin, slot.range().end);
                return null;
              });
    } catch (RuntimeException e) {
      log.warn(
          "could not clear a reply slot (it will be swept by age): {} from={}", context, from, e);
    }
  }

  /** Writes {@code reply} into the caller's slot if the caller is still waiting. */
  private void writeReply(Transaction tx, From from, Reply reply) {
    Subspace slot = slotOf(from);
    byte[] chunk0 = ServerKeys.slotChunk(slot, 0);
    if (tx.get(chunk0) == null) {
      return; // the caller gave up (timeout) or the call was inline-failed: drop the reply
    }
    List<byte[]> parts = Chunks.split(core.serde().toBytes(reply), Chunks.MAX_VALUE);
    for (int i = 0; i < parts.size(); i++) {
      tx.set(ServerKeys.slotChunk(slot, i), parts.get(i));
    }
  }

  private Reply okReply(@Nullable Object value) {
    return new Reply(types.replyTag(value), core.serde().toTree(value), null, null, 0);
  }

  // ---------------------------------------------------------------- priority messages

  @Override
  public <R> R priorityCall(M request) {
    Objects.requireNonNull(request, "request must not be null");
    ensureAlive();
    From from = newFrom();
    Inline<S> r =
        priority("handleCall", (ctx, state) -> server.handleCallTx(ctx, request, from, state));
    runActions(r.actions(), r.state());
    stopIfAsked(r.stopReason());
    @SuppressWarnings("unchecked")
    R reply = (R) r.reply();
    return reply;
  }

  @Override
  public void priorityCast(M message) {
    Objects.requireNonNull(message, "message must not be null");
    ensureAlive();
    Inline<S> r = priority("handleCast", (ctx, state) -> server.handleCastTx(ctx, message, state));
    runActions(r.actions(), r.state());
    stopIfAsked(r.stopReason());
  }

  @Override
  public void info(Object info) {
    Objects.requireNonNull(info, "info must not be null");
    ensureAlive();
    Inline<S> r = priority("handleInfo", (ctx, state) -> server.handleInfoTx(ctx, info, state));
    runActions(r.actions(), r.state());
    stopIfAsked(r.stopReason());
  }

  private interface Callback<S> {
    Result<S> apply(TxContext ctx, S state) throws Exception;
  }

  private Inline<S> priority(String name, Callback<S> callback) {
    Committed<Inline<S>> c;
    try {
      c =
          commit(
              tx -> {
                long start = core.nanoTime();
                Loaded<S> loaded = load(tx, null, false);
                Result<S> r;
                try {
                  r = checked(callback.apply(new Ctx(tx, tenant, tuid), loaded.state()), name);
                  checkAge(start, name);
                } catch (Exception e) {
                  throw new CallbackAbort(e);
                }
                if (r.kind() == Result.Kind.LOCK) {
                  throw new CallbackAbort(lockUnsupported());
                }
                StoredState written = writeState(tx, loaded, r.state());
                return new Inline<>(
                    r.reply(),
                    r.state(),
                    r.actions(),
                    r.kind() == Result.Kind.STOP ? r.reason() : null,
                    null,
                    written);
              });
    } catch (CallbackAbort abort) {
      throw new CallbackException(
          "priority " + name + " failed; nothing was committed: " + context,
          Objects.requireNonNull(abort.getCause()));
    }
    Inline<S> inline = Objects.requireNonNull(c.value());
    publishCache(inline.written(), c.stamp());
    return inline;
  }

  private Result<S> checked(@Nullable Result<S> r, String callback) {
    if (r == null) {
      throw new IllegalStateException(
          callback
              + " of "
              + server.getClass().getName()
              + " returned null; return a Result such as Result.noReply(state)");
    }
    return r;
  }

  // ---------------------------------------------------------------- the consume loop

  private void schedule() {
    if (alive.get() && scheduled.compareAndSet(false, true)) {
      try {
        core.workers().execute(this::drain);
      } catch (java.util.concurrent.RejectedExecutionException e) {
        scheduled.set(false); // the runtime is closing
      }
    }
  }

  private void scheduleAfter(long nanos) {
    try {
      core.scheduler().schedule(this::schedule, nanos, TimeUnit.NANOSECONDS);
    } catch (java.util.concurrent.RejectedExecutionException e) {
      // the runtime is closing
    }
  }

  /** What one consumer transaction did. */
  private record Batch<S>(
      @Nullable CompletableFuture<Void> watch,
      int processed,
      @Nullable S state,
      List<List<Action<S>>> actions,
      @Nullable Object stopReason,
      @Nullable StoredState written)
      implements Stateful {}

  private void drain() {
    long sliceEnd = core.nanoTime() + BATCH_SLICE_NANOS;
    try {
      while (alive.get()) {
        Batch<S> batch;
        try {
          Committed<Batch<S>> c = commit(this::consumeOnce);
          batch = Objects.requireNonNull(c.value());
          publishCache(batch.written(), c.stamp());
        } catch (CallbackAbort abort) {
          consecutiveFailures++;
          long delay = core.backoffNanos(consecutiveFailures);
          log.warn(
              "callback failed, transaction aborted; retrying in {} ms: {} failures={}",
              TimeUnit.NANOSECONDS.toMillis(delay),
              context,
              consecutiveFailures,
              abort.getCause());
          cache = null;
          scheduled.set(false);
          scheduleAfter(delay);
          return;
        }
        if (batch.watch() != null) {
          CompletableFuture<Void> w = batch.watch();
          idleWatch = w;
          scheduled.set(false);
          w.whenComplete((v, err) -> onIdleWatch(err));
          if (!alive.get()) {
            w.cancel(false);
          }
          return;
        }
        consecutiveFailures = 0;
        for (List<Action<S>> actions : batch.actions()) {
          runActions(actions, Objects.requireNonNull(batch.state()));
        }
        if (batch.stopReason() != null) {
          stopIfAsked(batch.stopReason());
          return;
        }
        if (cacheMisses >= 3) {
          scheduled.set(false);
          scheduleAfter(
              TimeUnit.MILLISECONDS.toNanos(
                  Math.min(CACHE_MISS_BACKOFF_CAP_MS, 1L << Math.min(cacheMisses - 3, 6))));
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
      consecutiveFailures++;
      long delay = core.backoffNanos(consecutiveFailures);
      log.error(
          "consumer transaction failed; retrying in {} ms: {}",
          TimeUnit.NANOSECONDS.toMillis(delay),
          context,
          e);
      cache = null;
      scheduled.set(false);
      scheduleAfter(delay);
    } catch (Error e) {
      scheduled.set(false);
      log.error("consumer died: {}", context, e);
      throw e;
    }
  }

  private void onIdleWatch(@Nullable Throwable err) {
    if (!alive.get()) {
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
    long delay = TimeUnit.MILLISECONDS.toNanos(100);
    if (c instanceof BackendException be && be.code() == BackendException.TOO_MANY_WATCHES) {
      log.warn(
          "idle consumer cannot watch its queue (too many watches); polling every 100 ms: {}",
          context);
    } else {
      log.warn("idle watch failed; polling in 100 ms: {}", context, c);
    }
    scheduleAfter(delay);
  }

  /** One consumer transaction: peek, run callbacks carrying the state, write once, pop. */
  private @Nullable Batch<S> consumeOnce(Transaction tx) {
    long start = core.nanoTime();
    Subspace items = keys.items();
    // Snapshot read of the queue: concurrent pushes must not abort this batch (DESIGN §8). Read
    // conflicts are added below for exactly the items popped.
    CompletableFuture<List<KeyValue>> peek =
        tx.snapshot()
            .getRangeAsync(items.range().begin, items.range().end, options.consumeK(), false);
    CompletableFuture<byte @Nullable []> version =
        options.cache() && cache != null ? tx.getAsync(keys.versionKey()) : null;
    List<KeyValue> batch = Futures.join(peek);
    if (batch.isEmpty()) {
      if (version != null) {
        version.cancel(false);
      }
      return new Batch<>(tx.watch(keys.pushCounter()), 0, null, List.of(), null, null);
    }
    Loaded<S> loaded = load(tx, version, true);
    S state = loaded.state();
    List<List<Action<S>>> actions = new ArrayList<>();
    Object stopReason = null;
    int processed = 0;
    for (KeyValue item : batch) {
      tx.addReadConflictKey(item.key());
      tx.clear(item.key());
      processed++;
      Envelope env;
      Object message;
      try {
        env = core.serde().read(item.value(), Envelope.class);
        message = types.decodeMessage(env.t(), env.m());
      } catch (RuntimeException e) {
        deadLetterUndecodable(tx, item, e);
        continue;
      }
      @SuppressWarnings("unchecked")
      M msg = (M) message;
      From from = env.isCall() ? new From(env.s(), Objects.requireNonNull(env.i())) : null;
      Result<S> r;
      String name = from != null ? "handleCall" : "handleCast";
      try {
        Ctx ctx = new Ctx(tx, tenant, tuid);
        r =
            checked(
                from != null
                    ? server.handleCallTx(ctx, msg, from, state)
                    : server.handleCastTx(ctx, msg, state),
                name);
        checkAge(start, name);
        if (r.kind() == Result.Kind.LOCK) {
          throw lockUnsupported();
        }
      } catch (Exception e) {
        throw new CallbackAbort(e);
      }
      state = r.state();
      if (from != null) {
        writeReply(tx, from, okReply(r.reply()));
      }
      if (!r.actions().isEmpty()) {
        actions.add(r.actions());
      }
      if (r.kind() == Result.Kind.STOP) {
        stopReason = r.reason();
        break;
      }
    }
    StoredState written = writeState(tx, loaded, state);
    tx.add(keys.popCounter(), processed);
    return new Batch<>(null, processed, state, actions, stopReason, written);
  }

  private void deadLetterUndecodable(Transaction tx, KeyValue item, RuntimeException e) {
    // Undecodable data can never succeed: keep it, out of the queue, for inspection.
    log.error(
        "queue item cannot be decoded; moved to the dead letters: {} item={}",
        context,
        io.dgen.backend.ByteKeys.printable(item.key()),
        e);
    Tuple itemTuple = keys.items().unpack(item.key());
    tx.set(keys.dead().pack(Tuple.from(itemTuple.get(1))), item.value());
  }

  private void runActions(List<Action<S>> actions, @Nullable S state) {
    if (actions.isEmpty() || state == null) {
      return;
    }
    for (Action<S> action : actions) {
      try {
        action.run(state);
      } catch (Action.HaltActions halt) {
        return;
      } catch (Exception e) {
        log.error("post-commit action failed; skipping the remaining ones: {}", context, e);
        return;
      }
    }
  }

  private void stopIfAsked(@Nullable Object reason) {
    if (reason != null) {
      log.info("server stopped itself: {} reason={}", context, reason);
      stop();
    }
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
    return alive.get();
  }

  @Override
  public void stop() {
    if (alive.compareAndSet(true, false)) {
      CompletableFuture<Void> w = idleWatch;
      if (w != null) {
        w.cancel(false);
      }
      core.unregister(this);
    }
  }

  @Override
  public void kill(Object reason) {
    ensureAlive();
    core.backend()
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
    return "ServerRef{" + context + (alive.get() ? "" : " stopped") + "}";
  }
}
