package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dgen.backend.KeyValue;
import io.dgen.backend.Transaction;
import io.dgen.internal.codec.Envelope;
import io.dgen.internal.codec.Serde;
import io.dgen.internal.keys.Buckets;
import io.dgen.internal.keys.ServerKeys;
import io.opentelemetry.api.GlobalOpenTelemetry;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Scope;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.function.Predicate;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Traces through the queue: an item carries its publisher's trace context, its processing is a span
 * of that trace, and its post-commit actions and {@code handleLocked} run inside it, through the
 * outbox and from server to server; an untraced publisher's item carries nothing.
 */
class TracingTest extends RuntimeTestBase {

  private static final AttributeKey<String> SYSTEM = AttributeKey.stringKey("messaging.system");
  private static final AttributeKey<String> DESTINATION =
      AttributeKey.stringKey("messaging.destination.name");
  private static final AttributeKey<String> OPERATION =
      AttributeKey.stringKey("messaging.operation.type");
  private static final AttributeKey<String> MESSAGE_ID =
      AttributeKey.stringKey("messaging.message.id");
  private static final AttributeKey<String> TUID = AttributeKey.stringKey("dgen.tuid");

  private final InMemorySpanExporter exporter = InMemorySpanExporter.create();
  private final OpenTelemetrySdk otel =
      OpenTelemetrySdk.builder()
          .setTracerProvider(
              SdkTracerProvider.builder()
                  .addSpanProcessor(SimpleSpanProcessor.create(exporter))
                  .build())
          .build();
  private final Tracer tracer = otel.getTracer("test");
  private final Relay relay = new Relay(tracer);

  @Override
  DGen newDGen() {
    return DGen.builder(backend)
        .retryBackoff(Duration.ofMillis(1), Duration.ofMillis(50))
        .openTelemetry(otel)
        .build();
  }

  @AfterEach
  void closeSdk() {
    otel.close();
  }

  /**
   * A server that relays: {@code Forward} casts a {@code Note} to the next server through the
   * outbox, in its transaction; a {@code Note} returns an action that starts a span; {@code Hold}
   * takes the lock, and {@code handleLocked} starts a span and returns such an action.
   */
  static final class Relay implements DGenServer<Long, Relay.Msg> {
    sealed interface Msg {}

    record Forward(String note) implements Msg {}

    record Note(String note) implements Msg {}

    record Ask() implements Msg, Call<Long> {}

    record Hold(String note) implements Msg {}

    private final Tracer tracer;
    volatile @Nullable ServerRef<Msg> next;

    Relay(Tracer tracer) {
      this.tracer = tracer;
    }

    @Override
    public InitResult<Long> init(@Nullable Object arg) {
      return InitResult.ok(0L);
    }

    @Override
    public Result<Long> handleCallTx(TxContext tx, Msg request, From from, Long state) {
      span("handled call");
      return Result.reply(state, state);
    }

    @Override
    public Result<Long> handleCastTx(TxContext tx, Msg message, Long state) {
      if (message instanceof Forward f) {
        next.outbox().cast(tx.transaction(), new Note(f.note()));
        return Result.noReply(state + 1);
      }
      if (message instanceof Note n) {
        return Result.noReply(state + 1, List.of(s -> span("after " + n.note())));
      }
      return message instanceof Hold ? Result.lock(state) : Result.noReply(state);
    }

    @Override
    public Result<Long> handleLocked(DbContext db, Event<Msg> event, Long state) {
      String note = ((Hold) event.message()).note();
      span("locked " + note);
      return Result.noReply(state + 1, List.of(s -> span("after " + note)));
    }

    private void span(String name) {
      tracer.spanBuilder(name).startSpan().end();
    }
  }

  private ProcessRef<Relay.Msg> start(String name, int consumeK) {
    return start(name, b -> b.consumeK(consumeK));
  }

  private ProcessRef<Relay.Msg> start(
      String name, java.util.function.Consumer<StartOptions.Builder> options) {
    StartOptions.Builder b = StartOptions.builder(tenant).name(name);
    options.accept(b);
    return dgen.start(relay, null, b.build());
  }

  private String destination() {
    return String.join("/", tenant.path());
  }

  private List<SpanData> spans() {
    return exporter.getFinishedSpanItems();
  }

  private Optional<SpanData> find(Predicate<SpanData> which) {
    return spans().stream().filter(which).findFirst();
  }

  private SpanData awaitSpan(String name) {
    return await()
        .atMost(Duration.ofSeconds(30))
        .until(() -> find(s -> s.getName().equals(name)), Optional::isPresent)
        .orElseThrow();
  }

