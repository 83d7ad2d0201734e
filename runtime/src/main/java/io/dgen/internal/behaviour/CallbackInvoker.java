package io.dgen.internal.behaviour;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.Action;
import io.dgen.DGenServer;
import io.dgen.DbContext;
import io.dgen.Event;
import io.dgen.From;
import io.dgen.Result;
import io.dgen.StateTooLargeException;
import io.dgen.Tenant;
import io.dgen.TerminalException;
import io.dgen.TransactionTooLongException;
import io.dgen.TxContext;
import io.dgen.backend.Backend;
import io.dgen.backend.BackendException;
import io.dgen.backend.Transaction;
import io.dgen.internal.base.Lifecycle;
import io.dgen.internal.codec.ReplyTypes;
import io.dgen.internal.keys.TrackingTransaction;
import io.dgen.internal.observe.LogContext;
import io.dgen.internal.observe.Metrics;
import io.dgen.internal.timers.Timers;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Every call into one server's user code: the {@code handle*} callbacks with their contexts, {@code
 * handleLocked}, {@code handleDeadLetter} and post-commit actions. It checks a callback's result
 * and age and classifies its failures: a callback that throws, returns null or ends past {@link
 * #CALLBACK_LIMIT_NANOS} fails with {@link CallbackFailure}, whether it ran inline, as a priority
 * message or in a batch; a retryable {@link BackendException} it met (in a read, or wrapped by user
 * code) is rethrown as is, so that the transaction is retried and no failure is counted; a
 * transaction that is past the limit before the callback starts is retried without running it.
 *
 * <p>User code may throw anything: every boundary catches {@link Throwable}. An {@link Error} is
 * the user code's failure like any exception ({@code AssertionError}, {@code StackOverflowError}
 * among them), except a {@linkplain Lifecycle#isFatal fatal} one ({@code OutOfMemoryError}, {@code
 * InternalError}), which is rethrown as it is: the process that met it stops ({@link
 * Lifecycle#terminate}).
 *
 * <p>Never commits, reads or writes keys itself, and never decides what a failure leads to (retry,
 * dead letter, error to the caller): its callers do.
 *
 * @param <S> the state type
 * @param <M> the message type
 */
public final class CallbackInvoker<S, M> {

  private static final Logger log = LoggerFactory.getLogger(CallbackInvoker.class);

  /** FoundationDB's transaction lifetime. */
  static final long TRANSACTION_LIMIT_NANOS = TimeUnit.SECONDS.toNanos(5);

  /**
   * How long a transaction's callbacks may run: a second under {@link #TRANSACTION_LIMIT_NANOS},
   * left for the state write and the commit. A callback that ends later fails (and counts as its
   * item's failure) instead of passing, then failing at commit with {@code transaction_too_old}
   * every time, forever.
   */
  public static final long CALLBACK_LIMIT_NANOS = TimeUnit.SECONDS.toNanos(4);

  /** A callback failed; thrown out of a transaction body so that the attempt commits nothing. */
  public static class CallbackFailure extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public CallbackFailure(Throwable cause) {
      super(cause.getMessage(), cause, false, false);
    }

    /** What the callback threw (or why its result was refused). */
    public Throwable reason() {
      return Objects.requireNonNull(getCause());
    }
  }

  /**
   * A callback refused its message: it threw {@link TerminalException} (or {@code init} declined to
   * create a hosted server). Not a failure to retry: the message is to leave without anything the
   * callback did. Whoever does not tell a refusal from a failure treats it as one (it extends
   * {@link CallbackFailure}), which retries rather than drops.
   */
  public static final class Refused extends CallbackFailure {
    private static final long serialVersionUID = 1L;
    private final boolean wrote;

    Refused(TerminalException cause, boolean wrote) {
      super(cause);
      this.wrote = wrote;
    }

    /** What the callback threw. */
    public TerminalException refusal() {
      return (TerminalException) reason();
    }

    /**
     * Whether the callback wrote through its transaction before it refused (or whether that is not
     * known): its transaction must then not commit, since its writes cannot be taken back.
     */
    public boolean wrote() {
      return wrote;
    }

    /** The handler's message, as the caller gets it. */
    public String why() {
      return String.valueOf(refusal().getMessage());
    }
  }

  /** Rethrows {@code t} if it is {@linkplain Lifecycle#isFatal fatal}; otherwise returns. */
  private static void rethrowIfFatal(Throwable t) {
    if (Lifecycle.isFatal(t)) {
      throw (VirtualMachineError) t;
    }
  }

  /**
   * Whether {@code e} says a transaction exceeded one of FoundationDB's size limits — {@code
   * transaction_too_large} (2101, at the commit), {@code key_too_large} (2102) or {@code
   * value_too_large} (2103), or a state write larger than what the transaction has left — rather
   * than that the cluster is in trouble: retrying the same writes fails the same way.
   */
  public static boolean isLimitError(Throwable e) {
    if (e instanceof StateTooLargeException) {
      return true;
    }
    return e instanceof BackendException be
        && (be.code() == BackendException.TRANSACTION_TOO_LARGE
            || be.code() == BackendException.KEY_TOO_LARGE
            || be.code() == BackendException.VALUE_TOO_LARGE);
  }

  /** One callback on the state, given its transaction context. */
  interface Callback<S> {
    Result<S> apply(TxContext ctx, S state) throws Exception;
  }

  private record Ctx(
      Transaction transaction, Tenant tenant, Tuple tuid, Object id, Timers<?> timers)
      implements TxContext {
    @Override
    public String castAfter(Object message, Duration delay) {
      return timers.inCallback(transaction, message, delay);
    }

    @Override
    public String castEvery(Object message, Duration period) {
      return timers.inCallbackEvery(transaction, message, period);
    }

    @Override
    public String castCron(Object message, String cron, java.time.ZoneId zone) {
      return timers.inCallbackCron(transaction, message, cron, zone);
    }

    @Override
    public boolean cancelTimer(String timerId) {
      return timers.inCallbackCancel(transaction, timerId);
    }
  }

  private record Db(Backend backend, Tenant tenant, Tuple tuid, Object id) implements DbContext {}

  private final DGenServer<S, M> server;
  private final Backend backend;
  private final Tenant tenant;
  private final Tuple tuid;
  private final Object id;
  private final Timers<M> timers;
  private final LongSupplier nanoTime;
  private final String context;
  private final LogContext logs;
  private final Metrics.Server meters;
  private final BiConsumer<Object, TerminalException> onCastRefused;

  /**
   * @param onCastRefused tells the runtime's listener of a refused cast
   */
  public CallbackInvoker(
      DGenServer<S, M> server,
      Backend backend,
      Tenant tenant,
      Tuple tuid,
      Object id,
      Timers<M> timers,
      LongSupplier nanoTime,
      Metrics.Server meters,
      BiConsumer<Object, TerminalException> onCastRefused,
      String context) {
    this.meters = meters;
    this.onCastRefused = onCastRefused;
    this.server = server;
    this.backend = backend;
    this.tenant = tenant;
    this.tuid = tuid;
    this.id = id;
    this.timers = timers;
    this.nanoTime = nanoTime;
    this.context = context;
    this.logs = new LogContext(tenant, tuid, server.getClass());
  }

  /** The meters of this server's tenant and behaviour. */
  public Metrics.Server meters() {
    return meters;
  }

  /** The MDC of this server's log lines. */
  public LogContext logs() {
    return logs;
  }

  /** {@code handleCallTx} in {@code tx}, whose work began at {@code startNanos}. */
  public Result<S> handleCall(Transaction tx, M request, From from, S state, long startNanos) {
    try (LogContext.Scope mdc = logs.open(request)) {
      return invoke(
          tx,
          state,
          startNanos,
          "handleCall",
          (c, s) -> checkedReply(request, server.handleCallTx(c, request, from, s)));
    }
  }

  /**
   * {@code result}, if its reply is of the type {@code request} names (a {@link io.dgen.Call}),
   * which raw types do not ensure.
   *
   * @throws IllegalArgumentException if it is not: the callback failed, nothing is committed
   */
  static <S> @Nullable Result<S> checkedReply(Object request, @Nullable Result<S> result) {
    if (result != null && result.kind() == Result.Kind.REPLY) {
      ReplyTypes.check(request, result.reply());
    }
    return result;
  }

  /** {@code handleCastTx} in {@code tx}, whose work began at {@code startNanos}. */
  public Result<S> handleCast(Transaction tx, M message, S state, long startNanos) {
    try (LogContext.Scope mdc = logs.open(message)) {
      return invoke(
          tx, state, startNanos, "handleCast", (c, s) -> server.handleCastTx(c, message, s));
    }
  }

  /** {@code handleInfoTx} in {@code tx}, whose work began at {@code startNanos}. */
  public Result<S> handleInfo(Transaction tx, Object info, S state, long startNanos) {
    try (LogContext.Scope mdc = logs.open(info)) {
      return invoke(tx, state, startNanos, "handleInfo", (c, s) -> server.handleInfoTx(c, info, s));
    }
  }

  /**
   * Runs {@code callback} in {@code tx}.
   *
   * @throws CallbackFailure if it throws, returns null, or ends past {@link #CALLBACK_LIMIT_NANOS}
   *     into the transaction
   * @throws BackendException a retryable one it met, for the transaction's retry loop; or {@code
   *     transaction_too_old} without running it, if the transaction's reads alone took it past
   *     {@link #CALLBACK_LIMIT_NANOS}
   */
  private Result<S> invoke(
      Transaction tx, S state, long startNanos, String name, Callback<S> callback) {
    checkAgeBefore(startNanos, name);
    long writes = writes(tx);
    Result<S> r;
    try {
      r = callback.apply(new Ctx(tx, tenant, tuid, id, timers), state);
    } catch (Throwable e) {
      rethrowIfFatal(e);
      throw failed(e, startNanos, name, writes < 0 || writes(tx) != writes);
    }
    try {
      checked(r, name);
      checkAge(startNanos, name);
      return r;
    } catch (RuntimeException e) {
      throw new CallbackFailure(e);
    }
  }

  /** The writes made through {@code tx} so far, or -1 if it does not count them. */
  private static long writes(Transaction tx) {
    return tx instanceof TrackingTransaction own ? own.writes() : -1;
  }

  /**
   * What a callback's exception means. A slow callback failed, whatever it met on the way (its
   * reads fail with 1007 past five seconds, and a retry would be as slow). A {@link
   * TerminalException} refuses the message ({@link Refused}; {@code wrote} says whether the
   * callback wrote through its transaction first). Otherwise a retryable backend error, raised by a
   * read through {@code TxContext} or wrapped by user code, is transient: it is returned unwrapped,
   * so that the transaction's retry loop runs the attempt again and no failure is counted. Anything
   * else is the callback's failure.
   */
  private RuntimeException failed(Throwable e, long startNanos, String name, boolean wrote) {
    try {
      checkAge(startNanos, name);
    } catch (TransactionTooLongException late) {
      late.addSuppressed(e);
      return new CallbackFailure(late);
    }
    if (e instanceof TerminalException refusal) {
      return new Refused(refusal, wrote);
    }
    BackendException transientError = retryableCause(e);
    if (transientError != null) {
      log.debug("{} met a retryable backend error; retrying its transaction: {}", name, context, e);
      return transientError;
    }
    return new CallbackFailure(e);
  }

  /** The first retryable backend error in {@code e}'s cause chain, or null. */
  private static @Nullable BackendException retryableCause(Throwable e) {
    int depth = 0;
    for (Throwable c = e; c != null && depth < 32; c = c.getCause(), depth++) {
      if (c instanceof BackendException be && be.isRetryable()) {
        return be;
      }
    }
    return null;
  }

  /**
   * {@code handleLocked}, outside any transaction.
   *
   * @throws Refused if it throws {@link TerminalException}
   * @throws CallbackFailure if it throws anything else, returns null or asks for the lock again
   */
  public Result<S> handleLocked(Event<M> event, S state) {
    try (LogContext.Scope mdc = logs.open(event.message())) {
      Result<S> r =
          checked(
              server.handleLocked(new Db(backend, tenant, tuid, id), event, state), "handleLocked");
      if (r.kind() == Result.Kind.LOCK) {
        throw new IllegalStateException(
            "handleLocked returned Result.lock; the lock is held already");
      }
      if (event.from() != null) {
        checkedReply(event.message(), r);
      }
      return r;
    } catch (TerminalException refusal) {
      throw new Refused(refusal, false); // what it wrote through db.backend() has committed
    } catch (Throwable e) {
      rethrowIfFatal(e);
      throw new CallbackFailure(e);
    }
  }

  /**
   * A hosted server's {@code init}, run by its first message in that message's transaction: {@code
   * init(id)} with the id it was addressed with ({@code HostedKind.idOf}). An {@code
   * InitResult.ok(tuid, state)} must name this server, by its tuid without the kind or its whole
   * tuid. An {@code init} that throws {@link TerminalException} or returns {@link
   * io.dgen.InitResult#error} declines to create the server: the message that ran it is refused.
   *
   * @throws Refused if {@code init} declines to create the server
   * @throws CallbackFailure if {@code init} throws anything else, returns null, or names another
   *     server
   */
  public S initialState() {
    try (LogContext.Scope mdc = logs.open(null)) {
      io.dgen.InitResult<S> r = server.init(id);
      if (r == null) {
        throw new IllegalStateException(
            "init of " + server.getClass().getName() + " returned null; return InitResult.ok");
      }
      if (r.isError()) {
        throw new TerminalException(
            String.valueOf(r.error())); // its reason is the message the caller gets
      }
      Tuple named = r.tuid();
      if (named != null && !named.equals(tuid.popFront()) && !named.equals(tuid)) {
        throw new IllegalStateException(
            "init returned InitResult.ok(tuid, state) naming "
                + named
                + ", but a server addressed by id is "
                + tuid
                + " (addressed with "
                + id
                + "): "
                + context);
      }
      return Objects.requireNonNull(r.state(), "init's state");
    } catch (TerminalException refusal) {
      throw new Refused(refusal, false); // init has no transaction to write through
    } catch (Throwable e) {
      rethrowIfFatal(e);
      throw new CallbackFailure(e);
    }
  }

  /**
   * {@code handleDeadLetter}.
   *
   * @throws CallbackFailure if it throws; its caller logs that
   */
  public void handleDeadLetter(M message, int attempts) {
    try (LogContext.Scope mdc = logs.open(message)) {
      server.handleDeadLetter(message, attempts);
    } catch (Throwable e) {
      rethrowIfFatal(e);
      throw new CallbackFailure(e);
    }
  }

  /**
   * A refusal of the cast {@code message} committed: it is logged, counted and reported to the
   * runtime's listener, once. The cast is dropped; nobody else is told.
   */
  public void castRefused(Object message, TerminalException reason) {
    try (LogContext.Scope mdc = logs.open(message)) {
      log.warn(
          "cast refused by its handler (TerminalException); dropped: {} reason={}",
          context,
          reason.getMessage());
    }
    meters.castRefused();
    onCastRefused.accept(message, reason);
  }

  /**
   * Runs post-commit actions in order with the committed state. A failing action stops the
   * remaining ones and is logged; an action may halt the rest.
   */
  public void runActions(List<Action<S>> actions, @Nullable S state) {
    if (actions.isEmpty() || state == null) {
      return;
    }
    try (LogContext.Scope mdc = logs.open(null)) {
      runActionsInContext(actions, state);
    }
  }

  private void runActionsInContext(List<Action<S>> actions, S state) {
    for (Action<S> action : actions) {
      try {
        action.run(state);
      } catch (Action.HaltActions halt) {
        return;
      } catch (Throwable e) {
        rethrowIfFatal(e);
        log.error("post-commit action failed; skipping the remaining ones: {}", context, e);
        return;
      }
    }
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

  /**
   * A transaction already past the callback limit before its callback starts was slowed by the
   * database (a cluster recovery blocks reads and read versions for seconds), not by user code: no
   * callback ran. It is retried as FoundationDB would retry it ({@code transaction_too_old}), with
   * a fresh read version, and counts as no failure of the message. Only the first callback of a
   * batch can meet this: a batch takes no further item past {@code BATCH_NANOS}.
   */
  private void checkAgeBefore(long startNanos, String what) {
    long elapsed = nanoTime.getAsLong() - startNanos;
    if (elapsed > CALLBACK_LIMIT_NANOS) {
      throw new BackendException(
          BackendException.TRANSACTION_TOO_OLD,
          "the transaction of "
              + what
              + " was "
              + TimeUnit.NANOSECONDS.toMillis(elapsed)
              + " ms old before the callback started (slow reads); retrying it. "
              + context);
    }
  }

  private void checkAge(long startNanos, String what) {
    long elapsed = nanoTime.getAsLong() - startNanos;
    if (elapsed > CALLBACK_LIMIT_NANOS) {
      throw new TransactionTooLongException(
          what
              + " ran "
              + TimeUnit.NANOSECONDS.toMillis(elapsed)
              + " ms into its transaction, past the "
              + TimeUnit.NANOSECONDS.toMillis(CALLBACK_LIMIT_NANOS)
              + " ms allowed to callbacks (a margin under FoundationDB's "
              + TimeUnit.NANOSECONDS.toMillis(TRANSACTION_LIMIT_NANOS)
              + " ms transaction limit): callbacks run inside a transaction and must be fast;"
              + " move slow work to actions or lock mode. "
              + context);
    }
  }
}
