package io.dgen.internal.atomic;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.Action;
import io.dgen.Atomic;
import io.dgen.Call;
import io.dgen.CallbackException;
import io.dgen.DGenException;
import io.dgen.From;
import io.dgen.ServerBusyException;
import io.dgen.ServerRef;
import io.dgen.Tenant;
import io.dgen.TransactionTooLongException;
import io.dgen.backend.BackendException;
import io.dgen.backend.Futures;
import io.dgen.backend.Transaction;
import io.dgen.internal.base.RuntimeServices;
import io.dgen.internal.behaviour.CallbackInvoker;
import io.dgen.internal.codec.ReplyTypes;
import io.dgen.internal.codec.StoredState;
import io.dgen.internal.consume.InlinePart;
import io.dgen.internal.consume.InlineRunner;
import io.dgen.internal.process.ServerProcess;
import io.dgen.internal.queue.ServerQueue;
import io.dgen.internal.state.StateStore;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * One attempt of an atomic transaction across servers ({@link AtomicWork}): the {@link Atomic} its
 * body gets. Each server it names is opened once, with the reads of an inline call ({@link
 * InlineRunner#open}); each call or cast is an inline runner's step ({@link InlineRunner#callStep})
 * on the state the previous step left, in this attempt's transaction. {@link #finish} checks the
 * limits and says what to do once the transaction committed.
 *
 * <p>Never commits and never retries: its runner does. Whatever one of its methods throws aborts
 * the attempt, even if the body catches it ({@link #finish} throws it again). Used by the body's
 * thread only.
 */
final class AtomicAttempt implements Atomic {

  /** Decides what a busy server means: wait (a retryable error) or give up. */
  interface Turns {
    /**
     * Throws what the attempt fails with: a retryable backend error, or {@link
     * ServerBusyException}.
     */
    RuntimeException busy(Tuple server, ServerBusyException.Reason reason, String context);
  }

  private final RuntimeServices services;
  private final Tenant tenant;
  private final Transaction tx;
  private final long start;
  private final Turns turns;
  private final Map<Tuple, Participant<?, ?>> participants = new LinkedHashMap<>();
  private @Nullable RuntimeException failure;

  AtomicAttempt(RuntimeServices services, Tenant tenant, Transaction tx, Turns turns) {
    this.services = services;
    this.tenant = tenant;
    this.tx = tx;
    this.turns = turns;
    this.start = services.nanoTime();
  }

  @Override
  public <M, R> R call(ServerRef<M> server, Call<R> request) {
    Objects.requireNonNull(request, "request must not be null");
    return guarded(() -> callOn(participant(server), request));
  }

  @Override
  public <M> void cast(ServerRef<M> server, M message) {
    Objects.requireNonNull(message, "message must not be null");
    guarded(
        () -> {
          castOn(participant(server), message);
          return null;
        });
  }

  @Override
  public <S> @Nullable S state(ServerRef<?> server, Class<S> type) {
    Objects.requireNonNull(type, "type must not be null");
    return guarded(() -> stateOf(participant(server), type));
  }

  @Override
  public void prefetch(ServerRef<?>... servers) {
    Objects.requireNonNull(servers, "servers must not be null");
    guarded(
        () -> {
          for (ServerRef<?> server : servers) {
            participant(server);
          }
          return null;
        });
  }

  @Override
  public Transaction transaction() {
    return tx;
  }

  @SuppressWarnings("unchecked") // the queue's type check refuses a request of another type
  private <S, M, R> R callOn(Participant<S, M> p, Call<R> request) {
    p.part.queue().tag(request);
    StateStore.Loaded<S> loaded = p.turn();
    From from = p.part.slots().newFrom();
    InlineRunner.Outcome<S> o =
        p.step(
            () -> p.part.inline().callStep(tx, loaded, start, (M) request, from, p::lockRefused));
    return p.part.slots().local(o.reply(), ReplyTypes.of(request.getClass()));
  }

  @SuppressWarnings("unchecked") // the queue's type check refuses a message of another type
  private <S, M> void castOn(Participant<S, M> p, Object message) {
    ServerQueue.refuseCall(message);
    p.part.queue().tag(message);
    StateStore.Loaded<S> loaded = p.turn();
    p.step(() -> p.part.inline().castStep(tx, loaded, start, (M) message, p::lockRefused));
  }

  private <S, T> @Nullable T stateOf(Participant<S, ?> p, Class<T> type) {
    S copy = p.part.inline().states().copy(p.loaded());
    if (copy == null) {
      return null;
    }
    if (!type.isInstance(copy)) {
      throw new IllegalArgumentException(
          "the state of server "
              + p.tuid
              + " is a "
              + copy.getClass().getName()
              + ", not a "
              + type.getName());
    }
    return type.cast(copy);
  }

  /** Runs {@code op}; what it throws aborts the attempt, even if the body catches it. */
  private <T> T guarded(Supplier<T> op) {
    if (failure != null) {
      throw failure;
    }
    try {
      return op.get();
    } catch (RuntimeException e) {
      failure = e;
      throw e;
    }
  }

  /**
   * What the attempt fails with, its body having thrown {@code thrown}: what one of its methods
   * threw first, if one did (the body may have caught it), else {@code thrown}.
   */
  RuntimeException failure(RuntimeException thrown) {
    RuntimeException first = failure;
    return first != null ? first : thrown;
  }

  /** The participant for {@code server}, its reads started when it is first named. */
  private Participant<?, ?> participant(ServerRef<?> server) {
    Objects.requireNonNull(server, "server must not be null");
    if (!(server instanceof ServerProcess<?, ?> process)) {
      throw new IllegalArgumentException(
          "atomic work needs a ServerRef of this DGen (dgen.ref or dgen.start), not " + server);
    }
    if (!Arrays.equals(process.tenant().subspace().getKey(), tenant.subspace().getKey())) {
      throw new IllegalArgumentException(
          "server "
              + process.tuid()
              + " is of tenant "
              + process.tenant().path()
              + ", not of this transaction's tenant "
              + tenant.path());
    }
    Participant<?, ?> p = participants.get(process.tuid());
    if (p != null) {
      return p;
    }
    if (participants.size() >= MAX_SERVERS) {
      throw new DGenException(
          "an atomic transaction names at most "
              + MAX_SERVERS
              + " servers; "
              + process.tuid()
              + " would be one more. Nothing was committed: split the work, or queue the rest"
              + " through outboxes");
    }
    p = open(process.atomicPart(services), process.tuid());
    participants.put(process.tuid(), p);
    return p;
  }

  private <S, M> Participant<S, M> open(InlinePart<S, M> part, Tuple tuid) {
    return new Participant<>(part, tuid, part.inline().open(tx));
  }

  /**
   * The attempt's body returned {@code value}: throws what aborted it, if anything did, checks the
   * limits, and returns what to do after the commit.
   */
  <T> Done<T> finish(@Nullable T value) {
    if (failure != null) {
      throw failure;
    }
    long elapsed = services.nanoTime() - start;
    if (elapsed > CallbackInvoker.CALLBACK_LIMIT_NANOS) {
      throw new TransactionTooLongException(
          "an atomic transaction's body ran "
              + TimeUnit.NANOSECONDS.toMillis(elapsed)
              + " ms, past the "
              + TimeUnit.NANOSECONDS.toMillis(CallbackInvoker.CALLBACK_LIMIT_NANOS)
              + " ms allowed (a margin under FoundationDB's 5 s transaction limit); nothing was"
              + " committed. Name fewer servers, or move slow work out of the body");
    }
    if (StateStore.budgetLeft(tx) < 0) {
      throw new BackendException(
          BackendException.TRANSACTION_TOO_LARGE,
          "an atomic transaction wrote "
              + tx.getApproximateSize()
              + " bytes, over what FoundationDB's "
              + StateStore.TRANSACTION_LIMIT
              + "-byte limit leaves; nothing was committed");
    }
    List<Participant<?, ?>> parts = new ArrayList<>(participants.values());
    boolean wrote = parts.stream().anyMatch(p -> p.written != null);
    return new Done<>(value, parts, wrote ? tx.getVersionstamp() : null, false);
  }

  /**
   * A committed attempt: the body's value, and what its servers do now. {@code replayed}: an
   * earlier attempt of the run committed, whose stamp is not known.
   */
  record Done<T>(
      @Nullable T value,
      List<Participant<?, ?>> parts,
      @Nullable CompletableFuture<byte[]> stamp,
      boolean replayed) {

    Done<T> asReplayed() {
      return new Done<>(value, parts, stamp, true);
    }

    /** Publishes the new states to the servers' caches, then runs their actions and stops. */
    void afterCommit() {
      byte[] at = stamp == null || replayed ? null : Futures.join(stamp);
      for (Participant<?, ?> p : parts) {
        p.committed(at);
      }
      for (Participant<?, ?> p : parts) {
        p.afterCommit();
      }
    }
  }

  /** One server of the attempt: its reads, and what its steps did so far. */
  final class Participant<S, M> {
    final InlinePart<S, M> part;
    final Tuple tuid;
    private final CompletableFuture<InlineRunner.Opened<S>> reads;
    private StateStore.@Nullable Loaded<S> loaded;
    private final List<Action<S>> actions = new ArrayList<>();
    private @Nullable S state;
    private @Nullable StoredState written;
    private @Nullable Object stopReason;

    Participant(
        InlinePart<S, M> part, Tuple tuid, CompletableFuture<InlineRunner.Opened<S>> reads) {
      this.part = part;
      this.tuid = tuid;
      this.reads = reads;
    }

    /** The server's reads, waited for: started when the server was first named. */
    InlineRunner.Opened<S> opened() {
      try {
        return Futures.join(reads);
      } catch (BackendException e) {
        if (e.code() != BackendException.ACCESSED_UNREADABLE) {
          throw e;
        }
        throw new DGenException(
            "this transaction queued a message to server "
                + tuid
                + " (an outbox cast) before it named the server, whose queue it then cannot read;"
                + " nothing was committed. Name the server first (a call, a read, or prefetch),"
                + " then cast through its outbox: "
                + part.context(),
            e);
      }
    }

    /** The state as this attempt has left it; read (or validated) on first use. */
    StateStore.Loaded<S> loaded() {
      StateStore.Loaded<S> l = loaded;
      if (l == null) {
        l = Futures.join(part.inline().state(tx, opened()));
        loaded = l;
      }
      return l;
    }

    /**
     * The state a call or cast runs on, once it is the server's turn: its queue empty and it
     * unlocked when the attempt read them.
     */
    StateStore.Loaded<S> turn() {
      InlineRunner.Opened<S> opened = opened();
      if (opened.busy()) {
        ServerBusyException.Reason why =
            opened.head().isEmpty()
                ? ServerBusyException.Reason.LOCKED
                : part.keys().isPauseMarker(opened.head().get(0).key())
                    ? ServerBusyException.Reason.PAUSED
                    : ServerBusyException.Reason.QUEUED;
        throw turns.busy(tuid, why, part.context());
      }
      if (opened.holderJudges()) {
        throw new DGenException(
            "server "
                + tuid
                + " is idle and its kind has an expiry: it may have expired, which only its holder"
                + " judges, when it loads it for its next queued message; nothing was committed."
                + " Send it a message first: "
                + part.context());
      }
      StateStore.Loaded<S> l = loaded();
      if (l.absent()) {
        throw new DGenException(
            "server "
                + tuid
                + " does not exist yet: atomic work does not create servers (its holder runs init,"
                + " with its first queued message); nothing was committed. Send it a message"
                + " first: "
                + part.context());
      }
      return l;
    }

    /** Runs one step, and keeps what it did; a failure as the caller gets it. */
    InlineRunner.Outcome<S> step(Supplier<InlineRunner.Outcome<S>> run) {
      InlineRunner.Outcome<S> o;
      try {
        o = run.get();
      } catch (CallbackInvoker.Refused refused) {
        throw part.slots().rejection(refused.why(), refused.refusal());
      } catch (CallbackInvoker.CallbackFailure failed) {
        throw new CallbackException(
            "a callback failed in atomic work; nothing was committed, and it is not retried: "
                + part.context(),
            failed.reason());
      } catch (InlineRunner.QueueInstead holderOnly) {
        throw new DGenException(
            "atomic work cannot apply this callback's result ("
                + holderOnly.getMessage()
                + "); nothing was committed: "
                + part.context());
      }
      state = o.state();
      actions.addAll(o.actions());
      if (o.written() != null) {
        written = o.written();
      }
      if (o.stopReason() != null) {
        stopReason = o.stopReason();
      }
      loaded =
          part.inline().states().after(loaded(), o.written(), Objects.requireNonNull(o.state()));
      return o;
    }

    /** What a callback that asks for the lock fails with. */
    RuntimeException lockRefused() {
      return new DGenException(
          "a callback returned Result.lock in atomic work, which cannot take the lock (only the"
              + " server's consumers do, where it is fenced and recoverable); nothing was"
              + " committed. Send that message queued instead: "
              + part.context());
    }

    /** The transaction committed at {@code stamp} (null: not known): the cache learns it. */
    void committed(byte @Nullable [] stamp) {
      StoredState w = written;
      if (w == null) {
        return;
      }
      if (stamp != null) {
        part.inline().states().stateCommitted(w, stamp);
      } else {
        part.inline().states().invalidate();
      }
    }

    /** Runs the steps' actions with the committed state, and honours a stop. */
    void afterCommit() {
      if (state != null) {
        part.inline()
            .afterCommit(
                new InlineRunner.Outcome<>(null, state, actions, stopReason, false, written));
      }
    }
  }
}
