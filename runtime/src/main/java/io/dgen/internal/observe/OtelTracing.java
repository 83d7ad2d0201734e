package io.dgen.internal.observe;

import io.dgen.Action;
import io.dgen.internal.codec.Envelope;
import io.opentelemetry.api.GlobalOpenTelemetry;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.trace.SpanBuilder;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import io.opentelemetry.context.propagation.TextMapGetter;
import io.opentelemetry.context.propagation.TextMapSetter;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * Tracing with OpenTelemetry: the only class of the runtime that touches it, loaded only when the
 * API is on the class path (see {@link Tracing}). Spans follow the messaging semantic conventions
 * where they fit ({@code messaging.system = dgen}); see {@code docs/tracing.md}.
 *
 * <p>Without an SDK (a no-op tracer), nothing is captured unless a valid span is current, which
 * only an SDK (or an agent) makes, and no span is started: a traced item's context is still made
 * current around its callback, so that spans of another tracer join it.
 *
 * <p>Threading: thread-safe.
 */
public final class OtelTracing implements Tracing {

  /** The instrumentation scope of the runtime's spans. */
  public static final String SCOPE = "io.dgen";

  static final AttributeKey<String> SYSTEM = AttributeKey.stringKey("messaging.system");
  static final AttributeKey<String> DESTINATION =
      AttributeKey.stringKey("messaging.destination.name");
  static final AttributeKey<String> OPERATION_TYPE =
      AttributeKey.stringKey("messaging.operation.type");
  static final AttributeKey<String> OPERATION_NAME =
      AttributeKey.stringKey("messaging.operation.name");
  static final AttributeKey<String> MESSAGE_ID = AttributeKey.stringKey("messaging.message.id");
  static final AttributeKey<Long> BATCH_COUNT =
      AttributeKey.longKey("messaging.batch.message_count");
  static final AttributeKey<String> TUID = AttributeKey.stringKey("dgen.tuid");

  private static final W3CTraceContextPropagator W3C = W3CTraceContextPropagator.getInstance();
  private static final Tracer NOOP = OpenTelemetry.noop().getTracer(SCOPE);
  private static final String TRACEPARENT = "traceparent";
  private static final String TRACESTATE = "tracestate";
  private static final TextMapSetter<String[]> SETTER =
      (carrier, key, value) -> {
        if (carrier != null) {
          carrier[TRACEPARENT.equals(key) ? 0 : 1] = value;
        }
      };
  private static final TextMapGetter<Envelope.Trace> GETTER =
      new TextMapGetter<>() {
        @Override
        public Iterable<String> keys(Envelope.Trace carrier) {
          return List.of(TRACEPARENT, TRACESTATE);
        }

        @Override
        public @Nullable String get(Envelope.@Nullable Trace carrier, String key) {
          if (carrier == null) {
            return null;
          }
          return TRACEPARENT.equals(key) ? carrier.traceparent() : carrier.tracestate();
        }
      };

  private final @Nullable OpenTelemetry given;
  private volatile @Nullable Tracer tracer;

  private OtelTracing(@Nullable OpenTelemetry given) {
    this.given = given;
  }

  /**
   * Traces with {@code openTelemetry} ({@code DGen.Builder.openTelemetry}); {@link
   * OpenTelemetry#noop()} traces nothing, exactly as without the API.
   *
   * @param openTelemetry e.g. an {@code OpenTelemetrySdk}
   */
  public static Tracing of(OpenTelemetry openTelemetry) {
    return openTelemetry.getTracer(SCOPE) == NOOP ? Tracing.NONE : new OtelTracing(openTelemetry);
  }

  /**
   * Traces with {@link GlobalOpenTelemetry} once something set it (an agent, the application),
   * never setting it: asking {@code GlobalOpenTelemetry.get()} before would fix it to a no-op.
   */
  static Tracing global() {
    return new OtelTracing(null);
  }

  /** The tracer, or {@link #NOOP} until the global one is set. */
  private Tracer tracer() {
    Tracer t = tracer;
    if (t != null) {
      return t;
    }
    if (given == null && !GlobalOpenTelemetry.isSet()) {
      return NOOP;
    }
    t = (given != null ? given : GlobalOpenTelemetry.get()).getTracer(SCOPE);
    tracer = t;
    return t;
  }

  @Override
  public Tracing.Server server(String destination, String tuid) {
    return new Server(
        destination, Attributes.of(SYSTEM, "dgen", DESTINATION, destination, TUID, tuid));
  }

  private final class Server implements Tracing.Server {
    private final String destination;
    private final Attributes attributes;

    Server(String destination, Attributes attributes) {
      this.destination = destination;
      this.attributes = attributes;
    }

