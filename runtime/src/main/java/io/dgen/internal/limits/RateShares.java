package io.dgen.internal.limits;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * How a rate limit's rate is split between the live runtimes that enforce it: a weighted max-min
 * fair split (water-filling) of their wants. A runtime that is not throttled wants what it took
 * recently, doubled, plus a small floor (so that an idle runtime can start); a throttled one (its
 * servers waited for permits) wants without bound, weighted by how many of its servers waited. The
 * shares always add up to the rate: what nobody wants is split equally.
 *
 * <p>Pure functions; no state.
 */
final class RateShares {

  /** What all the floors together take of the rate, at most. */
  static final double FLOOR = 0.10;

  /**
   * A runtime's demand as it publishes it: {@code hungry} if its servers waited for permits, then
   * with {@code weight} servers waiting at most; else it took {@code perSecond} permits/s lately.
   */
  record Demand(boolean hungry, int weight, double perSecond) {}

  private RateShares() {}

  /** The share of {@code rate} (permits/s) of each of {@code members}, which is not empty. */
  static Map<UUID, Double> split(double rate, Map<UUID, Demand> members) {
    double floor = rate * FLOOR / members.size();
    record Want(UUID id, double want, double weight) {}
    List<Want> wants = new ArrayList<>();
    for (var e : members.entrySet()) {
      Demand d = e.getValue();
      wants.add(
          d.hungry()
              ? new Want(e.getKey(), Double.POSITIVE_INFINITY, Math.max(1, d.weight()))
              : new Want(e.getKey(), floor + 2 * d.perSecond(), 1));
    }
    wants.sort(Comparator.comparingDouble(w -> w.want() / w.weight()));
    Map<UUID, Double> shares = new HashMap<>();
    double left = rate;
    double weights = wants.stream().mapToDouble(Want::weight).sum();
    for (Want w : wants) {
      double fair = left * w.weight() / weights;
      double share = Math.min(w.want(), fair);
      shares.put(w.id(), share);
      left -= share;
      weights -= w.weight();
    }
    if (left > 0) {
      double extra = left / members.size();
      shares.replaceAll((id, s) -> s + extra);
    }
    return shares;
  }
}
