package io.dgen.internal.lock;

import com.apple.foundationdb.subspace.Subspace;
import com.apple.foundationdb.tuple.Tuple;
import com.apple.foundationdb.tuple.Versionstamp;
import io.dgen.DeadLetter;
import io.dgen.Event;
import io.dgen.From;
import io.dgen.ReplyTooLargeException;
import io.dgen.backend.Backend;
import io.dgen.backend.ByteKeys;
import io.dgen.backend.KeyValue;
import io.dgen.backend.Transaction;
import io.dgen.internal.base.Async;
import io.dgen.internal.base.RuntimeServices;
import io.dgen.internal.behaviour.CallbackInvoker;
import io.dgen.internal.calls.ReplySlots;
import io.dgen.internal.codec.DeadRecord;
import io.dgen.internal.codec.Envelope;
import io.dgen.internal.codec.Reply;
import io.dgen.internal.codec.Serde;
import io.dgen.internal.commit.CommitRunner;
import io.dgen.internal.keys.ServerEntry;
import io.dgen.internal.keys.ServerKeys;
import io.dgen.internal.keys.TenantKeys;
import io.dgen.internal.keys.UserVersions;
import io.dgen.internal.observe.LogContext;
import io.dgen.internal.queue.ServerQueue;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One server's dead letters: counting a queue item's consecutive failures (in the item itself),
 * moving it out of the queue at the threshold (with a dead-letter reply to a waiting caller),
 * moving undecodable items, and the admin operations: list, re-queue, purge.
 *
 * <p>Never runs {@code handle*} callbacks and never decides when to retry: the consume loop does;
 * it only tells the server's {@code handleDeadLetter} after a move.
 *
 * @param <M> the message type
 */
public final class DeadLetters<M> {

  private static final Logger log = LoggerFactory.getLogger(DeadLetters.class);

  private final RuntimeServices services;
  private final Backend backend;
  private final ServerKeys keys;
  private final Serde serde;
  private final CommitRunner commits;
  private final ServerQueue<M> queue;
  private final ReplySlots slots;
  private final CallbackInvoker<?, M> invoker;
  private final LongSupplier wallMillis;
  private final String context;
  private final Moves moves;

  public DeadLetters(
      RuntimeServices services,
      ServerKeys keys,
      Serde serde,
      CommitRunner commits,
      ServerQueue<M> queue,
      ReplySlots slots,
      CallbackInvoker<?, M> invoker,
      LongSupplier wallMillis,
      String context) {
    this.services = services;
    this.backend = services.backend();
    this.keys = keys;
    this.serde = serde;
    this.commits = commits;
    this.queue = queue;
    this.slots = slots;
    this.invoker = invoker;
    this.wallMillis = wallMillis;
    this.context = context;
    this.moves = new Moves(keys, serde, queue::publishing, env -> queue.withFailure(env, 0, null));
  }

  private byte[] deadKey(Versionstamp stamp) {
    return keys.dead().pack(Tuple.from(stamp));
  }

