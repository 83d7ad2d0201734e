package io.dgen.spring;

import static org.assertj.core.api.Assertions.assertThat;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.DGen;
import io.dgen.ServerRef;
import io.dgen.admin.DGenAdmin;
import io.dgen.admin.ServerAdmin;
import io.dgen.backend.Backend;
import io.dgen.backend.rocksdb.RocksDbBackend;
import io.dgen.spring.Tally.Summary;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.LongStream;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.boot.Banner;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.ImportAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Closing the application while a consumer batch is in flight, on the embedded RocksDB backend:
 * within the shutdown timeout the batch commits; past it the batch is abandoned and its messages
 * stay queued. Either way, an application started again on the same data directory applies every
 * message exactly once.
 */
@ExtendWith(OutputCaptureExtension.class)
class GracefulShutdownTest {

  private static final int MESSAGES = 200;
  private static final long GATED = 20;
  private static final Tuple TUID = Tuple.from("tally", 1L);

  @Configuration(proxyBeanMethods = false)
  @ImportAutoConfiguration(DGenAutoConfiguration.class)
  static class App {
    @Bean
    @DGenHosted(kind = "tally", tenant = "test/shutdown", consumeK = 4)
    Tally tally() {
      return new Tally();
    }
  }

  @AfterEach
  void openTheGate() {
    Tally.gate.release.countDown();
    Tally.gate = Tally.Gate.NONE;
  }

  /**
   * The application's own {@code DGen} bean, with the destroy method Spring infers for it ({@code
   * close}), over the auto-configured backend.
   */
  @Configuration(proxyBeanMethods = false)
  static class OwnDGen {
    @Bean
    DGen myDGen(Backend backend) {
      return DGen.builder(backend).buckets(8).leaseDuration(Duration.ofSeconds(1)).build();
    }
  }

  private static ConfigurableApplicationContext start(Path dir, String shutdownTimeout) {
    return start(dir, shutdownTimeout, App.class);
  }

  private static ConfigurableApplicationContext start(
      Path dir, String shutdownTimeout, Class<?>... sources) {
    return new SpringApplicationBuilder(sources)
        .web(WebApplicationType.NONE)
        .bannerMode(Banner.Mode.OFF)
        .logStartupInfo(false)
        .properties(
            "dgen.backend=rocksdb",
            "dgen.rocksdb.data-dir=" + dir,
            "dgen.buckets=8",
            "dgen.lease-duration=1s",
            "dgen.shutdown-timeout=" + shutdownTimeout)
        .run();
  }

  private static ServerRef<Tally.Msg> tally(ConfigurableApplicationContext ctx) {
    DGen dgen = ctx.getBean(DGen.class);
    return dgen.ref(dgen.tenant("test", "shutdown"), "tally", Tuple.from(1L));
  }

  /** Sends the messages and returns once the gated one's batch is in flight. */
  private static Tally.Gate sendAndHoldABatch(ConfigurableApplicationContext ctx)
      throws InterruptedException {
    Tally.Gate gate = new Tally.Gate(GATED);
    Tally.gate = gate;
    tally(ctx).castAll(LongStream.range(0, MESSAGES).mapToObj(Tally.Add::new).toList());
    assertThat(gate.entered.await(30, TimeUnit.SECONDS)).as("the gated batch started").isTrue();
    return gate;
  }

  /** What the store holds between the two applications: the ids applied and the queue's length. */
  private record Stored(List<Long> applied, long queued) {}

  private static Stored stored(Path dir) {
    try (RocksDbBackend backend = RocksDbBackend.open(dir)) {
      ServerAdmin server =
          new DGenAdmin(backend)
              .tenant("test", "shutdown")
              .orElseThrow()
              .server(TUID)
              .orElseThrow();
      List<Long> applied = new ArrayList<>();
      server.state().ifPresent(s -> s.get("applied").forEach(n -> applied.add(n.asLong())));
      return new Stored(applied, server.queueLength());
    }
  }

