package io.dgen.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.DGen;
import io.dgen.ServerRef;
import io.dgen.backend.Backend;
import io.dgen.backend.fdb.FdbBackend;
import io.dgen.backend.fdb.FdbTestEnvironment;
import io.dgen.spring.Tally.Summary;
import java.time.Duration;
import java.util.UUID;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** {@code dgen.backend=fdb} against the throwaway FoundationDB of the test environment. */
@ExtendWith(FdbTestEnvironment.class)
class FdbBackendTest {

  static final String TENANT = "spring-test-" + UUID.randomUUID();

  @Configuration(proxyBeanMethods = false)
  static class Hosted {
    @Bean
    @DGenHosted(kind = "tally", tenant = "${test.tenant}", consumeK = 16)
    Tally tally() {
      return new Tally();
    }
  }

  @Test
  void fdb_opensTheClusterFile_hostsTheKind_andReportsHealth() {
    new ApplicationContextRunner()
        .withConfiguration(
            AutoConfigurations.of(DGenAutoConfiguration.class, DGenHealthAutoConfiguration.class))
        .withUserConfiguration(Hosted.class)
        .withPropertyValues(
            "dgen.backend=fdb",
            "dgen.fdb.cluster-file=" + FdbTestEnvironment.clusterFile(),
            "dgen.fdb.transaction-timeout=10s",
            "dgen.buckets=16",
            "test.tenant=" + TENANT)
        .run(
            ctx -> {
              Backend backend = ctx.getBean(Backend.class);
              assertThat(backend).isInstanceOf(FdbBackend.class);
              try {
                DGen dgen = ctx.getBean(DGen.class);
                ServerRef<Tally.Msg> tally = dgen.ref(dgen.tenant(TENANT), "tally", Tuple.from(1));
                tally.castAll(LongStream.range(0, 100).mapToObj(Tally.Add::new).toList());
                await()
                    .atMost(Duration.ofSeconds(30))
                    .until(
                        () -> tally.call(new Tally.Summarize(), Duration.ofSeconds(10)),
                        s -> s.equals(new Summary(100, 100, 0, 99)));
                DGenHealthIndicator indicator = ctx.getBean(DGenHealthIndicator.class);
                await()
                    .atMost(Duration.ofSeconds(30))
                    .untilAsserted(
                        () -> {
                          Health h = indicator.health();
                          assertThat(h.getStatus()).isEqualTo(Status.UP);
                          assertThat(h.getDetails()).containsEntry("backend", "FdbBackend");
                          assertThat(h.getDetails().get("hosted").toString())
                              .contains("member=live", "leasesHeld=16");
                        });
              } finally {
                backend.removeDirectory(TENANT);
              }
            });
  }
}
