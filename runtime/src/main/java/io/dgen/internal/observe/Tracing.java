package io.dgen.internal.observe;

import io.dgen.Action;
import io.dgen.internal.codec.Envelope;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * Tracing through the queue, as hooks: the runtime calls them and knows no tracing library. A
 * publisher's trace context is captured into the item it queues ({@link Envelope.Trace}) and
 * restored around the callback that processes it, its post-commit actions and {@code handleLocked}.
 * {@link #NONE} does nothing; {@code OtelTracing}, the one class that touches OpenTelemetry, is
 * loaded only when the OpenTelemetry API is on the class path, so that the runtime runs without it
 * (see {@code docs/tracing.md}). Implementations are thread-safe and never throw.
 */
public interface Tracing {

  /** Traces nothing. */
  Tracing NONE = new Tracing() {};

  /**
   * The tracing of one server's queue.
   *
   * @param destination what its spans name as {@code messaging.destination.name}: the tenant's
   *     path, and the kind of a server addressed by id
   * @param tuid the server's identity, as {@code dgen.tuid}
   */
  default Server server(String destination, String tuid) {
    return Server.NONE;
  }

  /**
   * A server's {@code messaging.destination.name}: its tenant's path joined by {@code /}, then the
   * kind of a server addressed by id, e.g. {@code acme/orders/order}.
   *
   * @param kind the server's kind, or null for a started server
   */
  static String destination(List<String> tenantPath, @Nullable Object kind) {
    String tenant = String.join("/", tenantPath);
    return kind == null ? tenant : tenant + "/" + kind;
  }

  /** The tracing of one server: capture at publish, spans around its callbacks. */
  interface Server {

    /** Traces nothing. */
    Server NONE = new Server() {};

    /**
     * The trace context of the calling thread, to store in an item it queues for this server; null
     * (and nothing stored) unless a valid span is current. May record a {@code create} span.
     */
    default Envelope.@Nullable Trace capture() {
      return null;
    }

    /**
     * {@code executor}, running each task in the calling thread's trace context, if a valid span is
     * current: for work of the caller's that goes on in other threads (an inline call).
     */
    default Executor inCallersContext(Executor executor) {
      return executor;
    }

    /**
     * Starts the span of a consumer batch, linked to its items' publishers; not current.
     *
     * @param publishers the trace contexts its items carry (nulls are skipped)
     */
    default Span batch(List<Envelope.@Nullable Trace> publishers) {
      return Span.NONE;
    }

    /**
     * Starts the span of one message's processing, a child of its publisher's context (and linked
     * to {@code batch}), or of {@code batch} if it carries none, and makes it current.
     *
     * @param operation the callback, e.g. {@code handleCast}
     * @param publisher the trace context the item carries, or null
     * @param messageId the item's id, asked for only if the span records
     */
    default Span process(
        String operation,
        Envelope.@Nullable Trace publisher,
        Span batch,
        Supplier<String> messageId) {
      return Span.NONE;
    }
  }

  /** A started span (or a restored context): close it in the thread that started it. */
  interface Span extends AutoCloseable {

    /** No span, no context. */
    Span NONE = new Span() {};

    /** Records that the work failed. */
    default void failed(Throwable cause) {}

    /**
     * {@code actions}, each run with this span's context current (after this span closed), so that
     * spans they start join its trace.
     */
    default <S> List<Action<S>> around(List<Action<S>> actions) {
      return actions;
    }

    /** Ends the span and restores the thread's context. */
    @Override
    default void close() {}
  }
}
