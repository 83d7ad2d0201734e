package io.dgen.internal;

/**
 * The runtime's meters, as hooks: the runtime calls them and knows no metrics library. The default
 * {@link #NONE} does nothing; {@code MicrometerMetrics} records them in a Micrometer registry.
 */
public interface Metrics {

  /** Records nothing. */
  Metrics NONE = new Metrics() {};
}
