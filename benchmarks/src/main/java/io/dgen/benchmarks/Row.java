package io.dgen.benchmarks;

import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * One scenario's result: timings, and the backend's counters over the measured interval.
 *
 * @param id a stable name (ratios, targets and tests find rows by it)
 * @param label what the table shows
 * @param messages messages (or operations) in the measured interval
 * @param seconds the measured interval
 * @param opsPerSecond messages per second: the median of the measured rounds where there were
 *     several, else {@code messages / seconds}
 * @param p50Micros median latency of one operation, NaN where not meaningful
 * @param p99Micros 99th percentile latency, NaN where not meaningful
 * @param cost the backend's counters over the interval; null for baselines without DGen
 * @param clientTransactions writing transactions committed on the publishers' or callers' side
 *     (pushes, inline calls), known by construction; the rest of {@code
 *     cost.transactionsCommitted()} are the consumers'. Negative when not known.
 * @param cpuNanos CPU time of the whole process over the interval, every thread included; negative
 *     when not known
 * @param metrics scenario-specific figures (threads, heap)
 * @param note a short remark for the table
 */
record Row(
    String id,
    String label,
    long messages,
    double seconds,
    double opsPerSecond,
    double p50Micros,
    double p99Micros,
    @Nullable Cost cost,
    long clientTransactions,
    long cpuNanos,
    Map<String, Double> metrics,
    String note) {

  /** Writing transactions committed per message (pushes, consumer batches, replies, …). */
  double commitsPerMessage() {
    return cost == null ? Double.NaN : (double) cost.transactionsCommitted() / messages;
  }

  /** The consumers' writing transactions per message: {@code 1/K} for a full batch of K. */
  double consumerTransactionsPerMessage() {
    if (cost == null || clientTransactions < 0) {
      return Double.NaN;
    }
    return (double) (cost.transactionsCommitted() - clientTransactions) / messages;
  }

  /**
   * Reads per message: single-key reads plus range reads that reached the store. Reads a
   * transaction issues together (futures joined later) count one each here but share one network
   * round trip on FoundationDB, so this is an upper bound on sequential round trips.
   */
  double readsPerMessage() {
    return cost == null ? Double.NaN : (double) (cost.keysRead() + cost.rangesRead()) / messages;
  }

  /** CPU microseconds per message, all threads of the process together. */
  double cpuMicrosPerMessage() {
    return cpuNanos < 0 ? Double.NaN : cpuNanos / 1e3 / messages;
  }

  /**
   * CPU microseconds per message net of the server's own callback: the least round's CPU less the
   * callback's CPU run alone in the same run; NaN for rows that measure neither.
   */
  double netCpuMicrosPerMessage() {
    return metric("cpuLeastMicros") - metric("callbackMicros");
  }

  double bytesWrittenPerMessage() {
    return cost == null ? Double.NaN : (double) cost.bytesWritten() / messages;
  }

  double metric(String name) {
    Double v = metrics.get(name);
    return v == null ? Double.NaN : v;
  }
}
