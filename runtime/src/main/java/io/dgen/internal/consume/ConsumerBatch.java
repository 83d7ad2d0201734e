package io.dgen.internal.consume;

import io.dgen.Action;
import io.dgen.Event;
import io.dgen.From;
import io.dgen.ReplyTooLargeException;
import io.dgen.Result;
import io.dgen.ServerStoppedException;
import io.dgen.TerminalException;
import io.dgen.backend.KeyValue;
import io.dgen.backend.Transaction;
import io.dgen.internal.base.Async;
import io.dgen.internal.behaviour.CallbackInvoker;
import io.dgen.internal.calls.ReplySlots;
import io.dgen.internal.codec.Envelope;
import io.dgen.internal.codec.StoredState;
import io.dgen.internal.commit.Fence;
import io.dgen.internal.idempotency.Sweeper;
import io.dgen.internal.keys.ServerKeys;
import io.dgen.internal.keys.TrackingTransaction;
import io.dgen.internal.limits.ConcurrencyGate;
import io.dgen.internal.lock.DeadLetters;
import io.dgen.internal.lock.LockCoordinator;
import io.dgen.internal.lock.LockRuns;
import io.dgen.internal.observe.Tracing;
import io.dgen.internal.queue.ServerQueue;
import io.dgen.internal.state.StateStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;

/**
 * The body of one consumer transaction: check the lock, peek up to K items, run their callbacks
 * carrying the state in memory, write the state diff once, write replies, pop the items, count
 * them, and sweep now and then — capped by count, bytes and time.
 *
 * <p>Never commits, retries, waits or schedules (the consume loop runs this body through the commit
 * runner and acts on the {@link Batch} it returns), never blocks a thread on a read, and never adds
 * a read conflict on the queue beyond the items it pops.
 *
 * @param <S> the state type
 * @param <M> the message type
 */
public final class ConsumerBatch<S, M> {

  /** A batch stops taking items past about 1 MB of writes, far below FoundationDB's 10 MB. */
  static final long BATCH_BYTES = 1_000_000;

  /** A batch stops taking items after one second, far below FoundationDB's five. */
  static final long BATCH_NANOS = TimeUnit.SECONDS.toNanos(1);

  /**
   * A peeked item, decoded before the callbacks run (or why it could not be): its message (of the
   * message type, or for an info of any allowed class), its type ({@link Envelope#CALL}, {@code
   * CAST} or {@code INFO}), whether a ref sent it as a priority message, its reply slot, and its
   * publisher's trace context.
   */
  private record Item(
      KeyValue kv,
      @Nullable Object message,
      @Nullable RuntimeException undecodable,
      int type,
      boolean priority,
      @Nullable From from,
      @Nullable CompletableFuture<byte @Nullable []> slot,
      Envelope.@Nullable Trace trace) {}

  /**
   * Whether {@code e} says the batch exceeded one of FoundationDB's size limits — {@code
   * transaction_too_large} (2101, at the commit), {@code key_too_large} (2102) or {@code
   * value_too_large} (2103), or a state write larger than what the transaction has left — rather
   * than that one callback failed.
   */
  static boolean isLimitError(Throwable e) {
    return CallbackInvoker.isLimitError(e);
  }

  private final ServerQueue<M> queue;
  private final StateStore<S> states;
  private final LockCoordinator<S, M> locks;
  private final CallbackInvoker<S, M> invoker;
  private final ReplySlots slots;
  private final DeadLetters<M> deadLetters;
  private final Sweeper sweeper;
  private final LongSupplier nanoTime;
  private final @Nullable Fence fence;
  private final @Nullable ConcurrencyGate gate;
  private final LongSupplier wallMillis;
  private final @Nullable Duration lockTimeout;
  private final String context;

  public ConsumerBatch(
      ServerQueue<M> queue,
      StateStore<S> states,
      LockCoordinator<S, M> locks,
      CallbackInvoker<S, M> invoker,
      ReplySlots slots,
      DeadLetters<M> deadLetters,
      Sweeper sweeper,
      LongSupplier nanoTime,
      @Nullable Fence fence,
      @Nullable ConcurrencyGate gate,
      LongSupplier wallMillis,
      @Nullable Duration lockTimeout,
      String context) {
    this.fence = fence;
    this.gate = gate;
    this.wallMillis = wallMillis;
    this.lockTimeout = lockTimeout;
    this.context = context;
    this.queue = queue;
    this.states = states;
    this.locks = locks;
    this.invoker = invoker;
    this.slots = slots;
    this.deadLetters = deadLetters;
    this.sweeper = sweeper;
    this.nanoTime = nanoTime;
  }

  /** The server's index key in its tenant: the same for every consumer of the server. */
  byte[] serverKey() {
    return queue.entry().key();
  }