  /**
   * Returns the item's consecutive failures including this one; moves it to the dead letters at
   * {@code threshold}, then logs it and runs {@code handleDeadLetter}. Exactly once per failure,
   * even if the commit is retried after 1021.
   *
   * <p>A priority message a ref queued for the holder ({@link Envelope#PRIORITY}) is never retried:
   * it leaves the queue and its caller gets the error (returned as if at the threshold).
   *
   * <p>A call whose reply was too large fails its caller at once, whatever the count: its slot gets
   * the {@link ReplyTooLargeException} (also at the threshold, instead of the dead letter's reply),
   * so the caller learns what it can change, not only that the call was given up.
   */
  public int recordFailure(KeyValue item, Throwable cause, int threshold) {
    String failureId = UUID.randomUUID().toString();
    Versionstamp stamp = queue.stampOf(item);
    String error = errorOf(cause);
    Reply tooLarge = cause instanceof ReplyTooLargeException e ? ReplySlots.tooLarge(e) : null;
    int attempts =
        backend.run(
            tx -> {
              byte[] dead = tx.get(deadKey(stamp));
              if (dead != null) {
                DeadRecord d = DeadRecord.decode(dead, serde);
                return d.by().equals(failureId) ? d.attempts() : 0;
              }
              byte[] current = tx.get(item.key());
              if (current == null) {
                return 0; // processed meanwhile by another consumer
              }
              Envelope env = queue.envelope(current);
              if (env.priority()) {
                // A priority message is never retried: its caller gets the error, as it would have
                // had the callback run in its own runtime.
                tx.clear(item.key());
                queue.popped(tx, 1);
                slots.write(tx, callerOf(env), ReplySlots.callbackFailed(error), null);
                return REJECTED;
              }
              if (failureId.equals(env.failureId())) {
                return env.failures(); // a retry of a commit that applied
              }
              int count = env.failures() + 1;
              if (count < threshold) {
                // The count lives in the item itself: a success pops it, leaving nothing to clear.
                tx.set(item.key(), queue.withFailure(env, count, failureId));
                if (tooLarge != null && env.isCall()) {
                  slots.write(tx, callerOf(env), tooLarge, null);
                }
                return count;
              }
              tx.clear(item.key());
              queue.popped(tx, 1);
              tx.set(
                  deadKey(stamp),
                  new DeadRecord(current, count, error, wallMillis.getAsLong(), failureId)
                      .encode());
              replyDeadLettered(tx, env, count, error, tooLarge);
              return count;
            });
    if (attempts == REJECTED) {
      return threshold; // out of the queue, as a dead letter would be, but not one
    }
    if (attempts >= threshold) {
      afterDeadLetter(item, attempts);
    }
    return attempts;
  }

  /** What a failure recording returns for a priority message it rejected. */
  private static final int REJECTED = -1;

  private static From callerOf(Envelope env) {
    return new From(env.slotSeconds(), Objects.requireNonNull(env.slotId()));
  }

  private static String errorOf(Throwable cause) {
    return cause.getClass().getName() + ": " + cause.getMessage();
  }

  /**
   * A run of {@code handleLocked} failed: in {@code tx}, which releases the lock, counts the
   * failure against the message that took it, {@code envelope} (the count travels in the envelope,
   * as a queue item's does), and re-queues it at the head of the queue, or, at {@code threshold},
   * moves it to the dead letters with a dead-letter reply for a call. A call whose reply was too
   * large gets that error at once, as in {@link #recordFailure}. Exactly once when {@code tx}'s run
   * is (the commit runner's marker). Returns the count including this failure; at the threshold,
   * {@link #afterDeadLetter} is due once the transaction has committed.
   */
  int countLockFailure(Transaction tx, byte[] envelope, Throwable cause, int threshold) {
    Envelope env = queue.envelope(envelope);
    int count = env.failures() + 1;
    String error = errorOf(cause);
    Reply tooLarge = cause instanceof ReplyTooLargeException e ? ReplySlots.tooLarge(e) : null;
    String failureId = UUID.randomUUID().toString();
    if (count < threshold) {
      queue.push(tx, ServerKeys.LANE_HEAD, queue.withFailure(env, count, failureId));
      if (tooLarge != null && env.isCall()) {
        slots.write(tx, callerOf(env), tooLarge, null);
      }
      return count;
    }
    tx.setVersionstampedKey(
        keys.dead().getKey(),
        Tuple.from(Versionstamp.incomplete(UserVersions.next(tx))),
        new DeadRecord(envelope, count, error, wallMillis.getAsLong(), failureId).encode());
    replyDeadLettered(tx, env, count, error, tooLarge);
    return count;
  }

