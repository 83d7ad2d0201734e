package io.dgen.benchmarks;

import io.dgen.internal.codec.Envelope;
import io.dgen.internal.observe.RuntimeHooks;
import io.dgen.internal.observe.Tracing;
import java.util.Collections;
import java.util.List;

/**
 * The tracing hooks a message passes through, timed alone in a loop: what the OpenTelemetry API
 * without an SDK adds to each message over no tracing, too small for the end-to-end rows to resolve
 * on a busy machine.
 */
final class TracingHooks {

  private static final int ROUNDS = 5;
  private static final long MESSAGES = 2_000_000;
  private static final List<Envelope.Trace> BATCH = Collections.nCopies(64, null);

  @SuppressWarnings("unused") // keeps the loop's results alive
  private static volatile Object sink;

  private TracingHooks() {}

  /**
   * Nanoseconds per message that the default tracing (the API on the class path, no SDK, the global
   * not set) adds to {@link Tracing#NONE}: a publish's capture, the span around its callback, and a
   * 64th of a batch span. The median of a few alternating rounds.
   */
  static double extraNanosPerMessage() {
    Tracing.Server none = Tracing.NONE.server("bench/hooks", "(\"x\")");
    Tracing.Server api = RuntimeHooks.globalTracing().server("bench/hooks", "(\"x\")");
    loop(none);
    loop(api); // compiled before the rounds
    double[] extra = new double[ROUNDS];
    for (int i = 0; i < ROUNDS; i++) {
      extra[i] = loop(api) - loop(none);
    }
    java.util.Arrays.sort(extra);
    return Math.max(0, extra[ROUNDS / 2]);
  }

  private static double loop(Tracing.Server traces) {
    long t0 = System.nanoTime();
    for (long i = 0; i < MESSAGES; i++) {
      Envelope.Trace publisher = traces.capture();
      Tracing.Span batch = (i & 63) == 0 ? traces.batch(BATCH) : Tracing.Span.NONE;
      try (Tracing.Span span =
          traces.process("handleCast", publisher, batch, () -> "00000000000000000000")) {
        sink = span.around(List.of());
      }
      batch.close();
    }
    return (System.nanoTime() - t0) / (double) MESSAGES;
  }
}
