package io.dgen.testkit;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A clock that moves only when told: the single source of time of a test kit's runtime, both its
 * wall clock (lock ages, timestamps, timers) and its nanosecond ticker (transaction ages).
 * Thread-safe.
 */
public final class ManualClock extends Clock {

  private final AtomicLong nanos;
  private final ZoneId zone;

  /** A clock at {@code start} in UTC. */
  public ManualClock(Instant start) {
    this(new AtomicLong(toNanos(start)), ZoneOffset.UTC);
  }

  private ManualClock(AtomicLong nanos, ZoneId zone) {
    this.nanos = nanos;
    this.zone = zone;
  }

  private static long toNanos(Instant t) {
    return Math.addExact(Math.multiplyExact(t.getEpochSecond(), 1_000_000_000L), t.getNano());
  }

  /**
   * Moves the clock forward.
   *
   * @param by how far; not negative
   * @return the new instant
   * @throws IllegalArgumentException if {@code by} is negative
   */
  public Instant advance(Duration by) {
    Objects.requireNonNull(by, "by must not be null");
    if (by.isNegative()) {
      throw new IllegalArgumentException("a clock cannot go back: advance by " + by);
    }
    nanos.addAndGet(by.toNanos());
    return instant();
  }

  /** The time in nanoseconds since the epoch: the runtime's ticker. */
  public long nanoTime() {
    return nanos.get();
  }

  @Override
  public Instant instant() {
    long n = nanos.get();
    return Instant.ofEpochSecond(
        Math.floorDiv(n, 1_000_000_000L), Math.floorMod(n, 1_000_000_000L));
  }

  @Override
  public long millis() {
    return Math.floorDiv(nanos.get(), 1_000_000L);
  }

  @Override
  public ZoneId getZone() {
    return zone;
  }

  @Override
  public Clock withZone(ZoneId zone) {
    return zone.equals(this.zone) ? this : new ManualClock(nanos, zone);
  }

  @Override
  public String toString() {
    return "ManualClock[" + instant() + "]";
  }
}
