package io.dgen.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dgen.backend.Backend;
import io.dgen.backend.BackendException;
import io.dgen.backend.FaultInjectingBackend;
import io.dgen.backend.memory.MemoryBackend;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** The health indicator: UP with a reachable backend and live consumers, DOWN otherwise. */
class DGenHealthIndicatorTest {

  private final ApplicationContextRunner runner =
      new ApplicationContextRunner()
          .withConfiguration(
              AutoConfigurations.of(DGenAutoConfiguration.class, DGenHealthAutoConfiguration.class))
          .withPropertyValues("dgen.backend=memory", "dgen.buckets=16");

  @Configuration(proxyBeanMethods = false)
  static class Hosted {
    @Bean
    @DGenHosted(kind = "tally", tenant = "test/health")
    Tally tally() {
      return new Tally();
    }
  }

  @Test
  void up_withTheBackendRead_andTheHostedKindsMember() {
    runner
        .withUserConfiguration(Hosted.class)
        .run(
            ctx -> {
              DGenHealthIndicator indicator = ctx.getBean(DGenHealthIndicator.class);
              await()
                  .atMost(Duration.ofSeconds(20))
                  .untilAsserted(
                      () -> {
                        Health h = indicator.health();
                        assertThat(h.getStatus()).isEqualTo(Status.UP);
                        assertThat(h.getDetails())
                            .containsEntry("backend", "MemoryBackend")
                            .containsEntry("runtime", "running")
                            .containsKeys("readMillis", "memberId");
                        assertThat(h.getDetails().get("hosted"))
                            .isEqualTo(
                                List.of(
                                    Map.of(
                                        "tenant", "test/health",
                                        "kind", "tally",
                                        "member", "live",
                                        "leasesHeld", 16L,
                                        "buckets", 16)));
                      });
            });
  }

  @Test
  void down_whenTheRuntimeIsStopped() {
    runner.run(
        ctx -> {
          assertThat(ctx.getBean(DGenHealthIndicator.class).health().getStatus())
              .isEqualTo(Status.UP);
          ctx.getBean(DGenLifecycle.class).stop();
          Health h = ctx.getBean(DGenHealthIndicator.class).health();
          assertThat(h.getStatus()).isEqualTo(Status.DOWN);
          assertThat(h.getDetails()).containsEntry("runtime", "stopped");
        });
  }

  @Test
  void down_whenTheBackendIsClosed() {
    MemoryBackend backend = MemoryBackend.create();
    runner
        .withBean(Backend.class, () -> backend)
        .run(
            ctx -> {
              DGenHealthIndicator indicator = ctx.getBean(DGenHealthIndicator.class);
              assertThat(indicator.health().getStatus()).isEqualTo(Status.UP);
              backend.close();
              Health h = indicator.health();
              assertThat(h.getStatus()).isEqualTo(Status.DOWN);
              assertThat((String) h.getDetails().get("error"))
                  .isEqualTo("IllegalStateException: backend is closed");
            });
  }

  @Test
  void down_whenTheBackendDoesNotAnswer_andLaterChecksShareTheOutstandingRead() {
    MemoryBackend memory = MemoryBackend.create();
    FaultInjectingBackend backend = FaultInjectingBackend.wrap(memory);
    runner
        .withBean(Backend.class, () -> backend)
        .withPropertyValues("dgen.health.timeout=100ms")
        .run(
            ctx -> {
              DGenHealthIndicator indicator = ctx.getBean(DGenHealthIndicator.class);
              assertThat(indicator.health().getStatus()).isEqualTo(Status.UP);
              backend.readVersionLatency(Duration.ofSeconds(2));
              long started = memory.counters().transactionsStarted();
              Health first = indicator.health();
              Health second = indicator.health();
              assertThat(first.getStatus()).isEqualTo(Status.DOWN);
              assertThat(second.getStatus()).isEqualTo(Status.DOWN);
              assertThat((String) second.getDetails().get("error"))
                  .startsWith("the backend did not answer a read within PT0.1S (outstanding for");
              assertThat(memory.counters().transactionsStarted() - started)
                  .as("one read for both checks")
                  .isEqualTo(1);
              backend.readVersionLatency(Duration.ZERO);
              await()
                  .atMost(Duration.ofSeconds(10))
                  .until(() -> indicator.health().getStatus().equals(Status.UP));
            });
  }

  @Test
  void down_whenThisRuntimesHeartbeatStalls() {
    FaultInjectingBackend backend = FaultInjectingBackend.wrap(MemoryBackend.create());
    runner
        .withUserConfiguration(Hosted.class)
        .withBean(Backend.class, () -> backend)
        .withPropertyValues("dgen.lease-duration=300ms")
        .run(
            ctx -> {
              DGenHealthIndicator indicator = ctx.getBean(DGenHealthIndicator.class);
              await()
                  .atMost(Duration.ofSeconds(20))
                  .until(() -> indicator.health().getStatus().equals(Status.UP));
              // every writing commit fails from now on, heartbeats included; reads still answer
              backend.failCommits(Integer.MAX_VALUE, BackendException.TRANSACTION_TIMED_OUT, false);
              await()
                  .atMost(Duration.ofSeconds(20))
                  .untilAsserted(
                      () -> {
                        Health h = indicator.health();
                        assertThat(h.getStatus()).isEqualTo(Status.DOWN);
                        assertThat(h.getDetails().get("hosted").toString())
                            .contains("member=stalled");
                      });
              backend.reset();
            });
  }
}
