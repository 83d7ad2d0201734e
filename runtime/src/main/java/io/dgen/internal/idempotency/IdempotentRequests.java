package io.dgen.internal.idempotency;

import io.dgen.From;
import io.dgen.Outbox;
import io.dgen.backend.Futures;
import io.dgen.backend.Transaction;
import io.dgen.internal.base.Async;
import io.dgen.internal.base.RuntimeServices;
import io.dgen.internal.calls.CallProtocol;
import io.dgen.internal.calls.ReplySlots;
import io.dgen.internal.codec.Envelope;
import io.dgen.internal.codec.ReplyTypes;
import io.dgen.internal.commit.CommitRunner;
import io.dgen.internal.keys.KeptReplies;
import io.dgen.internal.keys.ServerKeys;
import io.dgen.internal.queue.ServerQueue;
import io.dgen.internal.timers.Timers;
import java.lang.reflect.Type;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import org.jspecify.annotations.Nullable;

/**
 * A server's requests that survive client retries and restarts: keyed casts (also through the
 * {@link Outbox}), keyed calls, {@code submit} and {@code awaitReply}. A keyed push reads its key's
 * record in its own transaction ({@link IdempotencyKeys}) and pushes only if it claims the key. A
 * keyed call or a submitted call is always queued (never inline), with a kept reply slot ({@link
 * KeptReplies}) that the consumer fills like any other and that stays readable, from any runtime,
 * until the retention window ends. Waiting for it is waiting for a queued call: a doorbell listener
 * under the slot's wake id and a deadline, no thread and no watch.
 *
 * <p>Never runs callbacks; holds no per-request state. Thread-safe.
 *
 * @param <M> the message type
 */
public final class IdempotentRequests<M> {

  private final RuntimeServices services;
  private final CommitRunner commits;
  private final ServerQueue<M> queue;
  private final Timers<M> timers;
  private final ReplySlots slots;
  private final CallProtocol calls;
  private final IdempotencyKeys idempotency;
  private final Duration retention;
  private final Outbox<M> outbox;

  public IdempotentRequests(
      RuntimeServices services,
      ServerKeys keys,
      CommitRunner commits,
      ServerQueue<M> queue,
      Timers<M> timers,
      ReplySlots slots,
      CallProtocol calls,
      Duration retention) {
    this.services = services;
    this.commits = commits;
    this.queue = queue;
    this.timers = timers;
    this.slots = slots;
    this.calls = calls;
    this.idempotency = new IdempotencyKeys(keys);
    this.retention = retention;
    this.outbox = new QueueOutbox();
  }

  /**
   * Checks a call's or a wait's timeout.
   *
   * @throws IllegalArgumentException unless positive and at most {@link
   *     ReplySlots#MAX_CALL_TIMEOUT}
   */
  public static void checkTimeout(Duration timeout) {
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
  }

  /** Queues {@code message} unless its key was claimed within the window; true if it queued it. */
  public CompletableFuture<Boolean> cast(M message, String key) {
    Objects.requireNonNull(message, "message must not be null");
    IdempotencyKeys.check(key);
    byte[] env = queue.encode(Envelope.CAST, message, null);
    long now = services.wallMillis();
    return commits
        .commitBounded(
            tx ->
                Async.thenApply(
                    // the server's entry is read with the key's
                    idempotency.read(tx, key).thenCombine(queue.entry().read(tx, true), Read::new),
                    services.blocking(),
                    read -> claimAndCast(tx, key, env, read, now)),
            "cast",
            services.blocking(),
            services.scheduler())
        .thenApply(claim -> Objects.requireNonNull(claim).ours());
  }

  /** A key's record and the server's entry, read together by a keyed push. */
  private record Read(byte @Nullable [] record, byte @Nullable [] entry) {}

  private IdempotencyKeys.Claim claimAndCast(
      Transaction tx, String key, byte[] env, Read read, long now) {
    IdempotencyKeys.Claim claim =
        idempotency.claim(
            tx, key, read.record(), KeptReplies.expirySecond(now, retention), null, now);
    if (claim.created()) {
      queue.push(tx, ServerKeys.LANE_NORMAL, env);
      queue.entry().ring(tx, read.entry()); // a repeat writes nothing
    }
    return claim;
  }

  /** The outbox, with the keyed cast. */
  public Outbox<M> outbox() {
    return outbox;
  }

