package io.dgen.backend;

import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Makes the ids of {@link Backend#run} calls ({@link Transaction#runId()}): random, and ordered by
 * start time in their most significant bits, so that markers keyed by run id can be swept by age
 * with one range clear.
 *
 * <p>Layout: the most significant 64 bits are the wall-clock milliseconds at the start of the run
 * shifted left by 16, plus 16 random bits; the least significant 64 bits are random.
 */
public final class RunIds {

  private RunIds() {}

  /** A new run id for a run starting now. */
  public static UUID next() {
    ThreadLocalRandom r = ThreadLocalRandom.current();
    return new UUID((System.currentTimeMillis() << 16) | (r.nextInt() & 0xffffL), r.nextLong());
  }

  /**
   * When the run with this id started, by the clock that made the id: the wall clock of the JVM
   * that started the run. Comparing two run ids' start times, or a run id's start time with a
   * duration, uses one clock; comparing it with another clock (for example a runtime's injected
   * one) does not.
   *
   * @param runId an id made by {@link #next()}
   * @return wall-clock milliseconds
   */
  public static long startedAt(UUID runId) {
    return runId.getMostSignificantBits() >>> 16;
  }

  /**
   * The smallest run id of a run that started at or after {@code epochMillis}: every id made
   * earlier sorts below it (as a tuple element or by its most significant bits).
   *
   * @param epochMillis wall-clock milliseconds
   * @return the bound
   */
  public static UUID startingAt(long epochMillis) {
    return new UUID(epochMillis << 16, Long.MIN_VALUE);
  }
}