  /** Tells a call's caller, if it still waits, that its call was dead-lettered (or too large). */
  private void replyDeadLettered(
      Transaction tx, Envelope env, int count, String error, @Nullable Reply tooLarge) {
    if (env.isCall()) {
      slots.write(
          tx,
          callerOf(env),
          tooLarge != null ? tooLarge : ReplySlots.deadLettered(count, error),
          null);
    }
  }

  /** Logs a dead letter and lets the server's {@code handleDeadLetter} know. */
  private void afterDeadLetter(KeyValue item, int attempts) {
    afterDeadLetter(item.value(), attempts, ServerKeys.stampId(queue.stampOf(item)));
  }

  /**
   * Logs a dead letter moved out of the queue, whose envelope is {@code envelope}, and lets the
   * server's {@code handleDeadLetter} know.
   *
   * @param id the dead letter's id, or null if it is not known here
   */
  void afterDeadLetter(byte[] envelope, int attempts, @Nullable String id) {
    @Nullable M message;
    try {
      message = queue.message(queue.envelope(envelope));
    } catch (RuntimeException e) {
      log.error("handleDeadLetter skipped: the message cannot be decoded: {}", context, e);
      message = null;
    }
    invoker.meters().deadLettered();
    try (LogContext.Scope mdc = invoker.logs().open(message)) {
      log.error(
          "message dead-lettered after {} attempts: {} deadLetterId={}",
          attempts,
          context,
          id != null ? id : "(see deadLetters())");
      if (message != null) {
        invoker.handleDeadLetter(message, attempts);
      }
    } catch (RuntimeException e) {
      log.error(
          "handleDeadLetter failed: {}",
          context,
          e instanceof CallbackInvoker.CallbackFailure f ? f.reason() : e);
    }
  }

  /** Moves a queue item that cannot be decoded to the dead letters, in the batch's transaction. */
  public void moveUndecodable(Transaction tx, KeyValue item, RuntimeException cause) {
    // Undecodable data can never succeed: keep it, out of the queue, for inspection.
    RuntimeException e =
        cause instanceof io.dgen.UndecodableDataException u
            ? u.at(context, com.apple.foundationdb.tuple.ByteArrayUtil.printable(item.key()))
            : cause;
    try (LogContext.Scope mdc = invoker.logs().open(null)) {
      log.error(
          "queue item cannot be decoded; moved to the dead letters: {} deadLetterId={}",
          context,
          ServerKeys.stampId(queue.stampOf(item)),
          e);
    }
    tx.set(
        deadKey(queue.stampOf(item)),
        new DeadRecord(
                item.value(),
                0,
                e.getClass().getName() + ": " + e.getMessage(),
                wallMillis.getAsLong(),
                "undecodable")
            .encode());
  }

  /** Every dead letter, oldest first; one whose message no longer decodes is listed without it. */
  public CompletableFuture<List<DeadLetter<M>>> list() {
    Subspace dead = keys.dead();
    return commits
        .readBounded(
            tx -> tx.snapshot().getRangeAsync(dead.range().begin, dead.range().end, 0, false),
            "deadLetters",
            services.scheduler())
        .thenApply(this::decode);
  }

  private List<DeadLetter<M>> decode(List<KeyValue> rows) {
    Subspace dead = keys.dead();
    List<DeadLetter<M>> out = new ArrayList<>(rows.size());
    for (KeyValue kv : rows) {
      Versionstamp stamp = dead.unpack(kv.key()).getVersionstamp(0);
      DeadRecord d = DeadRecord.decode(kv.value(), serde);
      M message = null;
      Event.Type type = Event.Type.CAST;
      try {
        Envelope env = queue.envelope(d.envelope());
        type = env.isCall() ? Event.Type.CALL : Event.Type.CAST;
        message = queue.message(env);
      } catch (RuntimeException e) {
        // listed without its message
      }
      out.add(
          new DeadLetter<>(
              ServerKeys.stampId(stamp),
              type,
              message,
              d.attempts(),
              d.error(),
              Instant.ofEpochMilli(d.at())));
    }
    return out;
  }

