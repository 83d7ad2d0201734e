package io.dgen;

import com.apple.foundationdb.tuple.ByteArrayUtil;
import com.apple.foundationdb.tuple.Tuple;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;

/**
 * What the timer tests share: runtimes on one manual clock starting at {@link #T0}, extra runtimes
 * closed after the test, moving the clock and telling the runtimes, and a raw count of the tenant's
 * pending timers.
 */
abstract class TimerTestBase extends RuntimeTestBase {

  static final Instant T0 = Instant.parse("2026-12-01T12:00:00Z");

  final ManualTestClock clock = new ManualTestClock(T0);
  final List<DGen> extra = new ArrayList<>();

  @Override
  DGen newDGen() {
    return DGen.builder(backend)
        .clock(clock)
        .retryBackoff(Duration.ofMillis(1), Duration.ofMillis(50))
        .build();
  }

  @AfterEach
  void closeExtra() {
    extra.forEach(DGen::close);
  }

  /** Another runtime on the same backend and clock, closed after the test. */
  DGen another() {
    DGen d = newDGen();
    extra.add(d);
    return d;
  }

  /** Moves the clock by {@code d} and tells this test's runtime and every one given. */
  void advance(Duration d, DGen... runtimes) {
    clock.advance(d);
    dgen.clockAdvanced();
    for (DGen r : runtimes) {
      r.clockAdvanced();
    }
  }

  /** The tenant's timer index entries in every bucket (FF (7, bucket, ...)), read raw. */
  long pendingTimers() {
    byte[] prefix = ByteArrayUtil.join(tenant.subspace().getKey(), new byte[] {(byte) 0xFF});
    byte[] begin = ByteArrayUtil.join(prefix, Tuple.from(7L).pack());
    byte[] end = ByteArrayUtil.strinc(begin);
    return backend.run(tx -> tx.getRange(begin, end, 100_000, false).size());
  }
}
