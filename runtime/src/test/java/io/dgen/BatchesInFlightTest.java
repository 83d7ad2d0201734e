package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.backend.memory.MemoryBackend;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Consumer concurrency is bounded by {@code maxBatchesInFlight}, not by threads: with one worker
 * thread and a slow commit, every server's batch runs its callback before the first commit is known
 * (a batch holds no thread while it waits), yet no more batches than the bound are in flight.
 */
class BatchesInFlightTest {

  private static final int SERVERS = 20;

  private final MemoryBackend backend = MemoryBackend.create();
  private @Nullable DGen dgen;

  private static final Duration LATENCY = Duration.ofSeconds(2);

  /** Records "callback" (and when) as it runs, and "committed" from its post-commit action. */
  record Ping() {}

  static final class Recorder implements DGenServer<Long, Ping> {
    private final Tuple tuid;
    private final List<String> events;
    private final List<Long> callbackNanos;

    Recorder(Tuple tuid, List<String> events, List<Long> callbackNanos) {
      this.tuid = tuid;
      this.events = events;
      this.callbackNanos = callbackNanos;
    }

    @Override
    public InitResult<Long> init(@Nullable Object arg) {
      return InitResult.ok(tuid, 0L);
    }

    @Override
    public Result<Long> handleCast(Ping message, Long state) {
      callbackNanos.add(System.nanoTime());
      events.add("callback");
      return Result.noReply(state + 1, List.of(s -> events.add("committed")));
    }
  }

  @AfterEach
  void close() {
    if (dgen != null) {
      dgen.close();
    }
    backend.close();
  }

  @ParameterizedTest(name = "maxBatchesInFlight={0}")
  @ValueSource(ints = {256, 5})
  void batchesInFlight_areBoundedByTheSetting_notByWorkerThreads(int bound) {
    DGen runtime = DGen.builder(backend).workerThreads(1).maxBatchesInFlight(bound).build();
    dgen = runtime;
    Tenant tenant = runtime.tenant("in-flight", UUID.randomUUID().toString());
    List<String> events = new CopyOnWriteArrayList<>();
    List<Long> callbackNanos = new CopyOnWriteArrayList<>();
    List<ServerRef<Ping>> refs = new ArrayList<>();
    for (int i = 0; i < SERVERS; i++) {
      refs.add(
          runtime.start(
              new Recorder(Tuple.from("s", i), events, callbackNanos),
              null,
              // K = 2: each batch in a transaction of its own (at K = 1, ConsumeGroups would
              // carry several servers' batches in one)
              StartOptions.builder(tenant).consumeK(2).build()));
    }
    // every consumer's first batch found its queue empty; now each commit waits two seconds
    await()
        .atMost(Duration.ofSeconds(30))
        .until(() -> backend.counters().readOnlyCommits() >= SERVERS);
    backend.faults().commitLatency(LATENCY);
    for (ServerRef<Ping> ref : refs) {
      // a push waits two seconds too; keyed, so that each is a transaction of its own, all at once
      // (plain casts would share push transactions, the later ones a commit after the first)
      new Thread(() -> ref.cast(new Ping(), "ping")).start();
    }

    await()
        .atMost(Duration.ofSeconds(60))
        .until(() -> events.stream().filter("committed"::equals).count() == SERVERS);
    // As many batches as the bound allows ran their callbacks before the first commit was known:
    // the one worker thread never waited for a commit.
    int inFirstWave = Math.min(bound, SERVERS);
    assertThat(events.indexOf("committed")).isGreaterThanOrEqualTo(inFirstWave);
    if (bound < SERVERS) {
      // and no more: the next batch started only once a commit was known, a latency later
      List<Long> sorted = callbackNanos.stream().sorted().toList();
      assertThat(sorted.get(bound) - sorted.get(0)).isGreaterThanOrEqualTo(LATENCY.toNanos());
    }
  }
}
