package io.dgen;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A wall clock that moves only when a test moves it (either way: a runtime whose clock is behind is
 * a case too), to the microsecond, in UTC. Thread-safe.
 */
final class ManualTestClock extends Clock {

  private final AtomicLong micros;

  ManualTestClock(Instant start) {
    this.micros =
        new AtomicLong(
            Math.multiplyExact(start.getEpochSecond(), 1_000_000L) + start.getNano() / 1000);
  }

  /** Moves the clock by {@code d}, which may be negative. */
  void advance(Duration d) {
    micros.addAndGet(d.toNanos() / 1000);
  }

  @Override
  public Instant instant() {
    long m = micros.get();
    return Instant.ofEpochSecond(Math.floorDiv(m, 1_000_000), Math.floorMod(m, 1_000_000) * 1000);
  }

  @Override
  public ZoneId getZone() {
    return ZoneOffset.UTC;
  }

  @Override
  public Clock withZone(ZoneId zone) {
    throw new UnsupportedOperationException();
  }
}