  /** The span whose child {@code child} is (one of ours, so it was exported first). */
  private SpanData parentOf(SpanData child) {
    assertThat(child.getParentSpanContext().isValid())
        .as("%s has a parent", child.getName())
        .isTrue();
    return find(s -> s.getSpanId().equals(child.getParentSpanId()))
        .orElseThrow(() -> new AssertionError("no parent exported for " + child.getName()));
  }

  /** Runs {@code publish} inside a new root span, and returns the span. */
  private Span underRoot(Runnable publish) {
    Span root = tracer.spanBuilder("root").startSpan();
    try (Scope s = root.makeCurrent()) {
      publish.run();
    } finally {
      root.end();
    }
    return root;
  }

  private void assertCreate(SpanData span, ServerRef<?> ref) {
    assertThat(span.getName()).isEqualTo("create " + destination());
    assertThat(span.getKind()).isEqualTo(SpanKind.PRODUCER);
    assertThat(span.getAttributes().get(TUID)).isEqualTo(ref.tuid().toString());
  }

  private void assertProcess(SpanData span, String callback, ServerRef<?> ref) {
    assertThat(span.getName()).isEqualTo(callback + " " + destination());
    assertThat(span.getKind()).isEqualTo(SpanKind.CONSUMER);
    assertThat(span.getAttributes().get(SYSTEM)).isEqualTo("dgen");
    assertThat(span.getAttributes().get(DESTINATION)).isEqualTo(destination());
    assertThat(span.getAttributes().get(OPERATION)).isEqualTo("process");
    assertThat(span.getAttributes().get(MESSAGE_ID)).isNotBlank();
    assertThat(span.getAttributes().get(TUID)).isEqualTo(ref.tuid().toString());
  }

  @ParameterizedTest(name = "consumeK={0}")
  @ValueSource(ints = {1, 64})
  void aCast_throughTheOutbox_toAnAction_isOneTrace(int consumeK) {
    ServerRef<Relay.Msg> b = start("b", consumeK);
    relay.next = b;
    ServerRef<Relay.Msg> a = start("a", consumeK);

    Span root = underRoot(() -> a.cast(new Relay.Forward("x")));

    // Walked back from the action: the chain of the attempt that committed.
    SpanData action = awaitSpan("after x");
    SpanData handleB = parentOf(action);
    assertProcess(handleB, "handleCast", b);
    SpanData createB = parentOf(handleB);
    assertCreate(createB, b);
    SpanData handleA = parentOf(createB);
    assertProcess(handleA, "handleCast", a);
    SpanData createA = parentOf(handleA);
    assertCreate(createA, a);
    assertThat(createA.getParentSpanId()).isEqualTo(root.getSpanContext().getSpanId());
    for (SpanData s : List.of(action, handleB, createB, handleA, createA)) {
      assertThat(s.getTraceId()).as(s.getName()).isEqualTo(root.getSpanContext().getTraceId());
    }
    SpanData batchA =
        find(s ->
                s.getName().equals("batch " + destination())
                    && a.tuid().toString().equals(s.getAttributes().get(TUID))
                    && s.getSpanContext().equals(linkedFrom(handleA)))
            .orElse(null);
    if (consumeK == 1) {
      assertThat(handleA.getLinks()).isEmpty();
      assertThat(find(s -> s.getName().startsWith("batch "))).isEmpty();
    } else {
      // the batch is a span of its own, linked to its items' publishers; the item links to it
      assertThat(batchA).isNotNull();
      assertThat(batchA.getLinks())
          .extracting(l -> l.getSpanContext().getSpanId())
          .contains(createA.getSpanId());
    }
  }

  private static io.opentelemetry.api.trace.@Nullable SpanContext linkedFrom(SpanData span) {
    return span.getLinks().isEmpty() ? null : span.getLinks().get(0).getSpanContext();
  }

  @Test
  void aQueuedCall_andATimer_carryThePublishersContext() {
    ServerRef<Relay.Msg> a = start("a", 8); // consumeK > 1: the call is queued, not run inline

    Span root =
        underRoot(
            () -> {
              assertThat(a.<Long>call(new Relay.Ask())).isZero();
              a.castAfter(new Relay.Note("timer"), Duration.ZERO);
            });

    SpanData handleCall = awaitSpan("handleCall " + destination());
    assertProcess(handleCall, "handleCall", a);
    assertThat(parentOf(handleCall).getParentSpanId()).isEqualTo(root.getSpanContext().getSpanId());

    SpanData fired = parentOf(awaitSpan("after timer"));
    assertProcess(fired, "handleCast", a);
    SpanData scheduled = parentOf(fired);
    assertCreate(scheduled, a);
    assertThat(scheduled.getParentSpanId()).isEqualTo(root.getSpanContext().getSpanId());
    assertThat(fired.getTraceId()).isEqualTo(root.getSpanContext().getTraceId());
  }

