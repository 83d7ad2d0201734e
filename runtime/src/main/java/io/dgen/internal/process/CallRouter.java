package io.dgen.internal.process;

import com.google.common.base.Suppliers;
import io.dgen.Call;
import io.dgen.From;
import io.dgen.backend.Futures;
import io.dgen.internal.base.CallerFailures;
import io.dgen.internal.base.RuntimeServices;
import io.dgen.internal.calls.CallProtocol;
import io.dgen.internal.codec.Envelope;
import io.dgen.internal.codec.ReplyTypes;
import io.dgen.internal.consume.InlinePart;
import io.dgen.internal.consume.InlineRunner;
import io.dgen.internal.idempotency.IdempotentRequests;
import io.dgen.internal.queue.ServerQueue;
import java.lang.reflect.Type;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * The routes of one process's calls and priority messages: a call runs inline (in this process, or
 * through a ref in the process of this runtime that runs the server) or is queued; a priority
 * message runs in the caller's thread, or is queued at the head for the holder when the behaviour
 * is elsewhere. Also hands atomic work the inline runner ({@link #atomicPart}).
 *
 * <p>Threading: thread-safe; holds nothing but the process's parts.
 *
 * @param <S> the state type
 * @param <M> the message type
 */
final class CallRouter<S, M> {

  private final ProcessParts<S, M> p;

  CallRouter(ProcessParts<S, M> parts) {
    this.p = parts;
  }

  /**
   * A typed request as this server's message: a {@link Call} of another type is refused when it is
   * encoded or run, before anything is written.
   */
  @SuppressWarnings("unchecked")
  static <M> M message(Call<?> request) {
    return (M) request;
  }

  /**
   * A call: inline in the process of this runtime that runs the server if a ref finds one loaded,
   * else routed by this process ({@link #route}); its failure as a {@code DGenException}.
   */
  <R> CompletableFuture<R> call(M request, @Nullable Type replyType, Duration timeout) {
    Objects.requireNonNull(request, "request must not be null");
    p.queue.tag(request); // a wrong type throws at once, in the async form too
    IdempotentRequests.checkTimeout(timeout);
    ProcessKind.Loaded<M> local =
        p.role == ProcessRole.REF && p.kind != null ? p.kind.loadedProcess(p.tuid) : null;
    if (local != null && p.options.consumeK() == 1 && p.options.rateLimit().isEmpty()) {
      // Inline where it runs. A process unloaded since it was looked up (a hand-off, an eviction,
      // a deactivation) refuses before anything ran: the call is then queued as by any ref, for
      // whichever process runs the server next. For a ref, "stopped" would mean killed.
      CompletableFuture<R> inline = local.callIfAlive(request, replyType, timeout);
      if (inline != null) {
        return CallerFailures.mapped(inline, "call", p.context);
      }
    }
    return CallerFailures.mapped(route(request, replyType, timeout, true), "call", p.context);
  }

  /** Runs the call inline in this process or queues it (a ref's, or with batches over one). */
  <R> CompletableFuture<R> route(
      M request, @Nullable Type replyType, Duration timeout, boolean checkAlive) {
    long start = p.services.nanoTime();
    try {
      if (checkAlive) {
        p.lifecycle.ensureAlive();
      }
      From from = p.slots.newFrom();
      p.queue.tag(request); // refuse a message of a wrong type before any transaction
      // Serialized only if the call is queued: an inline call never stores its envelope.
      Supplier<byte[]> env = Suppliers.memoize(() -> p.queue.encode(Envelope.CALL, request, from));
      CallProtocol.Waiting<R> waiting = p.calls.waiting(from, replyType, timeout);
      CompletableFuture<InlineRunner.Outcome<S>> sent =
          runsInline()
              ? p.inline.call(request, from, env, waiting)
              : p.calls
                  .pushOnce(env.get(), waiting)
                  .thenApply(pushed -> InlineRunner.Outcome.queuedInstead());
      CompletableFuture<R> reply =
          sent.handle(
                  (outcome, err) -> {
                    if (err != null) {
                      waiting.abandon(Futures.unwrap(err));
                      return waiting.result();
                    }
                    return outcome.queued()
                        ? waiting.await()
                        : CompletableFuture.completedFuture(
                            p.slots.<R>local(outcome.reply(), replyType));
                  })
              .thenCompose(f -> f);
      return p.meters.call(start, sent, reply);
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  // ---------------------------------------------------------------- priority messages

  <R> R priorityCall(Call<R> request) {
    p.queue.checkType(request);
    Type replyType = ReplyTypes.of(request.getClass());
    return priority(
        "priorityCall",
        () -> {
          if (behaviourElsewhere()) {
            return toHolder(Envelope.CALL, request, replyType);
          }
          try {
            return p.meters.priority(
                () ->
                    p.slots.<R>local(
                        p.inline.priorityCall(message(request), p.slots.newFrom()), replyType));
          } catch (InlineRunner.ToHolder mayHaveExpired) {
            return toHolder(Envelope.CALL, request, replyType);
          }
        });
  }

  void priorityCast(M message) {
    p.queue.checkType(message);
    ServerQueue.refuseCall(message);
    priorityNoReply("priorityCast", Envelope.CAST, message, () -> p.inline.priorityCast(message));
  }

  void info(Object info) {
    Objects.requireNonNull(info, "info must not be null");
    priorityNoReply("info", Envelope.INFO, info, () -> p.inline.info(info));
  }

  /**
   * A priority cast or info: run {@code here}, or by the holder if the kind is hosted elsewhere.
   */
  private void priorityNoReply(String operation, int type, Object message, Runnable here) {
    priority(
        operation,
        () -> {
          if (behaviourElsewhere()) {
            return toHolder(type, message, null);
          }
          try {
            here.run();
          } catch (InlineRunner.ToHolder mayHaveExpired) {
            return toHolder(type, message, null);
          }
          return null;
        });
  }

  /** Runs a priority message in the caller's thread; its failure as {@link CallerFailures} says. */
  private <R> R priority(String operation, Supplier<R> run) {
    try {
      return run.get();
    } catch (IllegalArgumentException | NullPointerException badArgument) {
      throw badArgument;
    } catch (RuntimeException e) {
      throw CallerFailures.toThrow(e, operation, p.context);
    }
  }

  /**
   * Whether a call runs inline when the queue is empty and the server unlocked: with {@code
   * consumeK} 1 and no rate limit, in a process that consumes, or through a ref in any runtime that
   * hosts the kind (its behaviour is here), whether or not it holds the server's bucket.
   */
  private boolean runsInline() {
    return (p.role == ProcessRole.REF ? p.kind != null : p.consume)
        && p.options.consumeK() == 1
        && p.options.rateLimit().isEmpty();
  }

  /**
   * This server's part in an atomic transaction of {@code caller}'s: the inline runner whose steps
   * it runs, as an inline call's (a ref's, as a visitor's).
   *
   * @throws IllegalArgumentException if this is another runtime's, or its calls do not run inline
   *     here (its behaviour is not here; batches over one, or a rate limit)
   */
  InlinePart<S, M> atomicPart(RuntimeServices caller) {
    if (caller != p.services) {
      throw new IllegalArgumentException("server " + p.tuid + " is a ref of another DGen");
    }
    p.lifecycle.ensureAlive();
    if (!runsInline()) {
      throw new IllegalArgumentException(
          (behaviourElsewhere()
                  ? "this runtime does not host the kind of server "
                      + p.tuid
                      + ", so it cannot run its callbacks: host the kind here (holdBuckets(false)"
                      + " hosts it without taking its buckets)"
                  : "the calls of server "
                      + p.tuid
                      + " never run inline (it does not consume here, consumes in batches over"
                      + " one, or is rate limited), so atomic work cannot run them")
              + "; nothing was committed: "
              + p.context);
    }
    return new InlinePart<>(p.inline, p.slots, p.queue, p.keys, p.context);
  }

  /** Whether this is a ref whose runtime does not host its kind: its code runs elsewhere. */
  private boolean behaviourElsewhere() {
    return p.role == ProcessRole.REF && p.kind == null;
  }

  /**
   * A priority message of a ref whose runtime does not host the kind: queued at the head for the
   * holder, which runs it next and replies; waits at most the call timeout.
   */
  @SuppressWarnings("unchecked")
  private <R> R toHolder(int type, Object message, @Nullable Type replyType) {
    p.lifecycle.ensureAlive();
    From from = p.slots.newFrom();
    byte[] env = p.queue.encode(type | Envelope.PRIORITY, (M) message, from);
    return Futures.join(p.calls.<R>toHolder(env, from, replyType, p.options.callTimeout()));
  }
}
