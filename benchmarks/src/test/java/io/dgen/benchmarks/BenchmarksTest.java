package io.dgen.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.io.OutputStream;
import java.io.PrintStream;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Keeps the harness working: every scenario runs with tiny sizes and reports the counts the cost
 * model predicts. Timings are not asserted (CI machines are shared); counts are.
 */
@Timeout(120)
class BenchmarksTest {

  private static Report report;

  @BeforeAll
  static void runEveryScenarioWithTinySizes() {
    report =
        Benchmarks.run(
            Settings.tiny(),
            Target.memory(),
            null,
            new PrintStream(OutputStream.nullOutputStream()));
  }

  private static Row row(String id) {
    return report.row(id).orElseThrow(() -> new AssertionError("no row " + id));
  }

  @Test
  void report_hasOneRowPerScenario_inTableOrder() {
    assertThat(report.rows()).extracting(Row::id).containsExactlyElementsOf(Benchmarks.ids());
    for (Row r : report.rows()) {
      assertThat(r.messages()).as(r.id()).isPositive();
      assertThat(r.opsPerSecond()).as(r.id()).isPositive();
      if (r.id().equals("limit-throttled")) {
        // the process's CPU while its servers wait for permits: nothing is the ideal. Every other
        // row, however short, used some CPU, and the clock counts nanoseconds (not the JDK's
        // 10 ms ticks, which read none for a tiny drain of 400 messages)
        assertThat(r.cpuMicrosPerMessage()).as(r.id()).isNotNegative();
      } else {
        assertThat(r.cpuMicrosPerMessage()).as(r.id()).isPositive();
      }
    }
    String out = report.render();
    assertThat(out)
        .contains("DGen benchmarks", "JVM: ", "cores", "| scenario", "ratios", "targets")
        .contains("cast K=64 ≥ 250,000/s", "inline call p50 ≤ 30 µs")
        .contains(
            "targets (issue 18)",
            "cast K=64 ÷ plain actor ≤ 20",
            "1 of 1,000 fields: STRUCTURED ÷ TERM ≤ 0.25",
            "1 of 1,000 fields ÷ 1 of 1 field ≤ 2",
            "cast K=64: OTel API, no SDK ÷ without ≤ 1.02",
            "cast K=64: OTel API hooks ≤ 2% of CPU/msg");
    assertThat(out.lines().filter(l -> l.startsWith("| ")).count())
        .isEqualTo(report.rows().size() + 1);
  }

  @Test
  void theServicePath_callsInlineWhereTheCodeIs_andQueuesElsewhere() {
    for (String id : new String[] {"svc-call-holder", "svc-call-replica"}) {
      Row r = row(id);
      assertThat(r.commitsPerMessage()).as("%s: one transaction a call", id).isBetween(1.0, 1.05);
      assertThat(r.consumerTransactionsPerMessage()).as("%s: no consumer", id).isLessThan(0.05);
    }
    assertThat(row("svc-call-nothing").commitsPerMessage())
        .as("a runtime without the code queues: a push and the holder's batch")
        .isGreaterThanOrEqualTo(2.0);
    for (String id : new String[] {"svc-casts-k1", "svc-casts-1-k16"}) {
      Row r = row(id);
      assertThat(r.clientTransactions())
          .as("%s: casts of eight threads share push transactions, never more than one each", id)
          .isPositive()
          .isLessThanOrEqualTo(r.messages());
    }
    assertThat(row("svc-casts-k1").consumerTransactionsPerMessage()).isBetween(0.99, 1.05);
  }

  @Test
  void anAtomicTransfer_isOneTransaction_withOneRoundOfReadsPerServer() {
    Row r = row("atomic-transfer");
    assertThat(r.commitsPerMessage()).as("one transaction a transfer").isBetween(1.0, 1.05);
    assertThat(r.readsPerMessage())
        .as("queue head, lock and version key of each account; the states from the cache")
        .isBetween(6.0, 8.0);
    assertThat(r.metric("ratioToSingle")).isPositive();
    assertThat(r.metric("abortsPerCommit")).isNotNegative();
  }