  /** Moves a dead letter back into the queue; false if there is no such dead letter. */
  public CompletableFuture<Boolean> requeue(String id, boolean head) {
    Versionstamp stamp = ServerKeys.parseStampId(id, "a dead letter");
    return commit(
            tx ->
                Async.then(
                    tx.getAsync(deadKey(stamp)),
                    services.blocking(),
                    dead ->
                        dead == null
                            ? CompletableFuture.completedFuture(false)
                            : moves
                                .requeue(tx, deadKey(stamp), dead, head)
                                .thenApply(published -> true)),
            "requeueDeadLetter")
        .thenApply(
            moved -> {
              if (Boolean.TRUE.equals(moved)) {
                log.info(
                    "dead letter re-queued at the {}: {} id={}",
                    head ? "head" : "tail",
                    context,
                    id);
              }
              return Boolean.TRUE.equals(moved);
            });
  }

  /** Runs {@code body} through the commit runner, bounded by the operation timeout. */
  private <T> CompletableFuture<T> commit(CommitRunner.AsyncBody<T> body, String operation) {
    return commits.commitBounded(body, operation, services.blocking(), services.scheduler());
  }

  /** Deletes a dead letter; false if there was none. */
  public CompletableFuture<Boolean> purge(String id) {
    byte[] key = deadKey(ServerKeys.parseStampId(id, "a dead letter"));
    return commit(
        tx ->
            Async.thenApply(
                tx.getAsync(key), services.blocking(), dead -> moves.purge(tx, key, dead)),
        "purgeDeadLetter");
  }

  /**
   * Deletes every dead letter, {@value Moves#PAGE} per transaction; returns how many there were.
   * Each page is a transaction of the commit runner, so a page retried after {@code
   * commit_unknown_result} is counted once. Each page is bounded by the operation timeout.
   */
  public CompletableFuture<Integer> purgeAll() {
    return purgeFrom(0);
  }

  /** Purges the next page; then, if it was full, the one after (a transaction each). */
  private CompletableFuture<Integer> purgeFrom(int total) {
    Subspace dead = keys.dead();
    return commit(
            tx ->
                Async.then(
                    tx.getRangeAsync(dead.range().begin, dead.range().end, Moves.PAGE, false),
                    services.blocking(),
                    page -> moves.movePage(tx, page, false, false)),
            "purgeDeadLetters")
        .thenCompose(
            n ->
                n < Moves.PAGE
                    ? CompletableFuture.completedFuture(total + n)
                    : purgeFrom(total + n));
  }

  /**
   * The writes that re-queue and delete one server's dead letters, given what the transaction read:
   * the one implementation of both, used by a running server's {@link DeadLetters} and by the admin
   * tools ({@code io.dgen.admin.ServerAdmin}), which work from the stored keys without a process
   * ({@link #stored}). The caller reads (the dead letter, or a page of them with {@link #PAGE}) and
   * runs the transaction; these methods write. Not an API.
   */
  public static final class Moves {

    /**
     * The most dead letters one transaction re-queues or deletes (a dead letter may be close to
     * 100,000 bytes: a page reads at most 10 MB, well within a transaction's five seconds).
     */
    public static final int PAGE = 100;

    private final ServerKeys keys;
    private final Serde serde;
    private final Function<Transaction, CompletableFuture<?>> publishing;
    private final Function<Envelope, byte @Nullable []> withoutFailures;

    /**
     * @param publishing starts the publish step of a push from outside (a ring, or the activation
     *     of an idle hosted server); the transaction waits for it before it commits
     * @param withoutFailures an envelope with failures, with its count cleared; null to re-queue it
     *     as it is
     */
    Moves(
        ServerKeys keys,
        Serde serde,
        Function<Transaction, CompletableFuture<?>> publishing,
        Function<Envelope, byte @Nullable []> withoutFailures) {
      this.keys = keys;
      this.serde = serde;
      this.publishing = publishing;
      this.withoutFailures = withoutFailures;
    }

