package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;

import com.apple.foundationdb.subspace.Subspace;
import com.apple.foundationdb.tuple.Tuple;
import io.dgen.TestServer.Add;
import io.dgen.TestServer.AddAndGet;
import io.dgen.TestServer.Msg;
import io.dgen.backend.KeyValue;
import io.dgen.backend.RunIds;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * Commit markers older than ten minutes are swept by any writing transaction of a process, at most
 * once a minute; consumer batches also sweep abandoned reply slots.
 */
class SweepTest extends RuntimeTestBase {

  private final ManualTestClock clock = new ManualTestClock(Instant.now());

  /** The runtime's ticker, which spaces a process's sweeps: moved only by the test. */
  private final AtomicLong ticks = new AtomicLong(System.nanoTime());

  @Override
  DGen newDGen() {
    return DGen.builder(backend)
        .clock(clock)
        .ticker(ticks::get)
        .retryBackoff(Duration.ofMillis(1), Duration.ofMillis(50))
        .build();
  }

  private List<KeyValue> rows(Subspace space) {
    return backend.run(tx -> tx.getRange(space.range().begin, space.range().end));
  }

  /** A commit marker as a run that started {@code age} ago (by the backend's clock) leaves it. */
  private static byte[] markerOfARunStarted(Subspace markers, Duration age) {
    return markers.pack(Tuple.from(RunIds.startingAt(System.currentTimeMillis() - age.toMillis())));
  }

  /**
   * A commit marker slot as a run that started {@code age} ago (by the backend's clock) first took
   * it: {@code ServerKeys.markerSlot}'s layout.
   */
  private static byte[] slotFirstTaken(Subspace markers, Duration age) {
    long msb =
        RunIds.startingAt(System.currentTimeMillis() - age.toMillis()).getMostSignificantBits();
    return markers.pack(Tuple.from(-msb, 7L));
  }

  private void put(byte[]... keys) {
    backend.run(
        tx -> {
          for (byte[] k : keys) {
            tx.set(k, new byte[0]);
          }
          return null;
        });
  }

  @Test
  void batch_sweepsOldMarkersAndAbandonedSlots_andKeepsLiveOnes() {
    ServerRef<Msg> publisher = start(b -> b.consume(false));
    Subspace root = tenant.subspace().subspace(publisher.tuid());
    Subspace markers = root.subspace(Tuple.from("o"));
    Subspace calls = root.subspace(Tuple.from("c"));
    long nowSeconds = clock.instant().getEpochSecond();
    // a caller that died two hours ago, and one that is waiting now
    byte[] abandoned = calls.pack(Tuple.from(nowSeconds - 7_200, "dead", "t", 0L));
    byte[] live = calls.pack(Tuple.from(nowSeconds + 660, "live", "t", 0L));
    // a run that started eleven minutes ago, a marker slot first taken then, and one taken since
    byte[] oldMarker = markerOfARunStarted(markers, Duration.ofMinutes(11));
    byte[] oldSlot = slotFirstTaken(markers, Duration.ofMinutes(11));
    byte[] recentSlot = slotFirstTaken(markers, Duration.ofMinutes(9));
    put(abandoned, live, oldMarker, oldSlot, recentSlot);
    publisher.cast(new Add(1));
    List<byte[]> fresh = keys(markers);
    // the old ones, and the slot that the start's state write and then the push took
    assertThat(fresh).hasSize(4);

    ServerRef<Msg> consumer = start();
    awaitTotal(consumer, 1);

    // the old marker and slot and the abandoned reply slot are swept; live ones stay
    assertThat(keys(markers))
        .doesNotContain(oldMarker, oldSlot)
        .contains(recentSlot)
        .containsAll(
            fresh.stream()
                .filter(k -> !Arrays.equals(k, oldMarker) && !Arrays.equals(k, oldSlot))
                .toList());
    assertThat(keys(calls)).containsExactly(live);
  }