  /**
   * One consumer transaction: check the lock, peek up to {@code limit} items, run their callbacks
   * carrying the state in memory, write the state once, write replies, pop the items. Its reads are
   * issued together and waited for without a thread; the callbacks run on {@code executor} once the
   * reads they need are in (or at once in this thread, if they are in already).
   *
   * @param attempt told which items this attempt pops
   * @return the batch; fails with {@link ItemFailure} if an item's callback failed or its reply is
   *     too large, with {@link ItemRefused} if a callback refused its item after writing, or with a
   *     limit error ({@link Attempt#blame} says whose)
   */
  CompletableFuture<Batch<S, M>> run(
      Transaction tx, int limit, Executor executor, Attempt attempt) {
    attempt.reset();
    // The callbacks' time counts from the read version, as FoundationDB's five seconds do: time
    // the cluster took to hand it out (throttling, a recovery) is not the callbacks'.
    CompletableFuture<Long> start = startOf(tx, nanoTime);
    // Snapshot read of the queue: concurrent pushes must not abort this batch (DESIGN §8). Read
    // conflicts are added below for exactly the items popped. The lock key is read serializably,
    // so a lock taken concurrently aborts this batch. One item more than the batch takes: if there
    // is none, the batch drains the queue, and the loop parks without an empty batch to find out
    // (at consumeK 1, one transaction a message instead of two when the queue is mostly empty).
    CompletableFuture<List<KeyValue>> peek = queue.peek(tx, limit + 1);
    CompletableFuture<byte @Nullable []> lockRead = locks.read(tx);
    CompletableFuture<byte @Nullable []> version = states.prefetchVersion(tx, true);
    // The permits of a concurrency limit, as a snapshot: a batch that takes one adds a read
    // conflict on that one slot only.
    CompletableFuture<ConcurrencyGate.@Nullable Slots> permits =
        gate != null ? gate.prefetch(tx) : CompletableFuture.completedFuture(null);
    CompletableFuture<Void> reads =
        CompletableFuture.allOf(
            start,
            peek,
            lockRead,
            permits,
            version != null ? version : CompletableFuture.completedFuture(null),
            fence != null ? fence.check(tx) : CompletableFuture.completedFuture(null));
    return Async.then(
        reads,
        executor,
        ignored ->
            afterReads(
                tx,
                limit,
                start.join(),
                peek.join(),
                lockRead.join(),
                version,
                permits.join(),
                executor,
                attempt));
  }

  /**
   * When {@code tx} got its read version, by {@code nanoTime}: the start of its callbacks' time, as
   * of FoundationDB's five-second limit. Asks for the read version (the reads issued with it share
   * it) and completes when it is known, without a thread waiting.
   */
  static CompletableFuture<Long> startOf(Transaction tx, LongSupplier nanoTime) {
    return tx.getReadVersionAsync().thenApply(v -> nanoTime.getAsLong());
  }

  private CompletableFuture<Batch<S, M>> afterReads(
      Transaction tx,
      int limit,
      long start,
      List<KeyValue> peeked,
      byte @Nullable [] lockBytes,
      @Nullable CompletableFuture<byte @Nullable []> version,
      ConcurrencyGate.@Nullable Slots permits,
      Executor executor,
      Attempt attempt) {
    long readVersion = tx.getReadVersion();
    boolean sawAll = peeked.size() <= limit;
    if (!sawAll) {
      peeked = peeked.subList(0, limit);
    }
    if (lockBytes != null) {
      return CompletableFuture.completedFuture(
          Batch.locked(locks.meet(tx, lockBytes, permits), readVersion));
    }
    if (locks.paused(peeked)) {
      return CompletableFuture.completedFuture(Batch.paused(readVersion));
    }
    if (peeked.isEmpty()) {
      return idle(tx, readVersion, version, executor);
    }
    // Decode first, so that the reads the callbacks need (the state on a cache miss, whether each
    // caller's reply slot still exists) go out together rather than one per call.
    List<Item> items = new ArrayList<>(peeked.size());
    List<CompletableFuture<?>> needed = new ArrayList<>();
    CompletableFuture<StateStore.Loaded<S>> loaded = states.loadAsync(tx, version, true);
    needed.add(loaded);
    needed.add(sweeper.prefetch(tx));
    for (KeyValue kv : peeked) {
      Item item = decode(tx, kv);
      items.add(item);
      if (item.slot() != null) {
        needed.add(item.slot());
      }
    }
    return Async.thenApply(
        CompletableFuture.allOf(needed.toArray(CompletableFuture[]::new)),
        executor,
        ignored -> {
          // consumeK > 1: the batch is a span of its own, linked to its items' publishers
          try (Tracing.Span batch =
              limit > 1
                  ? queue.traces().batch(items.stream().map(Item::trace).toList())
                  : Tracing.Span.NONE) {
            return apply(
                tx, start, items, loaded.join(), readVersion, sawAll, permits, attempt, batch);
          }
        });
  }