  @Test
  void casts_costOneConsumerTransactionPerBatchOfK() {
    assertThat(row("cast-k1").consumerTransactionsPerMessage()).isBetween(0.99, 1.01);
    for (int k : new int[] {16, 64, 256}) {
      double perMessage = row("cast-k" + k).consumerTransactionsPerMessage();
      assertThat(perMessage).as("K=%d", k).isPositive().isLessThanOrEqualTo(1.2 / k + 0.01);
    }
    // castAll of 16: at most one push transaction per 16 messages (concurrent ones share them)
    Row k64 = row("cast-k64");
    assertThat(k64.commitsPerMessage() - k64.consumerTransactionsPerMessage())
        .isPositive()
        .isLessThanOrEqualTo(1.0 / 16 + 1e-9);
    assertThat(k64.cost().conflicts()).as("pushes never conflict with the consumer").isZero();
    // the OpenTelemetry API without an SDK changes no cost, and its hooks were timed
    Row otel = row("cast-k64-otel-api");
    assertThat(otel.consumerTransactionsPerMessage()).isLessThanOrEqualTo(1.2 / 64 + 0.01);
    // within a few bytes: a push transaction writes one commit marker, and how many castAll calls
    // share one depends on timing
    assertThat(otel.bytesWrittenPerMessage()).isCloseTo(k64.bytesWrittenPerMessage(), within(5.0));
    assertThat(otel.metric("hooksNs")).isNotNegative().isLessThan(10_000);
    // a plain cast is at most one push transaction (concurrent ones share them)
    Row plain = row("cast-plain-k64");
    assertThat(plain.commitsPerMessage() - plain.consumerTransactionsPerMessage())
        .isPositive()
        .isLessThanOrEqualTo(1.0 + 1e-9);
    assertThat(plain.p50Micros()).isPositive();
    // a keyed cast is one push transaction too, with one more read (its key) and its record and
    // index entry written
    Row keyed = row("cast-keyed-k64");
    assertThat(keyed.commitsPerMessage() - keyed.consumerTransactionsPerMessage())
        .isCloseTo(1.0, within(1e-9));
    assertThat(keyed.cost().conflicts()).as("distinct keys never conflict").isZero();
    assertThat(keyed.bytesWrittenPerMessage()).isGreaterThan(plain.bytesWrittenPerMessage());
  }

  @Test
  void calls_costWhatTheModelSays() {
    Row inline = row("call-inline");
    assertThat(inline.commitsPerMessage()).isEqualTo(1.0);
    assertThat(inline.consumerTransactionsPerMessage()).isZero();
    assertThat(row("call-inline-read").commitsPerMessage()).isZero();
    // A queued call commits its push and the consumer's batch; its reply is read without a
    // commit, and read slots are cleared a few milliseconds later, as many to a transaction as
    // calls were answered meanwhile (how many depends on the machine's speed).
    Row queued = row("call-queued");
    assertThat(queued.consumerTransactionsPerMessage()).isBetween(0.9, 2.0);
    assertThat(queued.commitsPerMessage()).isBetween(1.9, 3.0);
    assertThat(queued.p50Micros()).isGreaterThan(0).isLessThanOrEqualTo(queued.p99Micros());
  }

  @Test
  void aOneFieldChange_writesFarLessStructuredThanAsATerm() {
    double structured = row("wide-structured").bytesWrittenPerMessage();
    double term = row("wide-term").bytesWrittenPerMessage();
    assertThat(structured).isLessThan(2_000).isLessThan(term / 10);
    assertThat(term).isGreaterThan(15_000);
    // A one-field state's cast writes about what a one-field change of a wide state does.
    assertThat(row("wide-1").bytesWrittenPerMessage()).isBetween(structured / 2, structured * 2);
    // A copied HashMap is the same state to the encoding: it writes what the immutable shape does.
    assertThat(row("wide-mutable-structured").bytesWrittenPerMessage())
        .isBetween(structured / 2, structured * 2);
    assertThat(row("wide-mutable-term").bytesWrittenPerMessage()).isGreaterThan(15_000);
  }

