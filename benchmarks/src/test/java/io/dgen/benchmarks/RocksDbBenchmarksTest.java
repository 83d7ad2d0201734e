package io.dgen.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.OutputStream;
import java.io.PrintStream;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Keeps {@code --backend rocksdb} working: the rows run with tiny sizes on the RocksDB
 * target, synced, and report the memory backend's counts (same engine, same runtime).
 */
@Timeout(120)
class RocksDbBenchmarksTest {

  @Test
  void castAndCallRows_runOnRocksDb_withTheEnginesCounts() {
    Report report =
        Benchmarks.run(
            Settings.tiny(),
            Target.rocksdb(true),
            Set.of("cast-k1", "cast-k64", "call-inline", "call-queued"),
            new PrintStream(OutputStream.nullOutputStream()));
    assertThat(report.rows())
        .extracting(Row::id)
        .containsExactly("cast-k1", "cast-k64", "call-inline", "call-queued");
    for (Row r : report.rows()) {
      assertThat(r.messages()).as(r.id()).isPositive();
    }
    assertThat(report.row("cast-k1").orElseThrow().consumerTransactionsPerMessage())
        .isBetween(0.99, 1.01);
    assertThat(report.render()).contains("embedded RocksDB (RocksDbBackend)");
  }
}