  @Test
  void markersOfAServerUsedOnlyThroughInlineCallsAndPriorityMessages_areSwept_onceAMinute() {
    ServerRef<Msg> ref = start(); // consumeK 1: calls run inline, nothing is ever queued
    Subspace markers = tenant.subspace().subspace(ref.tuid()).subspace(Tuple.from("o"));
    byte[] oldMarker = markerOfARunStarted(markers, Duration.ofMinutes(11));
    put(oldMarker);
    ref.<Long>call(new AddAndGet(1));
    ref.priorityCast(new Add(2));
    ref.info("tick");
    assertThat(keys(markers)).contains(oldMarker); // the start swept, a minute has not passed

    ticks.addAndGet(TimeUnit.MINUTES.toNanos(1));
    ref.priorityCast(new Add(4));
    // start, 3 calls and this one took one marker slot in turn
    assertThat(keys(markers)).doesNotContain(oldMarker).hasSize(1);
    assertThat(total(ref)).isEqualTo(107);
  }

  /**
   * A reply slot is named by its caller's clock and swept by a consumer's: a caller whose clock is
   * five minutes behind the consumer's, waiting for an hour-long call that has a minute left, must
   * keep its slot (the sweep tolerates ten minutes of skew); a slot abandoned two hours ago goes.
   */
  @Test
  void aSlotOfACallerWhoseClockIsMinutesBehind_isNotSweptWhileItsCallMayWait() {
    ServerRef<Msg> publisher = start(b -> b.consume(false));
    Subspace calls = tenant.subspace().subspace(publisher.tuid()).subspace(Tuple.from("c"));
    long now = clock.instant().getEpochSecond();
    byte[] behind = calls.pack(Tuple.from(now - 59 * 60 - 5 * 60, "behind", "t", 0L));
    byte[] abandoned = calls.pack(Tuple.from(now - 7_200, "dead", "t", 0L));
    put(behind, abandoned);
    publisher.cast(new Add(1));

    ServerRef<Msg> consumer = start();
    awaitTotal(consumer, 1);

    assertThat(keys(calls)).containsExactly(behind);
  }

  /** A runtime compares its clock with the backend's when it is built, and says how far apart. */
  @Test
  void aRuntime_measuresHowFarItsClockIsFromTheBackends() {
    try (DGen ahead =
            DGen.builder(backend)
                .clock(new ManualTestClock(Instant.now().plus(Duration.ofMinutes(5))))
                .build();
        DGen systemClock = DGen.builder(backend).build()) {
      org.awaitility.Awaitility.await()
          .atMost(Duration.ofSeconds(30))
          .until(
              () ->
                  ahead.core().clockSkewMillis().isPresent()
                      && systemClock.core().clockSkewMillis().isPresent());
      long tolerance = Duration.ofSeconds(5).toMillis(); // the cluster's clock is to the second
      assertThat(ahead.core().clockSkewMillis().getAsLong())
          .isBetween(
              Duration.ofMinutes(5).toMillis() - tolerance,
              Duration.ofMinutes(5).toMillis() + tolerance);
      assertThat(Math.abs(systemClock.core().clockSkewMillis().getAsLong())).isLessThan(tolerance);
    }
  }

  @Test
  void sweep_keepsFreshMarkers_whenTheRuntimeClockIsAhead() {
    clock.advance(Duration.ofHours(1));
    ServerRef<Msg> publisher = start(b -> b.consume(false));
    Subspace markers = tenant.subspace().subspace(publisher.tuid()).subspace(Tuple.from("o"));
    publisher.cast(new Add(1));
    List<byte[]> fresh = keys(markers);
    assertThat(fresh).hasSize(1); // the slot the start and the push took in turn

    ServerRef<Msg> consumer = start();
    awaitTotal(consumer, 1);

    // a marker swept at once would let a push retried after 1021 be queued twice
    assertThat(keys(markers)).containsAll(fresh);
  }

  @Test
  void sweep_clearsOldMarkers_whenTheRuntimeClockIsBehind() {
    clock.advance(Duration.ofHours(-1));
    ServerRef<Msg> publisher = start(b -> b.consume(false));
    Subspace markers = tenant.subspace().subspace(publisher.tuid()).subspace(Tuple.from("o"));
    byte[] oldMarker = markerOfARunStarted(markers, Duration.ofMinutes(11));
    put(oldMarker);
    publisher.cast(new Add(1));

    ServerRef<Msg> consumer = start();
    awaitTotal(consumer, 1);

    assertThat(keys(markers)).doesNotContain(oldMarker).isNotEmpty();
  }

  private List<byte[]> keys(Subspace space) {
    return rows(space).stream().map(KeyValue::key).toList();
  }
}