    @Override
    public Envelope.@Nullable Trace capture() {
      Context context = Context.current();
      if (!io.opentelemetry.api.trace.Span.fromContext(context).getSpanContext().isValid()) {
        return null; // no SDK, or no trace: the item carries nothing
      }
      Tracer t = tracer();
      io.opentelemetry.api.trace.Span create = null;
      if (t != NOOP) {
        create =
            t.spanBuilder("create " + destination)
                .setSpanKind(SpanKind.PRODUCER)
                .setAllAttributes(attributes)
                .setAttribute(OPERATION_TYPE, "create")
                .setAttribute(OPERATION_NAME, "create")
                .startSpan();
        context = context.with(create);
      }
      String[] carrier = new String[2];
      W3C.inject(context, carrier, SETTER);
      if (create != null) {
        create.end();
      }
      return carrier[0] == null ? null : new Envelope.Trace(carrier[0], carrier[1]);
    }

    @Override
    public Executor inCallersContext(Executor executor) {
      Context context = Context.current();
      return io.opentelemetry.api.trace.Span.fromContext(context).getSpanContext().isValid()
          ? context.wrap(executor)
          : executor;
    }

    @Override
    public Tracing.Span batch(List<Envelope.@Nullable Trace> publishers) {
      Tracer t = tracer();
      if (t == NOOP) {
        return Tracing.Span.NONE;
      }
      SpanBuilder b =
          t.spanBuilder("batch " + destination)
              .setSpanKind(SpanKind.CONSUMER)
              .setNoParent()
              .setAllAttributes(attributes)
              .setAttribute(OPERATION_TYPE, "process")
              .setAttribute(OPERATION_NAME, "batch")
              .setAttribute(BATCH_COUNT, (long) publishers.size());
      for (Envelope.Trace p : publishers) {
        SpanContext linked = p == null ? null : spanContext(p);
        if (linked != null) {
          b.addLink(linked);
        }
      }
      return new Span(b.startSpan(), null);
    }

    @Override
    public Tracing.Span process(
        String operation,
        Envelope.@Nullable Trace publisher,
        Tracing.Span batch,
        Supplier<String> messageId) {
      Tracer t = tracer();
      Context parent = publisher == null ? null : extract(publisher);
      if (t == NOOP) {
        // No span of ours, but spans of another tracer in the callback join the publisher's.
        return parent == null ? Tracing.Span.NONE : new Span(null, parent);
      }
      io.opentelemetry.api.trace.Span batchSpan = batch instanceof Span s ? s.span : null;
      SpanBuilder b =
          t.spanBuilder(operation + " " + destination)
              .setSpanKind(SpanKind.CONSUMER)
              .setAllAttributes(attributes)
              .setAttribute(OPERATION_TYPE, "process")
              .setAttribute(OPERATION_NAME, operation)
              .setAttribute(MESSAGE_ID, messageId.get());
      if (parent != null) {
        b.setParent(parent);
        if (batchSpan != null) {
          b.addLink(batchSpan.getSpanContext());
        }
      } else if (batchSpan != null) {
        b.setParent(Context.root().with(batchSpan));
      } else {
        b.setNoParent();
      }
      io.opentelemetry.api.trace.Span span = b.startSpan();
      return new Span(span, Context.root().with(span));
    }
  }

  private static @Nullable Context extract(Envelope.Trace trace) {
    Context c = W3C.extract(Context.root(), trace, GETTER);
    return io.opentelemetry.api.trace.Span.fromContext(c).getSpanContext().isValid() ? c : null;
  }

  private static @Nullable SpanContext spanContext(Envelope.Trace trace) {
    Context c = extract(trace);
    return c == null ? null : io.opentelemetry.api.trace.Span.fromContext(c).getSpanContext();
  }

  /** A span of ours (or none), current while open if it has a context. */
  private static final class Span implements Tracing.Span {
    private final io.opentelemetry.api.trace.@Nullable Span span;
    private final @Nullable Context context;
    private final @Nullable Scope scope;

    Span(io.opentelemetry.api.trace.@Nullable Span span, @Nullable Context context) {
      this.span = span;
      this.context = context;
      this.scope = context == null ? null : context.makeCurrent();
    }

    @Override
    public void failed(Throwable cause) {
      if (span != null) {
        span.recordException(cause);
        span.setStatus(StatusCode.ERROR);
      }
    }

    @Override
    public <S> List<Action<S>> around(List<Action<S>> actions) {
      Context c = context;
      if (c == null || actions.isEmpty()) {
        return actions;
      }
      List<Action<S>> wrapped = new ArrayList<>(actions.size());
      for (Action<S> a : actions) {
        wrapped.add(
            state -> {
              try (Scope s = c.makeCurrent()) {
                a.run(state);
              }
            });
      }
      return wrapped;
    }

    @Override
    public void close() {
      if (scope != null) {
        scope.close();
      }
      if (span != null) {
        span.end();
      }
    }
  }
}