  /**
   * Runs {@code request} once per key: the first call with {@code key} is queued with a kept reply;
   * any later one waits for that reply.
   */
  public <R> CompletableFuture<R> call(M request, String key, Duration timeout) {
    Objects.requireNonNull(request, "request must not be null");
    IdempotencyKeys.check(key);
    checkTimeout(timeout);
    queue.tag(request); // refuse a message of a wrong type before any transaction
    long now = services.wallMillis();
    From fresh = KeptReplies.newFrom(now, retention);
    byte[] env = queue.encode(Envelope.CALL, request, fresh);
    Type replyType = ReplyTypes.of(request.getClass());
    CallProtocol.Waiting<R> waiting = calls.waiting(fresh, replyType, timeout);
    return calls
        .bounded(
            commits.<IdempotencyKeys.Claim>commitAsync(
                tx ->
                    Async.thenApply(
                        idempotency
                            .read(tx, key)
                            .thenCombine(queue.entry().read(tx, true), Read::new),
                        services.executor(),
                        read -> {
                          IdempotencyKeys.Claim claim =
                              idempotency.claim(
                                  tx, key, read.record(), fresh.slotSeconds(), fresh, now);
                          if (claim.created()) {
                            calls.push(tx, env, waiting);
                            queue.entry().ring(tx, read.entry());
                          }
                          return claim;
                        }),
                (tx, prior) -> prior,
                services.executor()),
            waiting)
        .handle(
            (claim, err) -> {
              if (err != null || claim == null) {
                waiting.abandon(Futures.unwrap(err));
                return waiting.result();
              }
              if (fresh.equals(claim.call())) {
                return waiting.await();
              }
              waiting.abandon(null);
              From first = claim.call();
              if (first == null) {
                return CompletableFuture.<R>failedFuture(
                    new IllegalArgumentException(
                        "idempotencyKey '" + key + "' was used by a cast, not a call"));
              }
              return calls.<R>waiting(first, replyType, timeout).resume();
            })
        .thenCompose(f -> f);
  }

  /** Queues {@code request} as a call with a kept reply; returns its call id once queued. */
  public CompletableFuture<String> submit(M request) {
    Objects.requireNonNull(request, "request must not be null");
    queue.tag(request);
    From from = KeptReplies.newFrom(services.wallMillis(), retention);
    byte[] env = queue.encode(Envelope.CALL, request, from);
    return commits
        .commitBounded(
            tx -> {
              CompletableFuture<@Nullable Void> live = queue.publishing(tx);
              slots.open(tx, from);
              queue.push(tx, ServerKeys.LANE_NORMAL, env);
              return live;
            },
            "submit",
            services.blocking(),
            services.scheduler())
        .thenApply(done -> KeptReplies.callId(from));
  }

  /** Waits for the kept reply of {@code callId}. */
  public <R> CompletableFuture<R> awaitReply(String callId, Duration timeout) {
    Objects.requireNonNull(callId, "callId must not be null");
    checkTimeout(timeout);
    try {
      return calls.<R>waiting(KeptReplies.parse(callId), null, timeout).resume();
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /** The server's outbox: casts, keyed or not, in the caller's transaction. */
  private final class QueueOutbox implements Outbox<M> {
    @Override
    public void cast(Transaction tx, M message) {
      queue.castInto(tx, message);
    }

    @Override
    public void castAll(Transaction tx, List<? extends M> messages) {
      Objects.requireNonNull(messages, "messages must not be null");
      for (M m : messages) {
        queue.tag(m); // all refused before any is pushed into the caller's transaction
      }
      for (M m : messages) {
        queue.castInto(tx, m);
      }
    }

    @Override
    public String castAfter(Transaction tx, M message, Duration delay) {
      return timers.castAfter(tx, message, delay);
    }

    @Override
    public boolean cast(Transaction tx, M message, String idempotencyKey) {
      Objects.requireNonNull(tx, "transaction must not be null");
      Objects.requireNonNull(message, "message must not be null");
      IdempotencyKeys.check(idempotencyKey);
      byte[] env = queue.encode(Envelope.CAST, message, null);
      var entry = queue.entry().read(tx, true); // read with the key's
      byte[] record = Futures.join(idempotency.read(tx, idempotencyKey));
      return claimAndCast(
              tx, idempotencyKey, env, new Read(record, Futures.join(entry)), services.wallMillis())
          .ours();
    }
  }
}
