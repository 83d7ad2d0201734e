package io.dgen.internal;

import io.dgen.Action;
import io.dgen.Event;
import io.dgen.From;
import io.dgen.Result;
import io.dgen.StateTooLargeException;
import io.dgen.backend.Futures;
import io.dgen.backend.KeyValue;
import io.dgen.backend.Transaction;
import io.dgen.internal.codec.Envelope;
import io.dgen.internal.codec.StoredState;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;

/**
 * The body of one consumer transaction: check the lock, peek up to K items, run their callbacks
 * carrying the state in memory, write the state diff once, write replies, pop the items, count
 * them, and sweep now and then — capped by count, bytes and time.
 *
 * <p>Never commits, retries, waits or schedules (the consume loop runs this body through the commit
 * runner and acts on the {@link Batch} it returns), and never adds a read conflict on the queue
 * beyond the items it pops.
 *
 * @param <S> the state type
 * @param <M> the message type
 */
final class ConsumerBatch<S, M> {

  /** A batch stops taking items past about 1 MB of writes, far below FoundationDB's 10 MB. */
  static final long BATCH_BYTES = 1_000_000;

  /** A batch stops taking items after one second, far below FoundationDB's five. */
  static final long BATCH_NANOS = TimeUnit.SECONDS.toNanos(1);

  /** What one consumer transaction found or did. */
  record Batch<S, M>(
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
  static final class ItemFailure extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final transient KeyValue item;
    private final int index;

    ItemFailure(Throwable cause, KeyValue item, int index) {
      super(cause.getMessage(), cause, false, false);
      this.item = item;
      this.index = index;
    }

    /** The item whose callback failed. */
    KeyValue item() {
      return item;
    }

    /** Its position in the batch: the items before it may commit without it. */
    int index() {
      return index;
    }

    /** What the callback threw (or why its result or the state it wrote was refused). */
    Throwable reason() {
      return Objects.requireNonNull(getCause());
    }
  }

  private final ServerQueue<M> queue;
  private final StateStore<S> states;
  private final LockCoordinator<S, M> locks;
  private final CallbackInvoker<S, M> invoker;
  private final ReplySlots slots;
  private final DeadLetters<M> deadLetters;
  private final Sweeper sweeper;
  private final LongSupplier nanoTime;

  ConsumerBatch(
      ServerQueue<M> queue,
      StateStore<S> states,
      LockCoordinator<S, M> locks,
      CallbackInvoker<S, M> invoker,
      ReplySlots slots,
      DeadLetters<M> deadLetters,
      Sweeper sweeper,
      LongSupplier nanoTime) {
    this.queue = queue;
    this.states = states;
    this.locks = locks;
    this.invoker = invoker;
    this.slots = slots;
    this.deadLetters = deadLetters;
    this.sweeper = sweeper;
    this.nanoTime = nanoTime;
  }

  /**
   * One consumer transaction: check the lock, peek up to {@code limit} items, run their callbacks
   * carrying the state in memory, write the state once, write replies, pop the items.
   *
   * @throws ItemFailure if an item's callback failed, or the state it left does not fit
   */
  Batch<S, M> run(Transaction tx, int limit) {
    long start = nanoTime.getAsLong();
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
          && (batchBytes(tx) > BATCH_BYTES || nanoTime.getAsLong() - start > BATCH_NANOS)) {
        break; // the rest stays queued for the next batch
      }
      queue.pop(tx, item);
      processed++;
      Envelope env;
      M msg;
      try {
        env = queue.envelope(item.value());
        msg = queue.message(tx, env);
      } catch (RuntimeException e) {
        deadLetters.moveUndecodable(tx, item, e);
        continue;
      }
      From from =
          env.isCall() ? new From(env.slotSeconds(), Objects.requireNonNull(env.slotId())) : null;
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
}
