package io.dgen.benchmarks;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;

/**
 * Counts a runtime's push transactions of plain casts ({@code dgen.push.transactions}): with
 * publisher group commit, concurrent casts share them, so the casts sent no longer tell how many
 * transactions the publishers committed. Give {@link #registry} to the runtime's builder.
 */
final class PushMeter {

  final SimpleMeterRegistry registry = new SimpleMeterRegistry();

  /** Push transactions committed so far. */
  long transactions() {
    Counter c = registry.find("dgen.push.transactions").counter();
    return c == null ? 0 : (long) c.count();
  }
}
