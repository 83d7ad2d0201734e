package io.dgen.chaos;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * A client's DGen meters, journaled every two seconds as one {@code M} line of cumulative counts
 * (transaction retries by error code, lock busts, callback failures, dead letters), so that a
 * client killed with {@code SIGKILL} leaves its counts up to its last two seconds. The report adds
 * up the last line of each journal.
 */
final class ClientMetrics implements AutoCloseable {

  private final MeterRegistry registry = new SimpleMeterRegistry();
  private final ScheduledExecutorService timer =
      Executors.newSingleThreadScheduledExecutor(
          r -> {
            Thread t = new Thread(r, "chaos-metrics");
            t.setDaemon(true);
            return t;
          });
  private final Journal journal;
  private final java.util.concurrent.atomic.AtomicBoolean closed =
      new java.util.concurrent.atomic.AtomicBoolean();

  ClientMetrics(Journal journal) {
    this.journal = journal;
    timer.scheduleAtFixedRate(this::record, 2, 2, TimeUnit.SECONDS);
  }

  /** The registry to give the runtime ({@code DGen.Builder.meterRegistry}). */
  MeterRegistry registry() {
    return registry;
  }

  /** Journals the counts now, and stops. Idempotent. */
  @Override
  public void close() {
    if (closed.compareAndSet(false, true)) {
      timer.shutdownNow();
      record();
    }
  }

  private void record() {
    Map<String, Long> counts = new TreeMap<>();
    for (Counter c : registry.find("dgen.transaction.retries").counters()) {
      counts.merge("retried after " + c.getId().getTag("code"), (long) c.count(), Long::sum);
    }
    count(counts, "dgen.lock.busts", "lock busts");
    count(counts, "dgen.messages.failed", "callback failures");
    count(counts, "dgen.dead.letters", "dead letters (runtime)");
    StringBuilder line = new StringBuilder();
    counts.forEach(
        (k, v) ->
            line.append(line.length() == 0 ? "" : ",")
                .append(k.replace(' ', '_'))
                .append('=')
                .append(v));
    journal.metrics(line.toString());
  }

  private void count(Map<String, Long> counts, String meter, String name) {
    long n = (long) registry.find(meter).counters().stream().mapToDouble(Counter::count).sum();
    counts.put(name, n);
  }

  /** The counts of one {@code M} line. */
  static Map<String, Long> parse(Journal.Line line) {
    Map<String, Long> counts = new TreeMap<>();
    for (String pair : line.field(0).split(",")) {
      int eq = pair.indexOf('=');
      if (eq > 0) {
        counts.put(pair.substring(0, eq).replace('_', ' '), Long.parseLong(pair.substring(eq + 1)));
      }
    }
    return counts;
  }
}
