package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.Tally.Add;
import io.dgen.admin.DGenAdmin;
import io.dgen.admin.TenantAdmin;
import io.dgen.backend.CountingBackend;
import java.time.Duration;
import java.time.Instant;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The shape of the {@code expiry-hosted} benchmark row at a size a unit test affords, on the memory
 * backend: thousands of idle servers with an expiry, none touched, are all collected once the clock
 * passed their expiry, in transactions whose writes are bounded by the collection's chunk (100
 * servers), not by the number of servers.
 */
class ExpiryScaleTest extends RuntimeTestBase {

  private static final int SERVERS = 2_000;
  private static final int CHUNK = 100;

  @Test
  void manyIdleServers_areAllCollected_inBoundedTransactions() {
    ManualTestClock clock = new ManualTestClock(Instant.parse("2026-03-01T10:00:00Z"));
    CountingBackend counting = (CountingBackend) backend;
    AtomicLong expired = new AtomicLong();
    String[] path = {"expiry-scale", UUID.randomUUID().toString()};
    try (DGen d =
        DGen.builder(backend)
            .clock(clock)
            .buckets(64)
            .listener(
                new DGenListener() {
                  @Override
                  public void serverExpired(Tenant tenant, Tuple tuid) {
                    expired.incrementAndGet();
                  }
                })
            .build()) {
      Tenant t = d.tenant(path);
      d.host(
          ExpiryTest.KIND,
          () -> new Tally(new Tally.Seen(), "holder"),
          HostOptions.builder(t)
              .idleTimeout(Duration.ofMillis(200))
              .expireAfter(ExpiryTest.EXPIRY)
              .build());
      for (int i = 0; i < SERVERS; i++) {
        d.ref(t, ExpiryTest.KIND, Tuple.from(i)).cast(new Add(1));
      }
      TenantAdmin admin = new DGenAdmin(backend).tenant(path).orElseThrow();
      await()
          .atMost(BULK_WAIT)
          .until(
              () ->
                  admin.servers().stream()
                          .filter(s -> s.behaviour().startsWith("hosted (idle, expires at"))
                          .count()
                      == SERVERS);

      clock.advance(ExpiryTest.PAST_EXPIRY);
      counting.resetMostWritesPerCommit();
      CountingBackend.Counters before = counters();
      d.clockAdvanced();
      CountingBackend.Counters cost = counters().minus(before);

      assertThat(expired.get()).as("every server collected").isEqualTo(SERVERS);
      assertThat(admin.servers()).as("none left").isEmpty();
      assertThat(cost.transactionsCommitted())
          .as("about one transaction per %d servers", CHUNK)
          .isBetween((long) SERVERS / CHUNK, (long) SERVERS / CHUNK + 64 + 10);
      // a server's delete: its index entry, its range and its entry (no reply slot to ring)
      assertThat(counting.mostWritesPerCommit())
          .as("keys written by the largest transaction: bounded by the chunk")
          .isLessThanOrEqualTo(3L * CHUNK);
    }
  }
}
