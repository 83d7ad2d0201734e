package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.apple.foundationdb.subspace.Subspace;
import com.apple.foundationdb.tuple.Tuple;
import io.dgen.TestServer.Add;
import io.dgen.TestServer.AddAndGet;
import io.dgen.TestServer.Boom;
import io.dgen.TestServer.Msg;
import io.dgen.admin.ServerControl;
import io.dgen.backend.KeyValue;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;

/**
 * Idempotency keys and kept replies (issue 15): keyed casts and calls run once per key within the
 * retention window, whoever retries them and however commits fail; submitted calls' replies can be
 * awaited from any runtime until the window ends, by the runtime's (injected) clock.
 */
class IdempotencyTest extends RuntimeTestBase {

  private final ManualTestClock clock = new ManualTestClock(Instant.now());

  @Override
  DGen newDGen() {
    return DGen.builder(backend)
        .clock(clock)
        .retryBackoff(Duration.ofMillis(1), Duration.ofMillis(50))
        .build();
  }

  private ProcessRef<Msg> startIn(DGen runtime, boolean consume) {
    return runtime.start(
        new TestServer(hooks),
        null,
        StartOptions.builder(runtime.tenant(tenant.path().toArray(String[]::new)))
            .consume(consume)
            .build());
  }

  private List<KeyValue> rows(ServerRef<?> ref, String part) {
    Subspace s = tenant.subspace().subspace(ref.tuid()).subspace(Tuple.from(part));
    return backend.run(tx -> tx.getRange(s.range().begin, s.range().end));
  }

  @Test
  void keyedCasts_fromEightThreadsInTwoRuntimes_withFaults_areAppliedOnce() throws Exception {
    int messages = 1_000;
    DGen second = newDGen();
    ExecutorService pool = Executors.newFixedThreadPool(8);
    try {
      List<ServerRef<Msg>> refs = List.of(start(), startIn(second, true));
      List<Future<Integer>> sent = new ArrayList<>();
      for (int t = 0; t < 8; t++) {
        ServerRef<Msg> ref = refs.get(t % 2);
        Random random = new Random(t);
        sent.add(
            pool.submit(
                () -> {
                  int queued = 0;
                  for (int round = 0; round < 3; round++) {
                    List<Long> order =
                        new ArrayList<>(LongStream.rangeClosed(1, messages).boxed().toList());
                    Collections.shuffle(order, random);
                    for (long n : order) {
                      if (n % 97 == 0) {
                        faults().failNextCommits(1);
                      } else if (n % 89 == 0) {
                        faults().commitUnknownResult(1, n % 2 == 0);
                      }
                      if (ref.cast(new Add(n), "order-" + n)) {
                        queued++;
                      }
                    }
                  }
                  return queued;
                }));
      }
      int queued = 0;
      for (Future<Integer> f : sent) {
        queued += f.get(BULK_WAIT.toMillis(), TimeUnit.MILLISECONDS);
      }
      faults().reset();
      assertThat(counters().transactionsRetried()).isPositive();
      // every key was reported queued exactly once, and every message was applied exactly once
      assertThat(queued).isEqualTo(messages);
      ServerRef<Msg> ref = refs.get(0);
      await().atMost(BULK_WAIT).until(() -> state(ref).seen().size() >= messages);
      List<Long> seen = new ArrayList<>(state(ref).seen());
      Collections.sort(seen);
      assertThat(seen).isEqualTo(LongStream.rangeClosed(1, messages).boxed().toList());
      assertThat(ServerControl.of(ref).queueLength()).isZero();
    } finally {
      pool.shutdownNow();
      second.close();
    }
  }

  @Test
  void keyedCall_repeatedWhileItRunsAndAfter_getsTheFirstReply_andRunsOnce() throws Exception {
    ServerRef<Msg> publisher = start(b -> b.consume(false));
    DGen second = newDGen();
    try {
      ServerRef<Msg> elsewhere = startIn(second, false);
      // no consumer yet: both calls are waiting for the first one to run
      CompletableFuture<Long> first =
          CompletableFuture.supplyAsync(
              () -> publisher.call(new AddAndGet(5), "charge-1", Duration.ofSeconds(30)));
      await()
          .atMost(Duration.ofSeconds(10))
          .until(() -> ServerControl.of(publisher).queueLength() == 1);
      CompletableFuture<Long> repeated =
          CompletableFuture.supplyAsync(
              () -> elsewhere.call(new AddAndGet(5), "charge-1", Duration.ofSeconds(30)));
      ServerRef<Msg> consumer = start();
      assertThat(first.get(30, TimeUnit.SECONDS)).isEqualTo(5L);
      assertThat(repeated.get(30, TimeUnit.SECONDS)).isEqualTo(5L);

      consumer.cast(new Add(100)); // a handler that ran again would reply 110
      awaitTotal(consumer, 105);
      assertThat(elsewhere.<Long>call(new AddAndGet(5), "charge-1", Duration.ofSeconds(5)))
          .isEqualTo(5L);
      assertThat(consumer.<Long>call(new AddAndGet(5), "charge-1", Duration.ofSeconds(5)))
          .isEqualTo(5L);
      assertThat(state(consumer).seen()).containsExactly(5L, 100L);
      // a fresh key runs
      assertThat(consumer.<Long>call(new AddAndGet(5), "charge-2", Duration.ofSeconds(5)))
          .isEqualTo(110L);
    } finally {
      second.close();
    }
  }

