package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;

import com.apple.foundationdb.subspace.Subspace;
import com.apple.foundationdb.tuple.Tuple;
import io.dgen.TestServer.Add;
import io.dgen.TestServer.Msg;
import io.dgen.backend.KeyValue;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** Consumer batches sweep commit markers older than ten minutes and abandoned reply slots. */
class SweepTest extends RuntimeTestBase {

  private final AtomicLong wallMillis = new AtomicLong(System.currentTimeMillis());

  @Override
  DGen newDGen() {
    Clock clock =
        new Clock() {
          @Override
          public ZoneOffset getZone() {
            return ZoneOffset.UTC;
          }

          @Override
          public Clock withZone(java.time.ZoneId zone) {
            return this;
          }

          @Override
          public Instant instant() {
            return Instant.ofEpochMilli(wallMillis.get());
          }
        };
    return DGen.builder(backend)
        .clock(clock)
        .retryBackoff(Duration.ofMillis(1), Duration.ofMillis(50))
        .build();
  }

  private List<KeyValue> rows(Subspace space) {
    return backend.run(tx -> tx.getRange(space.range().begin, space.range().end));
  }

  @Test
  void batch_sweepsOldMarkersAndAbandonedSlots_andKeepsLiveOnes() {
    ServerRef<Msg> publisher = start(b -> b.consume(false));
    Subspace root = tenant.subspace().subspace(publisher.tuid());
    Subspace markers = root.subspace(Tuple.from("o"));
    Subspace calls = root.subspace(Tuple.from("c"));
    long nowSeconds = TimeUnit.MILLISECONDS.toSeconds(wallMillis.get());
    // a caller that died two hours ago, and one that is waiting now
    byte[] abandoned = calls.pack(Tuple.from(nowSeconds - 7_200, "dead", "t", 0L));
    byte[] live = calls.pack(Tuple.from(nowSeconds + 660, "live", "t", 0L));
    backend.run(
        tx -> {
          tx.set(abandoned, new byte[0]);
          tx.set(live, new byte[0]);
          return null;
        });
    publisher.cast(new Add(1));
    assertThat(rows(markers)).hasSize(2); // the start's state write and the push left markers

    wallMillis.addAndGet(Duration.ofMinutes(11).toMillis());
    ServerRef<Msg> consumer = start();
    awaitTotal(consumer, 1);

    // both are swept; only the sweeping batch's own marker is left
    assertThat(rows(markers)).hasSize(1);
    assertThat(rows(calls)).extracting(KeyValue::key).containsExactly(live);
  }
}