  /**
   * An empty queue: the server may have been killed (a kill empties the queue and rings the
   * server's doorbell in every runtime), or killed and started again. The version key tells, if
   * this batch read it and it still validates the cache; else the server's index entry is read (a
   * round trip only for an idle batch whose cache is cold or stale).
   *
   * @return the idle batch; fails with {@link ServerStoppedException} if the server is gone
   */
  private CompletableFuture<Batch<S, M>> idle(
      Transaction tx,
      long readVersion,
      @Nullable CompletableFuture<byte @Nullable []> version,
      Executor executor) {
    if (fence != null) {
      // A hosted server killed is idle, not gone: its next message creates it again, and rings
      // this process while it stays loaded (an unload here could swallow that activation).
      return CompletableFuture.completedFuture(Batch.idle(readVersion));
    }
    // A version key that no longer validates the cache may be another incarnation's (the server
    // was killed and started again since this process started): the entry tells then.
    CompletableFuture<Boolean> exists =
        version == null
            ? queue.entry().exists(tx)
            : version.thenCompose(
                v ->
                    v == null
                        ? CompletableFuture.completedFuture(false)
                        : states.validates(version)
                            ? CompletableFuture.completedFuture(true)
                            : queue.entry().exists(tx));
    return Async.thenApply(
        exists,
        executor,
        e -> {
          if (!e) {
            throw new ServerStoppedException(
                "the server was killed (in this runtime or another): " + queue.entry().context());
          }
          return Batch.idle(readVersion);
        });
  }

  private Item decode(Transaction tx, KeyValue kv) {
    try {
      Envelope env = queue.envelope(kv.value());
      Object msg = env.type() == Envelope.INFO ? queue.info(tx, env) : queue.message(tx, env);
      if (!env.hasSlot()) {
        return new Item(kv, msg, null, env.type(), false, null, null, env.trace());
      }
      From from = new From(env.slotSeconds(), Objects.requireNonNull(env.slotId()));
      return new Item(
          kv, msg, null, env.type(), env.priority(), from, slots.prefetch(tx, from), env.trace());
    } catch (RuntimeException e) {
      return new Item(kv, null, e, Envelope.CAST, false, null, null, null);
    }
  }