  @Test
  void submit_outlivesItsRuntime_isAwaitedTwice_andExpiresWithItsKeys() {
    DGen submitting = newDGen();
    String callId;
    try {
      ServerRef<Msg> publisher = startIn(submitting, false);
      callId = publisher.submit(new Add(7));
      assertThat(publisher.cast(new Add(1), "cast-key")).isTrue();
    } finally {
      submitting.close();
    }
    ServerRef<Msg> ref = start();
    assertThat(ref.<Long>awaitReply(callId, Duration.ofSeconds(30))).isEqualTo(7L);
    assertThat(ref.<Long>awaitReply(callId, Duration.ofSeconds(1))).isEqualTo(7L);
    assertThat(ref.<Long>awaitReplyAsync(callId, Duration.ofSeconds(1)).join()).isEqualTo(7L);
    assertThat(ref.<Long>call(new AddAndGet(10), "call-key", Duration.ofSeconds(30)))
        .isEqualTo(18L);
    assertThat(rows(ref, "r")).hasSize(2);
    assertThat(rows(ref, "i")).hasSize(2);
    assertThat(rows(ref, "x")).hasSize(2);

    clock.advance(Duration.ofHours(24).plusSeconds(2));
    assertThatThrownBy(() -> ref.awaitReply(callId, Duration.ofSeconds(1)))
        .isInstanceOf(UnknownCallException.class)
        .hasMessageContaining(callId);
    ref.cast(new Add(1000)); // a consumer batch trims what expired
    awaitTotal(ref, 1018);
    await().atMost(Duration.ofSeconds(10)).until(() -> rows(ref, "r").isEmpty());
    assertThat(rows(ref, "i")).isEmpty();
    assertThat(rows(ref, "x")).isEmpty();
    // the window ended: the key queues again
    assertThat(ref.cast(new Add(1), "cast-key")).isTrue();
    awaitTotal(ref, 1019);
  }

  @Test
  void expiredKey_reusedBeforeTheTrim_keepsItsNewRecord() {
    ServerRef<Msg> ref = start(b -> b.idempotencyRetention(Duration.ofMinutes(5)));
    assertThat(ref.cast(new Add(1), "k")).isTrue();
    clock.advance(Duration.ofMinutes(6));
    assertThat(ref.cast(new Add(2), "k")).isTrue(); // expired: the key is free again
    assertThat(ref.cast(new Add(4), "k")).isFalse();
    awaitTotal(ref, 3);
    clock.advance(Duration.ofMinutes(2)); // a trim is due; "k" is live
    ref.cast(new Add(8));
    awaitTotal(ref, 11);
    assertThat(rows(ref, "i")).hasSize(1);
    assertThat(rows(ref, "x")).hasSize(1);
    assertThat(ref.cast(new Add(16), "k")).isFalse();
  }

  @Test
  void expiredKeys_areTrimmedAtMostAHundredPerBatch_untilNoneAreLeft() {
    ServerRef<Msg> ref = start(b -> b.idempotencyRetention(Duration.ofMinutes(1)));
    for (int i = 0; i < 250; i++) {
      assertThat(ref.cast(new Add(1), "k" + i)).isTrue();
    }
    awaitTotal(ref, 250);
    assertThat(rows(ref, "i")).hasSize(250);
    clock.advance(Duration.ofMinutes(2));
    long total = 250;
    for (int remaining : new int[] {150, 50, 0, 0}) {
      ref.cast(new Add(1)); // one batch each
      awaitTotal(ref, ++total);
      assertThat(rows(ref, "i")).hasSize(remaining);
      assertThat(rows(ref, "x")).hasSize(remaining);
    }
  }

