package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dgen.admin.DGenAdmin;
import io.dgen.backend.fdb.FdbBackend;
import io.dgen.backend.fdb.FdbTestEnvironment;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A concurrency permit's holder dies without warning: a child JVM holding both permits of a limit
 * of 2 is SIGKILLed, and its permits come back at their expiry, so the servers waiting in this JVM
 * run, and the dead JVM's messages run again here (their locks busted) — every one completes.
 */
@ExtendWith(FdbTestEnvironment.class)
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class LimitsKillTest {

  private static final long LOCK_TIMEOUT_MS = 8_000;

  @Test
  void aKilledHoldersPermits_returnAtExpiry_andTheRestComplete() throws Exception {
    String tenantId = UUID.randomUUID().toString();
    String limit = "kill-" + UUID.randomUUID();
    Process child = null;
    try (FdbBackend backend = FdbTestEnvironment.openBackend();
        DGen dgen = DGen.builder(backend).concurrencyLimit(limit, 2).build()) {
      Tenant tenant = dgen.tenant("test", tenantId);
      child = startHolderJvm(tenantId, limit);
      Path out = output();
      Process holder = child;
      await("the child holds both permits")
          .atMost(Duration.ofSeconds(90))
          .until(
              () -> {
                assertThat(holder.isAlive()).as("child JVM alive: %s", out).isTrue();
                return Files.readString(out).contains(PermitHolderJvm.HOLDING);
              });
      LimitsTest.Probe probe = new LimitsTest.Probe();
      StartOptions options =
          StartOptions.builder(tenant)
              .allowTypes(LimitsTest.ReadApplied.class)
              .concurrencyLimit(limit)
              .lockTimeout(Duration.ofMillis(LOCK_TIMEOUT_MS))
              .build();
      List<ServerRef<Object>> waiting = new ArrayList<>();
      for (String id : new String[] {"w0", "w1", "w2"}) {
        ServerRef<Object> ref = dgen.start(new LimitsTest.Paced(probe), id, options);
        ref.cast(-2);
        waiting.add(ref);
      }
      // Processes here of the dead JVM's servers: they bust its locks once expired.
      List<ServerRef<Object>> orphans = new ArrayList<>();
      for (String id : new String[] {"k0", "k1"}) {
        orphans.add(dgen.start(new LimitsTest.Paced(probe), id, options));
      }
      long expiresAt =
          new DGenAdmin(backend)
              .limits().stream()
                  .filter(l -> l.name().equals(limit))
                  .flatMap(l -> l.holders().stream())
                  .mapToLong(h -> h.expiresAt().toEpochMilli())
                  .min()
                  .orElseThrow();
      child.destroyForcibly(); // SIGKILL: the permits are never released
      assertThat(child.waitFor(30, TimeUnit.SECONDS)).isTrue();

      await("every server's handleLocked ran here")
          .atMost(Duration.ofMinutes(2))
          .until(() -> probe.lockedRuns.size() == 5);
      assertThat(probe.mostInside.get()).isLessThanOrEqualTo(2);
      long firstRun = probe.lockedRuns.stream().mapToLong(r -> r[2]).min().orElseThrow();
      assertThat(firstRun)
          .as("no server got in before the dead holder's permits expired (wall clock, ms)")
          .isGreaterThanOrEqualTo(expiresAt);
      for (ServerRef<Object> ref : waiting) {
        await()
            .atMost(Duration.ofSeconds(30))
            .until(() -> ref.priorityCall(new LimitsTest.ReadApplied()).equals(List.of(-2)));
      }
      for (ServerRef<Object> ref : orphans) {
        // the cast ran in the dead JVM (taking the lock), then again here after the bust
        await()
            .atMost(Duration.ofSeconds(30))
            .until(() -> ref.priorityCall(new LimitsTest.ReadApplied()).equals(List.of(-1, -1)));
      }
    } finally {
      if (child != null) {
        child.destroyForcibly();
      }
      try (FdbBackend backend = FdbTestEnvironment.openBackend()) {
        backend.removeDirectory("test", tenantId);
      }
    }
  }

  private static Process startHolderJvm(String tenantId, String limit) throws IOException {
    return FdbChildJvm.start(
        PermitHolderJvm.class,
        output(),
        List.of(),
        tenantId,
        limit,
        Long.toString(LOCK_TIMEOUT_MS));
  }

  private static Path output() {
    return Path.of("target", "limits-kill", "holder.log");
  }
}
