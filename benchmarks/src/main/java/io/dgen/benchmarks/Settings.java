package io.dgen.benchmarks;

import java.time.Duration;

/**
 * Sizes and durations of one run.
 *
 * @param mode what the header calls the run
 * @param jitWarmup how long each of the JIT warm-up runs lasts (zero: none); they run the cast and
 *     call paths once before any scenario is measured, so that the first scenarios are not measured
 *     on code the JIT has not compiled yet
 * @param warmup how long each timed scenario runs before it is measured
 * @param measure how long each timed scenario is measured (publishers stop then; the time to apply
 *     what they published is included)
 * @param rounds throughput scenarios split {@code measure} into this many rounds and report the
 *     median round, so that one stall on a shared machine does not decide the figure
 * @param publishers publisher threads of the cast scenarios
 * @param castBatch messages per {@code castAll}
 * @param manyServers servers of the many-servers scenario
 * @param idleServers servers of the idle-servers scenario
 * @param wakeSamples idle servers woken one at a time to time a wake-up
 * @param wideFields fields of the wide state
 * @param markerCasts K=1 casts of the commit-marker scenario
 * @param throughput sizes of the throughput-at-latency scenarios
 * @param recurringRun how long the recurring timer of {@code timers-every} runs on FoundationDB
 *     (real time; at most 10 s on the memory backend)
 */
record Settings(
    String mode,
    Duration jitWarmup,
    Duration warmup,
    Duration measure,
    int rounds,
    int publishers,
    int castBatch,
    int manyServers,
    int idleServers,
    int wakeSamples,
    int wideFields,
    int markerCasts,
    Throughput throughput,
    Duration recurringRun) {

  /**
   * Sizes of the scenarios of the throughput issue (#13); {@link #standard()} has the issue's.
   *
   * @param drainServersK16 servers of the K=16 drain (100)
   * @param drainPerServerK16 casts queued per server for it
   * @param drainServersK1 servers of the K=1 drain (1,000)
   * @param drainPerServerK1 casts queued per server for it
   * @param idleCpuServers idle servers whose CPU is measured (30,000)
   * @param idleManyServers idle servers started in one JVM (100,000)
   * @param callServers servers of the concurrent calls (100)
   * @param concurrentCalls calls in flight at once (1,000)
   */
  record Throughput(
      int drainServersK16,
      int drainPerServerK16,
      int drainServersK1,
      int drainPerServerK1,
      int idleCpuServers,
      int idleManyServers,
      int callServers,
      int concurrentCalls) {}

  /** The default run: about a minute on two cores. */
  static Settings standard() {
    return new Settings(
        "default",
        Duration.ofMillis(300),
        Duration.ofSeconds(1),
        Duration.ofSeconds(3),
        3,
        4,
        16,
        1_000,
        10_000,
        300,
        1_000,
        1_000_000,
        new Throughput(100, 1_500, 1_000, 60, 30_000, 100_000, 100, 1_000),
        Duration.ofSeconds(60));
  }

  /** The settings of one JIT warm-up run: {@link #jitWarmup} of warm-up and of measurement. */
  Settings forJitWarmup() {
    return new Settings(
        mode + " (JIT warm-up)",
        Duration.ZERO,
        jitWarmup,
        jitWarmup,
        1,
        publishers,
        castBatch,
        manyServers,
        idleServers,
        wakeSamples,
        wideFields,
        markerCasts,
        throughput,
        recurringRun);
  }

  /** These settings without the JIT warm-up. */
  Settings withoutJitWarmup() {
    return new Settings(
        mode,
        Duration.ZERO,
        warmup,
        measure,
        rounds,
        publishers,
        castBatch,
        manyServers,
        idleServers,
        wakeSamples,
        wideFields,
        markerCasts,
        throughput,
        recurringRun);
  }

  /** {@code --quick}: the same scenarios, shorter, for a sanity check. */
  static Settings quick() {
    return new Settings(
        "quick",
        Duration.ofMillis(200),
        Duration.ofMillis(200),
        Duration.ofMillis(600),
        2,
        4,
        16,
        1_000,
        10_000,
        100,
        1_000,
        100_000,
        new Throughput(100, 500, 1_000, 20, 30_000, 30_000, 100, 1_000),
        Duration.ofSeconds(5));
  }

  /** Tiny sizes for the smoke test: every scenario runs, nothing is measured seriously. */
  static Settings tiny() {
    return new Settings(
        "tiny",
        Duration.ZERO,
        Duration.ofMillis(50),
        Duration.ofMillis(200),
        1,
        4,
        16,
        50,
        300,
        20,
        1_000,
        2_000,
        new Throughput(10, 40, 20, 5, 300, 500, 5, 50),
        Duration.ofSeconds(2));
  }
}