  /** A second application on the same directory applies every message exactly once. */
  private static void restartAndExpectEveryMessageOnce(Path dir) {
    try (ConfigurableApplicationContext again = start(dir, "10s")) {
      ServerRef<Tally.Msg> tally = tally(again);
      Awaitility.await()
          .atMost(Duration.ofSeconds(60))
          .untilAsserted(
              () ->
                  assertThat(tally.call(new Tally.Summarize(), Duration.ofSeconds(10)))
                      .isEqualTo(new Summary(MESSAGES, MESSAGES, 0, MESSAGES - 1)));
    }
  }

  @Test
  void withinTheTimeout_theBatchInFlightCommits_andTheRestStaysQueued(@TempDir Path dir)
      throws Exception {
    ConfigurableApplicationContext ctx = start(dir, "30s");
    DGenLifecycle lifecycle = ctx.getBean(DGenLifecycle.class);
    Tally.Gate gate = sendAndHoldABatch(ctx);

    CompletableFuture<Void> closing = CompletableFuture.runAsync(ctx::close);
    Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> !lifecycle.isRunning());
    // The lifecycle reports "not running" at once and closes DGen on a thread of its own: release
    // the batch only once that close stopped the server and waits for the batch in flight.
    Awaitility.await()
        .atMost(Duration.ofSeconds(10))
        .pollInterval(Duration.ofMillis(10)) // it waits at most Placement.DRAIN_LIMIT (2 s)
        .until(GracefulShutdownTest::shutdownWaitsForBatchesInFlight);
    assertThat(closing).as("the shutdown waits for the batch in flight").isNotDone();
    gate.release.countDown();
    closing.get(30, TimeUnit.SECONDS);

    Stored between = stored(dir);
    assertThat(between.applied()).as("the batch in flight committed").contains(GATED);
    assertThat(between.applied()).doesNotHaveDuplicates();
    assertThat(between.queued())
        .as("no batch started after the shutdown began")
        .isEqualTo(MESSAGES - between.applied().size())
        .isGreaterThan(0);

    Tally.gate = Tally.Gate.NONE;
    restartAndExpectEveryMessageOnce(dir);
  }

  /**
   * Whether the starter's shutdown thread is parked in the placement's close: every hosted server
   * is stopped by then, and the close waits for the batches in flight to drain.
   */
  private static boolean shutdownWaitsForBatchesInFlight() {
    return Thread.getAllStackTraces().entrySet().stream()
        .anyMatch(
            e ->
                e.getKey().getName().equals("dgen-shutdown")
                    && e.getKey().getState() == Thread.State.TIMED_WAITING
                    && Arrays.stream(e.getValue())
                        .anyMatch(
                            f ->
                                f.getClassName().endsWith(".Placement")
                                    && f.getMethodName().equals("close")));
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"the starter's DGen", "the application's DGen"})
  void pastTheTimeout_theShutdownGoesOn_andTheBatchsMessagesStayQueued(
      String runtime, @TempDir Path dir, CapturedOutput output) throws Exception {
    ConfigurableApplicationContext ctx =
        runtime.equals("the starter's DGen")
            ? start(dir, "300ms", App.class)
            : start(dir, "300ms", App.class, OwnDGen.class);
    Tally.Gate gate = sendAndHoldABatch(ctx);

    // The runtime's own close waits up to 10 s for transactions in flight: closing well before
    // that shows nothing (e.g. Spring's inferred destroy method) waited for the held batch.
    CompletableFuture<Void> closing = CompletableFuture.runAsync(ctx::close);
    closing.get(8, TimeUnit.SECONDS);
    assertThat(gate.release.getCount()).as("closed while the batch was still held").isEqualTo(1);
    assertThat(output).contains("DGen did not close within dgen.shutdown-timeout (PT0.3S)");
    gate.release.countDown(); // the abandoned batch now tries to commit, to a closed backend

    Stored between = stored(dir);
    assertThat(between.applied()).as("the abandoned batch did not commit").doesNotContain(GATED);
    assertThat(between.queued()).isEqualTo(MESSAGES - between.applied().size());

    Tally.gate = Tally.Gate.NONE;
    restartAndExpectEveryMessageOnce(dir);
  }
}
