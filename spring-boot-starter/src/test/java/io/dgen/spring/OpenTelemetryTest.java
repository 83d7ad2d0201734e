package io.dgen.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dgen.DGen;
import io.dgen.ServerRef;
import io.dgen.StartOptions;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.context.Scope;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/** The context's {@code OpenTelemetry} traces the runtime's messages; without the API, nothing. */
class OpenTelemetryTest {

  private static final ApplicationContextRunner RUNNER =
      new ApplicationContextRunner()
          .withConfiguration(AutoConfigurations.of(DGenAutoConfiguration.class))
          .withPropertyValues("dgen.backend=memory");

  @Test
  void theContextsOpenTelemetry_tracesACastThroughTheQueue() {
    InMemorySpanExporter exporter = InMemorySpanExporter.create();
    OpenTelemetrySdk sdk =
        OpenTelemetrySdk.builder()
            .setTracerProvider(
                SdkTracerProvider.builder()
                    .addSpanProcessor(SimpleSpanProcessor.create(exporter))
                    .build())
            .build();
    RUNNER
        .withBean(OpenTelemetry.class, () -> sdk)
        .run(
            ctx -> {
              DGen dgen = ctx.getBean(DGen.class);
              ServerRef<Tally.Msg> tally =
                  dgen.start(new Tally(), null, StartOptions.builder(dgen.tenant("otel")).build());
              Span request = sdk.getTracer("test").spanBuilder("request").startSpan();
              try (Scope ignored = request.makeCurrent()) {
                tally.cast(new Tally.Add(1));
              } finally {
                request.end();
              }
              String traceId = request.getSpanContext().getTraceId();
              await()
                  .atMost(Duration.ofSeconds(30))
                  .until(
                      () ->
                          exporter.getFinishedSpanItems().stream()
                              .anyMatch(
                                  s ->
                                      s.getName().startsWith("handleCast")
                                          && s.getTraceId().equals(traceId)));
              assertThat(exporter.getFinishedSpanItems())
                  .filteredOn(s -> s.getTraceId().equals(traceId))
                  .extracting(SpanData::getName)
                  .anyMatch(n -> n.startsWith("create"));
            });
  }

  @Test
  void withoutTheApi_theRuntimeStarts_untraced() {
    RUNNER
        .withClassLoader(new FilteredClassLoader("io.opentelemetry"))
        .run(ctx -> assertThat(ctx).hasNotFailed().hasSingleBean(DGen.class));
  }
}