  private Batch<S, M> apply(
      Transaction tx,
      long start,
      List<Item> items,
      StateStore.Loaded<S> loaded,
      long readVersion,
      boolean sawAll,
      ConcurrencyGate.@Nullable Slots permits,
      Attempt attempt,
      Tracing.Span batch) {
    S state = loaded.state(); // null until init ran, for a hosted server not created yet
    List<List<Action<S>>> actions = new ArrayList<>();
    List<ReplySlots.LocalReply> localReplies = new ArrayList<>();
    List<Batch.Refusal> refusedCasts = new ArrayList<>();
    Object stopReason = null;
    LockRuns.Held<M> lock = null;
    int processed = 0;
    for (Item item : items) {
      if (processed > 0
          && (batchBytes(tx) > BATCH_BYTES || nanoTime.getAsLong() - start > BATCH_NANOS)) {
        break; // the rest stays queued for the next batch
      }
      attempt.popped(item.kv());
      processed++;
      if (item.undecodable() != null) {
        deadLetters.moveUndecodable(tx, item.kv(), item.undecodable());
        continue;
      }
      Object msg = Objects.requireNonNull(item.message());
      From from = item.from();
      // At the head, over the state it refused on: refused again without running the callback.
      TerminalException refusal =
          processed == 1 ? attempt.refusal(item.kv(), loaded.stamp()) : null;
      Result<S> r = null;
      Tracing.Span span =
          queue.traces().process(operation(item), item.trace(), batch, () -> messageId(item));
      try {
        if (refusal == null) {
          // A hosted server is created by its first message that is not refused: init's state is
          // the state only once a callback returned on it.
          S current = state != null ? state : invoker.initialState();
          r = invoke(tx, item, msg, current, start);
        }
      } catch (CallbackInvoker.Refused refused) {
        span.failed(refused.refusal());
        if (refused.wrote()) {
          if (processed == 1) {
            attempt.refused(item.kv(), loaded.stamp(), refused.refusal());
          }
          throw new ItemRefused(refused.refusal(), processed - 1);
        }
        refusal = refused.refusal();
      } catch (CallbackInvoker.CallbackFailure failure) {
        span.failed(failure.reason());
        throw new ItemFailure(failure.reason(), item.kv(), processed - 1);
      } catch (RuntimeException e) {
        span.failed(e);
        throw e;
      } finally {
        span.close();
      }
      if (refusal != null) {
        refuse(tx, item, msg, refusal, localReplies, refusedCasts);
        continue;
      }
      Objects.requireNonNull(r);
      int slot = -1;
      if (r.kind() == Result.Kind.LOCK && gate != null && !item.priority()) {
        slot = Objects.requireNonNull(permits).free(wallMillis.getAsLong());
        if (slot < 0) {
          // Nothing of this batch commits: the items before this one commit in a batch that
          // stops short of it, then the server waits for a permit.
          throw new ConcurrencyGate.Wait(gate.name(), processed - 1);
        }
      }
      state = r.state();
      if (r.kind() == Result.Kind.LOCK && item.priority()) {
        throw new ItemFailure(
            new IllegalStateException(
                "a priority message cannot take the lock (Result.lock): priority messages bypass"
                    + " the lock; send it with call or cast"),
            item.kv(),
            processed - 1);
      }
      if (r.kind() == Result.Kind.LOCK) {
        lock =
            locks.take(
                tx,
                item.kv().value(),
                new Event<>(from != null ? Event.Type.CALL : Event.Type.CAST, message(msg), from));
        if (gate != null) {
          long now = wallMillis.getAsLong();
          gate.take(
              tx,
              slot,
              lock.token(),
              now,
              now + Objects.requireNonNull(lockTimeout).toMillis(),
              context);
        }
        break;
      }
      if (from != null) {
        ReplySlots.LocalReply local;
        try {
          // a priority cast or info replies null: its caller waits for it to have run
          Object reply = item.type() == Envelope.CALL ? r.reply() : null;
          local = slots.writeOk(tx, from, reply, item.slot());
        } catch (ReplyTooLargeException e) {
          throw new ItemFailure(e, item.kv(), processed - 1); // too large whatever its neighbours
        }
        if (local != null) {
          localReplies.add(local);
        }
      }
      if (!r.actions().isEmpty()) {
        actions.add(span.around(r.actions()));
      }
      if (r.kind() == Result.Kind.STOP) {
        stopReason = r.reason();
        break;
      }
    }
    if (processed > 0) {
      // The items processed are the first ones peeked, so one range pops them all.
      ServerQueue.pop(tx, items.get(0).kv().key(), items.get(processed - 1).kv().key());
    }
    // A state too large for what the transaction has left is a limit error (see blame): in a
    // batch of several items, they are run one by one; alone, it is the item's failure.
    StoredState written = state == null ? null : states.write(tx, loaded, state);
    queue.popped(tx, processed);
    sweeper.sweep(tx);
    return new Batch<>(
        readVersion,
        false,
        -1,
        false,
        processed,
        sawAll && processed == items.size(),
        state,
        actions,
        stopReason,
        lock,
        written,
        localReplies,
        refusedCasts);
  }

  /**
   * Refuses {@code item} in the batch's transaction, whose callback wrote nothing: it leaves the
   * queue with the batch's pop, without any change of its own; its caller, if it has one, gets the
   * refusal, and a cast is reported after the commit.
   */
  private void refuse(
      Transaction tx,
      Item item,
      Object msg,
      TerminalException refusal,
      List<ReplySlots.LocalReply> localReplies,
      List<Batch.Refusal> refusedCasts) {
    From from = item.from();
    if (from == null) {
      refusedCasts.add(new Batch.Refusal(msg, refusal));
      return;
    }
    ReplySlots.LocalReply local =
        slots.writeRejected(tx, from, String.valueOf(refusal.getMessage()), item.slot());
    if (local != null) {
      localReplies.add(local);
    }
  }

  /** The callback an item's type calls, by name. */
  private static String operation(Item item) {
    return item.type() == Envelope.INFO
        ? "handleInfo"
        : item.type() == Envelope.CALL && item.from() != null ? "handleCall" : "handleCast";
  }

  /** An item's id: its versionstamp, in hex. */
  private String messageId(Item item) {
    return ServerKeys.stampId(queue.stampOf(item.kv()));
  }

  /** The callback an item's type calls. */
  private Result<S> invoke(Transaction tx, Item item, Object msg, S state, long start) {
    if (item.type() == Envelope.INFO) {
      return invoker.handleInfo(tx, msg, state, start);
    }
    From from = item.from();
    return item.type() == Envelope.CALL && from != null
        ? invoker.handleCall(tx, message(msg), from, state, start)
        : invoker.handleCast(tx, message(msg), state, start);
  }

  @SuppressWarnings("unchecked") // decoded as the message type
  private M message(Object msg) {
    return (M) msg;
  }

  /**
   * The bytes a batch has written so far. The runtime's own transactions keep a running total;
   * {@link Transaction#getApproximateSize()} is O(writes) in the memory backend and a client call
   * on FoundationDB, so asking it per item made a batch O(K²).
   */
  private static long batchBytes(Transaction tx) {
    return tx instanceof TrackingTransaction own ? own.mutationBytes() : tx.getApproximateSize();
  }
}
