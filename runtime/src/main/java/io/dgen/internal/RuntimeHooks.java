package io.dgen.internal;

/**
 * The operability options of one runtime, apart from its core settings: whether processes consume
 * in the background, where metrics go, and what traces.
 *
 * @param backgroundConsumers false for the test kit: processes start without a consume loop and
 *     their queues are run by {@link ServerProcess#drainInCaller} only
 * @param metrics where the runtime's meters go; {@link Metrics#NONE} by default
 * @param tracing what traces messages through the queues; {@link Tracing#global()} by default
 */
public record RuntimeHooks(boolean backgroundConsumers, Metrics metrics, Tracing tracing) {

  /** The defaults: background consumers, no metrics, the global OpenTelemetry's tracing. */
  public static final RuntimeHooks DEFAULT = new RuntimeHooks(true, Metrics.NONE, Tracing.global());
}
