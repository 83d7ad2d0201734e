package io.dgen.internal;

/**
 * The operability options of one runtime, apart from its core settings: whether processes consume
 * in the background, and where metrics go.
 *
 * @param backgroundConsumers false for the test kit: processes start without a consume loop and
 *     their queues are run by {@link ServerProcess#drainInCaller} only
 * @param metrics where the runtime's meters go; {@link Metrics#NONE} by default
 */
public record RuntimeHooks(boolean backgroundConsumers, Metrics metrics) {

  /** The defaults: background consumers, no metrics. */
  public static final RuntimeHooks DEFAULT = new RuntimeHooks(true, Metrics.NONE);
}