    /**
     * The moves of server {@code keys} in {@code tenant} as stored, with no process: a re-queue
     * publishes as any push from outside does ({@link ServerEntry#publishFor}), and an item tagged
     * with its type's name goes back with its failure count (there is no type table here to index
     * it by).
     *
     * @param tenant the server's tenant's keys
     * @param keys the server's keys
     * @param serde decodes the dead records
     * @return the moves
     */
    public static Moves stored(TenantKeys tenant, ServerKeys keys, Serde serde) {
      return new Moves(
          keys,
          serde,
          tx -> ServerEntry.publishFor(tx, tenant, keys),
          env -> env.typeName() != null ? null : env.withFailure(0, null, env.typeIndex()));
    }

    /**
     * Moves the dead letter {@code dead}, read at {@code key}, back into the queue, at its head
     * (consumed next) or its tail, with its failure count cleared, and publishes the server.
     *
     * @param tx the transaction that read it
     * @param key the dead letter's key
     * @param dead the dead record read there
     * @param head true for the head of the queue
     * @return the publish step, which the transaction must wait for before it commits
     */
    public CompletableFuture<?> requeue(Transaction tx, byte[] key, byte[] dead, boolean head) {
      var entry = publishing.apply(tx); // an idle hosted server is activated
      tx.clear(key);
      keys.push(tx, lane(head), freshCount(dead));
      return entry;
    }

    /**
     * Deletes the dead letter at {@code key}.
     *
     * @param tx the transaction that read it
     * @param key the dead letter's key
     * @param dead what was read there, null for nothing
     * @return whether there was a dead letter
     */
    public boolean purge(Transaction tx, byte[] key, byte @Nullable [] dead) {
      tx.clear(key);
      return dead != null;
    }

    /**
     * Removes a page of dead letters, the first ones of the server as {@code tx} read them (at most
     * {@link #PAGE}), and re-queues them in their order if {@code requeue}.
     *
     * @param tx the transaction that read them
     * @param page the dead letters read, in key order, from the first
     * @param requeue true to re-queue them, false to delete them
     * @param head for a re-queue, true for the head of the queue
     * @return how many there were, once the publish step of a re-queue is done
     */
    public CompletableFuture<Integer> movePage(
        Transaction tx, List<KeyValue> page, boolean requeue, boolean head) {
      if (page.isEmpty()) {
        return CompletableFuture.completedFuture(0);
      }
      // exactly what was read: the read's conflict range ends at its last key too
      tx.clearRange(keys.dead().range().begin, ByteKeys.keyAfter(page.get(page.size() - 1).key()));
      if (!requeue) {
        return CompletableFuture.completedFuture(page.size());
      }
      var entry = publishing.apply(tx);
      for (KeyValue kv : page) {
        keys.push(tx, lane(head), freshCount(kv.value()));
      }
      return entry.thenApply(published -> page.size());
    }

    private static long lane(boolean head) {
      return head ? ServerKeys.LANE_HEAD : ServerKeys.LANE_NORMAL;
    }

    /**
     * The dead record's envelope with its failure count cleared, so that a re-queued message gets
     * the whole threshold again. An envelope that does not even decode goes back as it is (it is
     * dead-lettered again at once unless the cause was fixed).
     */
    private byte[] freshCount(byte[] deadRecord) {
      byte[] envelope = DeadRecord.decode(deadRecord, serde).envelope();
      Envelope env;
      try {
        env = Envelope.decode(envelope, serde);
      } catch (RuntimeException e) {
        return envelope;
      }
      byte[] fresh = env.failures() == 0 ? null : withoutFailures.apply(env);
      return fresh == null ? envelope : fresh;
    }
  }
}
