package io.dgen.chaos;

import io.dgen.chaos.FaultSchedule.Fault;
import io.dgen.chaos.FaultSchedule.Kind;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;

/**
 * How long no DGen commit succeeded around each fault, from the times the clients saw their
 * operations acknowledged (every {@code R ... OK} line of every journal, the probes' among them).
 *
 * <p>The outage of a fault's <b>kill</b> is the longest stretch, starting at or after the kill and
 * before the restart, between two acknowledgements (a stretch that starts before the restart and
 * ends after it counts whole); that of its <b>restart</b> is the same from the restart until the
 * next fault (or the end of the workload). A fault without a restart (a coordinator moved) has one
 * outage, from the change to the next fault, reported as its kill. FoundationDB may recover twice
 * per fault: once when the process dies, and once when it is back and the cluster controller moves
 * roles to it again.
 */
final class Recoveries {

  /** Which half of a fault an outage follows. */
  enum Phase {
    KILL,
    RESTART
  }

  /** The outage after one half of one fault, in milliseconds. */
  record Outage(Fault fault, Phase phase, long millis) {}

  private static final long SLICE = 3_000;

  private final long[] acknowledged;

  /**
   * @param acknowledgements the epoch millis of every acknowledged operation, in any order
   */
  Recoveries(long[] acknowledgements) {
    this.acknowledged = acknowledgements.clone();
    Arrays.sort(this.acknowledged);
  }

  /** The outages of every fault, kill and restart; the workload ended at {@code end}. */
  List<Outage> outages(List<Fault> faults, long end) {
    List<Outage> out = new ArrayList<>();
    for (int i = 0; i < faults.size(); i++) {
      Fault f = faults.get(i);
      long next = i + 1 < faults.size() ? faults.get(i + 1).killedAt() : end;
      if (f.kind().restarts()) {
        out.add(new Outage(f, Phase.KILL, longestGap(f.killedAt(), f.restartedAt())));
        out.add(new Outage(f, Phase.RESTART, longestGap(f.restartedAt(), next)));
      } else {
        out.add(new Outage(f, Phase.KILL, longestGap(f.killedAt(), next)));
      }
    }
    return out;
  }

  /**
   * The longest stretch of {@code [from, to)} without an acknowledgement: from {@code from} (or an
   * acknowledgement after it) to the next acknowledgement or {@code to}, whichever comes first. A
   * stretch that runs on past {@code to} is cut there: what follows belongs to the next fault's
   * window, which starts at its kill.
   */
  long longestGap(long from, long to) {
    long longest = 0;
    long previous = from;
    int i = firstAfter(from);
    while (previous < to) {
      long next = i < acknowledged.length ? Math.min(acknowledged[i], to) : to;
      longest = Math.max(longest, next - previous);
      previous = next;
      i++;
    }
    return longest;
  }

  /**
   * The noise floor: the longest stretch without an acknowledgement in each 3-second slice of the
   * run that no fault touches (from 3 s after one fault's recovery to the next fault), so that an
   * outage can be told from the gaps a loaded machine makes anyway.
   *
   * @return the slices' longest stretches, sorted
   */
  long[] quiet(List<Fault> faults, long start, long end) {
    List<Long> slices = new ArrayList<>();
    long from = start + SLICE;
    for (int i = 0; i <= faults.size(); i++) {
      long to = i < faults.size() ? faults.get(i).killedAt() : end;
      for (long t = from; t + SLICE <= to; t += SLICE) {
        slices.add(longestGap(t, t + SLICE));
      }
      if (i < faults.size()) {
        from = faults.get(i).recoveredAt() + SLICE;
      }
    }
    return slices.stream().mapToLong(Long::longValue).sorted().toArray();
  }

  /** The p50 and p99 (nearest rank) of a sorted sample, 0 for none. */
  static long[] p50p99(long[] sorted) {
    return sorted.length == 0
        ? new long[] {0, 0}
        : new long[] {rank(sorted, 0.50), rank(sorted, 0.99)};
  }

  /** The p50 and p99 (nearest rank) of each kind's outages of one phase, with the sample count. */
  static Map<Kind, long[]> percentiles(List<Outage> outages, Phase phase) {
    Map<Kind, long[]> out = new EnumMap<>(Kind.class);
    for (Kind kind : Kind.values()) {
      long[] sample =
          outages.stream()
              .filter(o -> o.phase() == phase && o.fault().kind() == kind)
              .mapToLong(Outage::millis)
              .sorted()
              .toArray();
      if (sample.length > 0) {
        out.put(
            kind,
            new long[] {
              rank(sample, 0.50), rank(sample, 0.99), sample[sample.length - 1], sample.length
            });
      }
    }
    return out;
  }

  private static long rank(long[] sorted, double p) {
    int index = (int) Math.ceil(p * sorted.length) - 1;
    return sorted[Math.max(0, Math.min(sorted.length - 1, index))];
  }

  private int firstAfter(long t) {
    int i = Arrays.binarySearch(acknowledged, t + 1);
    if (i < 0) {
      return -i - 1;
    }
    while (i > 0 && acknowledged[i - 1] > t) {
      i--;
    }
    return i;
  }
}