  @Test
  void anInlineCall_runsInTheCallersTrace_evenWhenItsCallbackRunsOnAWorker() {
    ServerRef<Relay.Msg> a = start("a", 1); // K = 1: the call runs inline, never queued
    // the reads are not in at once: the callback runs on the runtime's executor
    faults().readVersionLatency(Duration.ofMillis(5));

    Span root = underRoot(() -> assertThat(a.<Long>call(new Relay.Ask())).isZero());

    SpanData work = awaitSpan("handled call");
    assertThat(work.getParentSpanId()).isEqualTo(root.getSpanContext().getSpanId());
    assertThat(find(s -> s.getName().startsWith("handleCall "))).isEmpty(); // nothing was queued
  }

  @Test
  void handleLocked_andItsActions_runInTheMessagesTrace() {
    ServerRef<Relay.Msg> a = start("a", 1);

    Span root = underRoot(() -> a.cast(new Relay.Hold("h")));

    SpanData after = awaitSpan("after h");
    SpanData locked = awaitSpan("locked h");
    SpanData handleLocked = parentOf(locked);
    assertProcess(handleLocked, "handleLocked", a);
    assertThat(parentOf(after).getSpanId()).isEqualTo(handleLocked.getSpanId());
    assertThat(parentOf(handleLocked).getParentSpanId())
        .isEqualTo(root.getSpanContext().getSpanId());
    assertThat(locked.getTraceId()).isEqualTo(root.getSpanContext().getTraceId());
  }

  @Test
  void anUntracedPublisher_queuesNoTraceBytes() {
    ServerRef<Relay.Msg> a = start("a", b -> b.consume(false));

    a.cast(new Relay.Note("same")); // no current span
    underRoot(() -> a.cast(new Relay.Note("same")));

    ServerKeys keys = new ServerKeys(tenant.subspace(), Buckets.of(tenant.bucketCount()), a.tuid());
    List<KeyValue> items =
        backend.run(
            (Transaction tx) -> tx.getRange(keys.items().range().begin, keys.items().range().end));
    assertThat(items).hasSize(2);
    Serde serde = new Serde(Serde.defaultMapper());
    byte[] plain = items.get(0).value();
    byte[] traced = items.get(1).value();
    assertThat(Envelope.decode(plain, serde).trace()).isNull();
    assertThat(plain[1] & 64).as("the traced flag").isZero();
    Envelope.Trace trace = Envelope.decode(traced, serde).trace();
    assertThat(trace).isNotNull();
    assertThat(trace.tracestate()).isNull();
    // the same message: the untraced item is shorter by exactly the trace fields
    assertThat(traced.length - plain.length).isEqualTo(trace.traceparent().length() + 2);
    assertThat(find(s -> s.getName().startsWith("create "))).isPresent();
  }

  @Test
  void byDefault_theGlobalOpenTelemetryIsUsedOnceSet_andNeverFixedEarly() {
    GlobalOpenTelemetry.resetForTest();
    try (DGen plain =
        DGen.builder(backend).retryBackoff(Duration.ofMillis(1), Duration.ofMillis(50)).build()) {
      ServerRef<Relay.Msg> a =
          plain.start(
              relay,
              null,
              StartOptions.builder(plain.tenant(tenant.path().toArray(String[]::new)))
                  .name("global")
                  .build());
      underRoot(() -> a.cast(new Relay.Note("before")));
      awaitSpan("after before");
      assertThat(find(s -> s.getName().startsWith("handleCast "))).isEmpty();
      assertThat(GlobalOpenTelemetry.isSet()).as("the runtime fixed the global").isFalse();

      GlobalOpenTelemetry.set(otel);
      Span root = underRoot(() -> a.cast(new Relay.Note("after set")));
      SpanData handle = parentOf(awaitSpan("after after set"));
      assertProcess(handle, "handleCast", a);
      assertThat(handle.getTraceId()).isEqualTo(root.getSpanContext().getTraceId());
    } finally {
      GlobalOpenTelemetry.resetForTest();
    }
  }
}