  @Test
  void keyTooLong_isRefused_andNothingIsStored() {
    ServerRef<Msg> ref = start(b -> b.consume(false));
    String longest = "é".repeat(128); // 256 bytes in UTF-8
    assertThatThrownBy(() -> ref.cast(new Add(1), longest + "x"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("257 bytes");
    assertThatThrownBy(() -> ref.call(new AddAndGet(1), longest + "x", Duration.ofSeconds(1)))
        .isInstanceOf(IllegalArgumentException.class);
    Outbox<Msg> out = ref.outbox();
    assertThatThrownBy(() -> backend.run(tx -> out.cast(tx, new Add(1), "y".repeat(257))))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> ref.cast(new Add(1), "")).isInstanceOf(IllegalArgumentException.class);
    assertThat(ServerControl.of(ref).queueLength()).isZero();
    assertThat(rows(ref, "i")).isEmpty();
    assertThat(ref.cast(new Add(1), longest)).isTrue();
    assertThatThrownBy(() -> StartOptions.builder(tenant).idempotencyRetention(Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> ref.awaitReply(ref.submit(new Add(1)), Duration.ofHours(2)))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void deadLetteredSubmit_failsEveryAwait() {
    ServerRef<Msg> ref = start(b -> b.deadLetterThreshold(2));
    String callId = ref.submit(new Boom("never"));
    for (int i = 0; i < 2; i++) {
      assertThatThrownBy(() -> ref.awaitReply(callId, Duration.ofSeconds(30)))
          .isInstanceOfSatisfying(
              DeadLetterException.class, e -> assertThat(e.attempts()).isEqualTo(2));
    }
  }

  @Test
  void awaitReply_timesOutWhileTheCallWaits_andGetsItOnceItRan() {
    ServerRef<Msg> publisher = start(b -> b.consume(false));
    String callId = publisher.submit(new Add(3));
    assertThatThrownBy(() -> publisher.awaitReply(callId, Duration.ofMillis(200)))
        .isInstanceOf(CallTimeoutException.class);
    ServerRef<Msg> consumer = start();
    assertThat(consumer.<Long>awaitReply(callId, Duration.ofSeconds(30))).isEqualTo(3L);
    assertThat(publisher.<Long>awaitReply(callId, Duration.ofSeconds(1))).isEqualTo(3L);
  }

  @Test
  void unknownCallIds_failClearly() {
    ServerRef<Msg> ref = start();
    assertThatThrownBy(() -> ref.awaitReply("no such id", Duration.ofSeconds(1)))
        .isInstanceOf(UnknownCallException.class);
    String other = start(b -> b.consume(false)).submit(new Add(1));
    String forged = other.substring(0, other.indexOf(':') + 1) + java.util.UUID.randomUUID();
    assertThatThrownBy(() -> ref.awaitReply(forged, Duration.ofSeconds(1)))
        .isInstanceOf(UnknownCallException.class);
  }

  @Test
  void keyOfACast_isNotTheKeyOfACall() {
    ServerRef<Msg> ref = start();
    assertThat(ref.cast(new Add(1), "shared")).isTrue();
    assertThatThrownBy(() -> ref.call(new AddAndGet(1), "shared", Duration.ofSeconds(5)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("cast");
    // a call's key dedups a later cast: it queued its message already
    assertThat(ref.<Long>call(new AddAndGet(2), "a-call", Duration.ofSeconds(5))).isEqualTo(3L);
    assertThat(ref.cast(new Add(4), "a-call")).isFalse();
  }

  @Test
  void outboxKeyedCast_isQueuedOnce_acrossRetriesAndCommitUnknownResult() {
    ServerRef<Msg> ref = start(b -> b.consume(false));
    Outbox<Msg> out = ref.outbox();
    List<Boolean> results = new ArrayList<>();
    for (boolean applied : new boolean[] {true, false, true}) {
      faults().commitUnknownResult(1, applied);
      results.add(backend.run(tx -> out.cast(tx, new Add(1), "outbox-key")));
    }
    assertThat(results).containsExactly(true, false, false);
    assertThat(ServerControl.of(ref).queueLength()).isEqualTo(1);
  }

  @Test
  void kill_deletesKeysAndKeptReplies() {
    ServerRef<Msg> ref = start();
    assertThat(ref.cast(new Add(1), "k")).isTrue();
    String callId = ref.submit(new Add(2));
    assertThat(ref.<Long>awaitReply(callId, Duration.ofSeconds(30))).isEqualTo(3L);
    ServerControl.of(ref).kill("test");
    ServerRef<Msg> again = start();
    assertThat(rows(again, "i")).isEmpty();
    assertThat(rows(again, "r")).isEmpty();
    assertThat(rows(again, "x")).isEmpty();
    assertThatThrownBy(() -> again.awaitReply(callId, Duration.ofSeconds(1)))
        .isInstanceOf(UnknownCallException.class);
    assertThat(again.cast(new Add(1), "k")).isTrue();
  }
}
