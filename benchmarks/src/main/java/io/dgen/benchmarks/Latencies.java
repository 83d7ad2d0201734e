package io.dgen.benchmarks;

import java.util.Arrays;

/**
 * Records latencies in nanoseconds and reports nearest-rank percentiles from a sorted copy. Plain
 * and exact: every sample is kept (a run records at most a few hundred thousand). Not thread-safe;
 * use one per recording thread and {@link #addAll} them.
 */
final class Latencies {

  private long[] samples = new long[1024];
  private int size;

  void add(long nanos) {
    if (size == samples.length) {
      samples = Arrays.copyOf(samples, size * 2);
    }
    samples[size++] = nanos;
  }

  void addAll(Latencies other) {
    for (int i = 0; i < other.size; i++) {
      add(other.samples[i]);
    }
  }

  int count() {
    return size;
  }

  /** The summary of what was recorded; percentiles are NaN when nothing was. */
  Summary summarize() {
    if (size == 0) {
      return new Summary(0, Double.NaN, Double.NaN, Double.NaN);
    }
    long[] sorted = Arrays.copyOf(samples, size);
    Arrays.sort(sorted);
    return new Summary(
        size, rank(sorted, 0.50) / 1e3, rank(sorted, 0.99) / 1e3, sorted[size - 1] / 1e3);
  }

  /**
   * The nearest-rank percentile: the smallest sample with at least {@code p} of them at or below.
   */
  private static long rank(long[] sorted, double p) {
    int index = (int) Math.ceil(p * sorted.length) - 1;
    return sorted[Math.max(0, Math.min(sorted.length - 1, index))];
  }

  /** Count and percentiles in microseconds. */
  record Summary(int count, double p50Micros, double p99Micros, double maxMicros) {}
}
