package io.dgen.spring.app;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.DGen;
import io.dgen.ServerRef;
import io.dgen.backend.Backend;
import io.dgen.backend.memory.MemoryBackend;
import io.dgen.spring.DGenHealthIndicator;
import io.dgen.spring.Tally;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.health.actuate.endpoint.HealthEndpoint;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.test.context.SpringBootTest;

/**
 * The whole of Spring Boot's auto-configuration with the starter on the class path, as an
 * application gets it: Actuator's health endpoint reports the runtime, and Boot's meter registry
 * records its meters.
 */
@SpringBootTest(properties = {"dgen.backend=memory", "dgen.buckets=16"})
class SpringBootAppTest {

  @Autowired DGen dgen;
  @Autowired Backend backend;
  @Autowired HealthEndpoint health;
  @Autowired MeterRegistry registry;

  @Test
  void theRuntime_runsTheHostedKind_onTheAutoConfiguredBackend() {
    assertThat(backend).isInstanceOf(MemoryBackend.class);
    assertThat(dgen.backend()).isSameAs(backend);
    ServerRef<Tally.Msg> tally = dgen.ref(dgen.tenant("app", "test"), "tally", Tuple.from(7));
    tally.castAll(LongStream.range(0, 50).mapToObj(Tally.Add::new).toList());
    await()
        .atMost(Duration.ofSeconds(20))
        .until(
            () -> tally.call(new Tally.Summarize(), Duration.ofSeconds(10)),
            s -> s.equals(new Tally.Summary(50, 50, 0, 49)));
  }

  @Test
  void actuatorsHealth_includesDGen() {
    await()
        .atMost(Duration.ofSeconds(20))
        .until(() -> health.healthForPath("dgen").getStatus(), Status.UP::equals);
  }

  @Test
  void bootsMeterRegistry_recordsTheRuntimesMeters() {
    ServerRef<Tally.Msg> tally = dgen.ref(dgen.tenant("app", "test"), "tally", Tuple.from(8));
    tally.castAll(LongStream.range(0, 20).mapToObj(Tally.Add::new).toList());
    await()
        .atMost(Duration.ofSeconds(20))
        .until(
            () ->
                registry
                    .find("dgen.messages.processed")
                    .tag("tenant", "[app, test]")
                    .counters()
                    .stream()
                    .mapToDouble(Counter::count)
                    .sum(),
            n -> n >= 20);
    assertThat(registry.find("dgen.processes").gauge()).isNotNull();
  }

  @Autowired DGenHealthIndicator indicator;

  @Test
  void theIndicator_isTheStartersBean() {
    assertThat(indicator).isNotNull();
  }
}
