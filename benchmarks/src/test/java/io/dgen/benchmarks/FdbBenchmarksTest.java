package io.dgen.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;

import io.dgen.backend.fdb.FdbTestEnvironment;
import java.io.OutputStream;
import java.io.PrintStream;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Keeps {@code --backend fdb} working: the cast, call and many-servers scenarios run with tiny
 * sizes on the test cluster and report the counts the cost model predicts, through {@link
 * io.dgen.backend.CountingBackend}. Timings are not asserted.
 */
@ExtendWith(FdbTestEnvironment.class)
@Timeout(300)
class FdbBenchmarksTest {

  @Test
  void fdbTarget_runsTheScenarios_andCountsWhatTheModelSays() {
    Report report;
    try (Target target = Target.fdb(FdbTestEnvironment.clusterFile())) {
      report =
          Benchmarks.run(
              Settings.tiny(),
              target,
              Set.of("raw-tx", "cast-k16", "call-inline", "call-queued", "servers"),
              new PrintStream(OutputStream.nullOutputStream()));
    }
    assertThat(report.render())
        .contains("backend: FoundationDB, cluster file", "raw FoundationDB tx")
        .doesNotContain("targets (issue 7)");
    Row raw = report.row("raw-tx").orElseThrow();
    assertThat(raw.commitsPerMessage()).isEqualTo(1.0);
    assertThat(raw.readsPerMessage()).isEqualTo(1.0);
    Row k16 = report.row("cast-k16").orElseThrow();
    assertThat(k16.consumerTransactionsPerMessage()).isPositive().isLessThanOrEqualTo(1.2 / 16);
    Row inline = report.row("call-inline").orElseThrow();
    assertThat(inline.commitsPerMessage()).isEqualTo(1.0);
    assertThat(inline.consumerTransactionsPerMessage()).isZero();
    Row queued = report.row("call-queued").orElseThrow();
    // the push, its batch, and the clear of its read slot, which consumers batch: one clearing
    // transaction may take the slots of several calls, so fewer than three on a busy machine
    assertThat(queued.commitsPerMessage()).isBetween(2.0, 3.01);
    assertThat(report.row("servers").orElseThrow().consumerTransactionsPerMessage())
        .isLessThanOrEqualTo(1.0 / 16 + 0.05);
  }
}
