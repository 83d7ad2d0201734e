package io.dgen.cli.ui;

import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.TreeMap;
import org.jspecify.annotations.Nullable;

/**
 * Turns commit versions into ages. A queue item's key holds the commit version of the transaction
 * that queued it, not a time; this clock maps versions to times from what the dashboard saw itself:
 * each of its reads records its read version with the wall time just before and just after it.
 *
 * <ul>
 *   <li>With a known rate ({@code versionsPerSecond > 0}: FoundationDB advances about a million
 *       versions a second), an age is estimated from the version distance to the latest sample:
 *       {@code ≈ 3 min}. Recoveries make versions jump ahead, so such an age may be too high.
 *   <li>Without one (the memory and embedded backends count commits), an age is bracketed: an item
 *       whose version is at most a sample's was queued before that sample's read ended, and one
 *       whose version is above a sample's was queued after that read began. An item older than the
 *       dashboard's first read shows only its lower bound ({@code ≥ 5 min}).
 * </ul>
 *
 * <p>Thread-safe. Keeps at most {@value #MAX_SAMPLES} samples, at least a second apart, dropping
 * every other old one when full (older ages get coarser).
 */
final class VersionClock {

  static final int MAX_SAMPLES = 4096;

  private record Sample(long version, Instant before, Instant after) {}

  /** An age: at least {@code low}, at most {@code high} (null: unknown), or about {@code low}. */
  record Age(Duration low, @Nullable Duration high, boolean estimate) {
    String text() {
      if (estimate) {
        return "≈ " + format(low);
      }
      if (high == null) {
        return "≥ " + format(low);
      }
      String a = format(low);
      String b = format(high);
      if (a.equals(b)) {
        return a;
      }
      return low.isZero() ? "≤ " + b : a + " – " + b;
    }

    /** The bound a sort would use: the estimate, or the lower bound. */
    Duration sortKey() {
      return low;
    }
  }

  private final long versionsPerSecond;
  private final TreeMap<Long, Sample> samples = new TreeMap<>();

  /**
   * @param versionsPerSecond the backend's version rate, or 0 if its versions do not follow time
   */
  VersionClock(long versionsPerSecond) {
    this.versionsPerSecond = versionsPerSecond;
  }

  /**
   * Records that a read at {@code version} began after {@code before} and ended before {@code
   * after}.
   */
  synchronized void record(long version, Instant before, Instant after) {
    Map.Entry<Long, Sample> last = samples.lastEntry();
    if (last != null
        && (version <= last.getKey()
            || Duration.between(last.getValue().after(), after).compareTo(Duration.ofSeconds(1))
                < 0)) {
      return;
    }
    samples.put(version, new Sample(version, before, after));
    if (samples.size() > MAX_SAMPLES) {
      int i = 0;
      var it = samples.entrySet().iterator();
      while (it.hasNext() && i < MAX_SAMPLES / 2) {
        it.next();
        if (i++ % 2 == 1) {
          it.remove();
        }
      }
    }
  }

  /**
   * The age, at {@code now}, of something committed at {@code version}; null if nothing was sampled
   * yet.
   */
  synchronized @Nullable Age age(long version, Instant now) {
    if (samples.isEmpty()) {
      return null;
    }
    if (versionsPerSecond > 0) {
      Sample s = samples.lastEntry().getValue();
      long micros = (s.version() - version) * 1_000_000 / versionsPerSecond;
      Duration d = Duration.ofNanos(micros * 1000).plus(Duration.between(s.after(), now));
      return new Age(d.isNegative() ? Duration.ZERO : d, null, true);
    }
    Map.Entry<Long, Sample> ceiling = samples.ceilingEntry(version);
    Map.Entry<Long, Sample> floor = samples.lowerEntry(version);
    Duration low =
        ceiling == null
            ? Duration.ZERO
            : nonNegative(Duration.between(ceiling.getValue().after(), now));
    Duration high =
        floor == null ? null : nonNegative(Duration.between(floor.getValue().before(), now));
    return new Age(low, high, false);
  }

  private static Duration nonNegative(Duration d) {
    return d.isNegative() ? Duration.ZERO : d;
  }

  /** {@code 12 s}, {@code 3 min}, {@code 2 h}, {@code 4 d}. */
  static String format(Duration d) {
    long s = d.toSeconds();
    if (s < 120) {
      return s + " s";
    }
    if (s < 2 * 3600) {
      return s / 60 + " min";
    }
    if (s < 2 * 86400) {
      return s / 3600 + " h";
    }
    return s / 86400 + " d";
  }
}