  @Test
  void aStateEveryCastRewrites_isWrittenWhole_byTheStructuredEncodingToo() {
    // the structured layout of 1,000 fields takes about 110 KB, one term 29 KB: only the first
    // few diffs (before the codec stores the state whole) are written as a layout
    double term = row("wide-all-term").bytesWrittenPerMessage();
    assertThat(term).isGreaterThan(15_000);
    assertThat(row("wide-all-structured").bytesWrittenPerMessage()).isLessThan(term * 1.5);
  }

  @Test
  void commitMarkers_stayFewAfterManyK1Casts() {
    Row r = row("markers");
    assertThat(r.consumerTransactionsPerMessage()).isBetween(0.99, 1.01);
    assertThat(r.metric("markerKeys")).isPositive().isLessThanOrEqualTo(16);
    assertThat(report.render()).contains("commit markers after 2,000 K=1 casts: heap ≤ 32 MB");
  }

  @Test
  void wideRows_reportTheirCallbackAlone_andCpuNetOfIt() {
    for (String id :
        List.of(
            "wide-1",
            "wide-structured",
            "wide-term",
            "wide-mutable-structured",
            "wide-mutable-term",
            "wide-all-structured",
            "wide-all-term")) {
      Row r = row(id);
      assertThat(r.metric("callbackMicros")).as(id).isPositive();
      assertThat(r.metric("cpuLeastMicros")).as(id).isPositive();
      assertThat(r.netCpuMicrosPerMessage())
          .as(id)
          .isEqualTo(r.metric("cpuLeastMicros") - r.metric("callbackMicros"));
    }
    assertThat(row("cast-k1").netCpuMicrosPerMessage()).as("not a wide row").isNaN();
    assertThat(report.render())
        .contains("net CPU µs/msg", "HashMap copy: STRUCTURED ÷ TERM ≤ 0.25");
  }

  @Test
  void manyAndIdleServers_report() {
    assertThat(row("servers").consumerTransactionsPerMessage())
        .isLessThanOrEqualTo(1.0 / 16 + 0.05);
    Row idle = row("idle");
    assertThat(idle.messages()).isEqualTo(Settings.tiny().idleServers());
    assertThat(idle.metric("threads")).isPositive();
    assertThat(idle.metric("heapMb")).isPositive();
    assertThat(idle.p50Micros()).as("wake-up latency").isPositive();
    // an idle server has committed its initial state and nothing else
    assertThat(idle.commitsPerMessage()).isEqualTo(1.0);
  }

  @Test
  void scaleOutRows_reportNoTenantWideKey_andARefCastCostingWhatAStartedCastCosts() {
    // 20 servers with 4 casts each: one server's bucket takes its own 4 rings (0.05 per message);
    // a key every message touched would take 1 or 2.
    for (String id :
        List.of("hot-hosted-k1", "hot-hosted-k16", "hot-started-k1", "hot-started-k16")) {
      assertThat(row(id).metric("hottestPerMessage")).as(id).isPositive().isLessThan(0.2);
    }
    // A cast through a ref reads what one through a started process does; its consumer's batch
    // reads one key more, the bucket's lease. Per message that extra read weighs 1/(messages per
    // batch), which timing decides (1.0-1.6 × measured here), so it is compared per batch: an
    // extra read per ref cast would add about 1/(batches per message), 10 or more here. The
    // per-batch figure is not exact either: idle batches, wake-log reads and the hosting runtime's
    // placement rounds count in it as timing has them (0.47-1.25 measured where 1 is the lease),
    // so the bound is wide on both sides and still far below what a read per cast would add.
    assertThat(row("cast-ref").metric("extraReadsPerBatch")).isBetween(0.0, 3.0);
    // Bytes per message: the same writes per cast, but a push transaction's commit marker is shared
    // by the casts that group commit put in it, as timing groups them in each row (about 50 bytes
    // a transaction against about 300 a cast): the ratio moves by a marker's share, not by 2.
    assertThat(row("cast-ref").metric("bytesRatio")).isBetween(0.6, 1.4);
    assertThat(row("cast-ref").note()).contains("ref() calls: 0 transactions, 0 reads");
    Row idle = row("idle-hosted");
    assertThat(idle.messages()).isEqualTo(Settings.tiny().idleServers());
    assertThat(idle.metric("watches")).as("watches").isBetween(1.0, 1_024.0 + 16);
    assertThat(idle.p50Micros()).as("a message to an idle hosted server").isPositive();
  }

