package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.TestServer.Msg;
import io.dgen.backend.CountingBackend;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Consumers batching across servers: at {@code consumeK} 1 the one-message batches of several
 * servers that are ready while others commit share a transaction. Each server still applies its
 * messages once, in order; a failure fails only the server it belongs to; a lost commit outcome
 * replays the whole group once.
 */
class ConsumeGroupsTest extends RuntimeTestBase {

  private static final int SERVERS = 16;
  private static final int PER_SERVER = 60;

  /** A publish-only process of server {@code ("cg", i)}, so its queue fills before it consumes. */
  private ProcessRef<Msg> publisher(int i) {
    return dgen.start(
        new TestServer(hooks),
        new TestServer.Init(0, Tuple.from("cg", i), null),
        StartOptions.builder(tenant).consume(false).build());
  }

  /** A consuming process of server {@code ("cg", i)} in {@code runtime}, at K = 1. */
  private ProcessRef<Msg> consumer(DGen runtime, int i) {
    return runtime.start(
        new TestServer(hooks),
        new TestServer.Init(0, Tuple.from("cg", i), null),
        StartOptions.builder(runtime.tenant(tenant.path().toArray(String[]::new))).build());
  }

  /** Queues {@link #PER_SERVER} numbered casts on each of {@link #SERVERS} servers. */
  private List<ProcessRef<Msg>> queued() {
    List<ProcessRef<Msg>> refs = new ArrayList<>();
    for (int i = 0; i < SERVERS; i++) {
      ProcessRef<Msg> ref = publisher(i);
      List<Msg> seq = new ArrayList<>();
      for (long n = 1; n <= PER_SERVER; n++) {
        seq.add(new TestServer.Seq("p", n));
      }
      ref.castAll(seq);
      refs.add(ref);
    }
    return refs;
  }

  /** Every server applied each of its casts once, in order. */
  private void assertEachAppliedOnceInOrder(List<ProcessRef<Msg>> refs, long extra) {
    for (int i = 0; i < refs.size(); i++) {
      awaitTotal(refs.get(i), PER_SERVER + extra);
      TestServer.State s = refs.get(i).call(new TestServer.GetState());
      assertThat(s.outOfOrder()).as("server %d applied its casts out of order", i).isZero();
      assertThat(s.lastSeq()).as("server %d", i).containsEntry("p", (long) PER_SERVER);
    }
  }

  @Test
  void oneMessageBatchesOfManyServers_shareTransactions_eachAppliedOnceInOrder() {
    List<ProcessRef<Msg>> refs = queued();
    faults().commitLatency(Duration.ofMillis(3)); // a commit takes time, as on a cluster
    CountingBackend.Counters before = counters();
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    try (DGen consumers = DGen.builder(backend).meterRegistry(registry).build()) {
      for (int i = 0; i < SERVERS; i++) {
        consumer(consumers, i);
      }
      for (ProcessRef<Msg> ref : refs) {
        awaitTotal(ref, PER_SERVER);
      }

      CountingBackend.Counters consumed = counters().minus(before);
      int messages = SERVERS * PER_SERVER;
      assertThat(consumed.transactionsCommitted())
          .as("%d one-message batches took %s", messages, consumed)
          .isLessThan(messages / 2);
      double groups = registry.counter("dgen.consume.group.transactions").count();
      double grouped = registry.counter("dgen.consume.group.batches").count();
      assertThat(grouped).as("batches carried by %s group transactions", groups).isPositive();
      assertThat(grouped / groups).as("batches per group transaction").isGreaterThan(1.5);
      assertEachAppliedOnceInOrder(refs, 0);
    }
  }

  @Test
  void severalConsumersOfOneServer_neverShareAGroup_andApplyEachCastOnceInOrder() {
    List<ProcessRef<Msg>> refs = queued();
    faults().commitLatency(Duration.ofMillis(3));
    CountingBackend.Counters before = counters();

    for (int i = 0; i < SERVERS; i++) {
      for (int c = 0; c < 3; c++) { // three consumers of each server: the seeds allow several
        consumer(dgen, i);
      }
    }
    for (ProcessRef<Msg> ref : refs) {
      awaitTotal(ref, PER_SERVER);
    }

    // Two consumers of one server in one transaction would pop one queue and write one version key
    // twice (a versionstamped value the second cannot read back): the whole group would fail, not
    // retried, again and again (208 such failures on memory without the rule, 0 with it). Each
    // group
    // takes one batch per server; the consumers of one server conflict as they would alone, and
    // those attempts are retried.
    CountingBackend.Counters consumed = counters().minus(before);
    long failedUnretried =
        consumed.transactionsStarted()
            - consumed.transactionsCommitted()
            - consumed.readOnlyCommits()
            - consumed.transactionsRetried();
    assertThat(failedUnretried)
        .as("attempts that failed and were not retried while %s", consumed)
        .isLessThan(consumed.transactionsCommitted() / 10);
    assertEachAppliedOnceInOrder(refs, 0);
  }

  @Test
  void aFailingCallback_failsOnlyItsServer_andTheServersGroupedWithItCommit() {
    List<ProcessRef<Msg>> refs = queued();
    // server 0 also gets casts whose callbacks fail twice each before they apply
    List<Msg> flaky = new ArrayList<>();
    for (int n = 0; n < 10; n++) {
      flaky.add(new TestServer.FailFirst("flaky-" + n, 2));
    }
    refs.get(0).castAll(flaky);
    faults().commitLatency(Duration.ofMillis(3));

    for (int i = 0; i < SERVERS; i++) {
      consumer(dgen, i);
    }

    awaitTotal(refs.get(0), PER_SERVER + flaky.size());
    assertEachAppliedOnceInOrder(refs.subList(1, SERVERS), 0);
    assertThat(admin(refs.get(0)).deadLetterCount()).isZero();
  }

  @Test
  void lostCommitOutcomesAndConflicts_replayTheGroupOnce() {
    List<ProcessRef<Msg>> refs = queued();
    faults().commitLatency(Duration.ofMillis(3));
    for (int i = 0; i < SERVERS; i++) {
      consumer(dgen, i);
    }
    // while the groups run: outcomes lost after the commit applied, and before it did, and
    // conflicts
    faults().commitUnknownResult(6, true);
    faults().commitUnknownResult(6, false);
    faults().failNextCommits(6);

    assertEachAppliedOnceInOrder(refs, 0);
  }

  @Test
  void aRuntimeThatClosesWithBatchesWaitingForAGroup_losesNoMessage() {
    List<ProcessRef<Msg>> refs = queued();
    faults().commitLatency(Duration.ofMillis(20));
    DGen closing = newDGen();
    for (int i = 0; i < SERVERS; i++) {
      consumer(closing, i);
    }
    awaitSomeApplied(refs);

    closing.close();

    for (int i = 0; i < SERVERS; i++) {
      consumer(dgen, i); // the rest, here
    }
    assertEachAppliedOnceInOrder(refs, 0);
  }

  private static void awaitSomeApplied(List<ProcessRef<Msg>> refs) {
    org.awaitility.Awaitility.await()
        .atMost(Duration.ofSeconds(30))
        .until(() -> refs.stream().mapToLong(RuntimeTestBase::total).sum() >= SERVERS);
  }
}