  @Test
  void throughputScenarios_reportTheirCounts() {
    for (String id : new String[] {"drain-k16-0ms", "drain-k16-10ms"}) {
      assertThat(row(id).consumerTransactionsPerMessage()).as(id).isBetween(0.01, 1.0 / 16 + 0.05);
    }
    // At K = 1 the one-message batches of servers ready together share transactions (consume
    // groups, up to 16 servers each): how many share depends on timing without latency; with
    // commit latency every server is ready while others commit, and most batches share.
    assertThat(row("drain-k1-0ms").consumerTransactionsPerMessage())
        .as("drain-k1-0ms")
        .isBetween(1.0 / 16 - 0.01, 1.01);
    assertThat(row("drain-k1-5ms").consumerTransactionsPerMessage())
        .as("drain-k1-5ms")
        .isBetween(1.0 / 16 - 0.01, 0.5);
    for (String id : new String[] {"idle-cpu", "idle-many"}) {
      Row idle = row(id);
      // a watch per bucket that one of the idle servers lives in (1,024 buckets), plus a few
      int servers =
          id.equals("idle-cpu")
              ? Settings.tiny().throughput().idleCpuServers()
              : Settings.tiny().throughput().idleManyServers();
      assertThat(idle.metric("watches")).as(id).isBetween(0.0, Math.min(servers, 1_024) + 16.0);
      assertThat(idle.metric("idleCores")).as(id).isNotNaN();
      assertThat(idle.commitsPerMessage()).as("%s: the initial state only", id).isEqualTo(1.0);
      assertThat(idle.p50Micros()).as("%s: wake-up", id).isPositive();
    }
    Row calls = row("calls-async");
    assertThat(calls.commitsPerMessage()).isBetween(1.0, 2.2);
    assertThat(calls.metric("threads")).isPositive();
    assertThat(calls.p50Micros()).isPositive();
  }

  @Test
  void latencies_useNearestRankPercentiles() {
    Latencies l = new Latencies();
    for (int i = 1; i <= 2_000; i++) {
      l.add(i * 1_000L);
    }
    Latencies.Summary s = l.summarize();
    assertThat(s.count()).isEqualTo(2_000);
    assertThat(s.p50Micros()).isEqualTo(1_000.0);
    assertThat(s.p99Micros()).isEqualTo(1_980.0);
    assertThat(s.maxMicros()).isEqualTo(2_000.0);
    assertThat(new Latencies().summarize().p50Micros()).isNaN();
  }

  @Test
  void unknownScenariosAndArguments_areRefused() {
    PrintStream quiet = new PrintStream(OutputStream.nullOutputStream());
    assertThatThrownBy(
            () -> Benchmarks.run(Settings.tiny(), Target.memory(), Set.of("nope"), quiet))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("nope");
    assertThatThrownBy(() -> Benchmarks.main(new String[] {"--fast"}))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("--fast");
  }

  @Test
  void timers_fireEveryOneAndCostNothingWhileIdle() {
    Row fire = row("timers-fire");
    assertThat(fire.messages()).isEqualTo(Settings.tiny().manyServers() * 10L);
    assertThat(fire.p50Micros()).isPositive();
    Row idle = row("idle-timers");
    assertThat(idle.metric("timers")).isEqualTo(Settings.tiny().throughput().idleManyServers());
    assertThat(idle.metric("idleTransactions")).as("an idle second commits nothing").isZero();
    // the doorbells and timer alarms of the buckets in use, at most one each per bucket
    assertThat(idle.metric("watches"))
        .as("watches")
        .isLessThanOrEqualTo(2 * Math.min(Settings.tiny().throughput().idleManyServers(), 1_024));
    assertThat(idle.metric("threadsAdded")).isLessThan(64);
  }

  @Test
  void aRecurringTimer_firesOncePerSecond() {
    Row every = row("timers-every");
    long seconds = Settings.tiny().recurringRun().toSeconds();
    assertThat(every.metric("firings")).isEqualTo(seconds);
    assertThat(every.metric("duplicates")).isZero();
  }
}
