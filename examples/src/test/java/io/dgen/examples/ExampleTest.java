package io.dgen.examples;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Runs each example's {@code main} on the memory backend and checks what it prints; {@link
 * FdbExampleTest} runs the same on FoundationDB. The counter also runs twice on one RocksDB data
 * directory, as the README's first command does when run again.
 */
@Timeout(60)
class ExampleTest {

  @FunctionalInterface
  private interface Main {
    void run(String[] args) throws Exception;
  }

  /** The examples' arguments choosing the backend. */
  String[] backendArgs() {
    return new String[] {"--memory"};
  }

  /** The start of the line the examples print to name their backend. */
  String backendBanner() {
    return "backend: in-memory";
  }

  /** Whether the examples can report bytes written (the memory backend's counters). */
  boolean reportsBytesWritten() {
    return true;
  }

  private String run(Main main) throws Exception {
    return run(main, backendArgs());
  }

  private static String run(Main main, String[] args) throws Exception {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    PrintStream original = System.out;
    System.setOut(new PrintStream(bytes, true, StandardCharsets.UTF_8));
    try {
      main.run(args);
    } finally {
      System.setOut(original);
    }
    String out = bytes.toString(StandardCharsets.UTF_8);
    return out;
  }

  @Test
  void counterExample_keepsTheValueAcrossARestart() throws Exception {
    String out = run(CounterExample::main);
    long found = found(out);
    assertThat(out)
        .contains(backendBanner())
        .contains("counter after 1 + 2 + 3:          " + (found + 6))
        .contains("restarted; persisted value + 10:  " + (found + 16));
  }

  /** The README's first command run twice on one data directory: the second run continues. */
  @Test
  void counterExample_onRocksDb_continuesTheCountOnTheNextRun(@TempDir Path dir) throws Exception {
    String[] args = {"--data-dir", dir.resolve("counter-data").toString()};
    String first = run(CounterExample::main, args);
    assertThat(first).contains("backend: embedded RocksDB, data in ");
    assertThat(found(first)).isZero();
    assertThat(first).contains("restarted; persisted value + 10:  16");
    String second = run(CounterExample::main, args);
    assertThat(found(second)).isEqualTo(16);
    assertThat(second)
        .contains("counter after 1 + 2 + 3:          22")
        .contains("restarted; persisted value + 10:  32");
  }

  /**
   * An example that resets or kills its servers runs on storage the user named (a cluster file, a
   * data directory) only with {@code --yes}; without it, it refuses before opening anything.
   */
  @Test
  void anExampleThatResetsItsServers_refusesNamedStorage_withoutYes(@TempDir Path dir)
      throws Exception {
    Path data = dir.resolve("bank-data");
    assertThatThrownBy(() -> run(BankExample::main, new String[] {"--data-dir", data.toString()}))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("tenant examples/bank")
        .hasMessageContaining("--yes");
    assertThat(data).doesNotExist();
    Path clusterFile = dir.resolve("no-such.cluster");
    assertThatThrownBy(
            () ->
                run(ReminderExample::main, new String[] {"--cluster-file", clusterFile.toString()}))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("the cluster file " + clusterFile);

    String out = run(BankExample::main, new String[] {"--data-dir", data.toString(), "--yes"});
    assertThat(out).contains("backend: embedded RocksDB").contains("(conserved)");
  }

  private static long found(String out) {
    Matcher m = Pattern.compile("found on start: +(\\d+)").matcher(out);
    assertThat(m.find()).as(out).isTrue();
    return Long.parseLong(m.group(1));
  }

  @Test
  void bankExample_refusesOverdraftsAndConservesTheTotal() throws Exception {
    String out = run(BankExample::main);
    assertThat(out)
        .contains("opened:   alice 100   bob  50   carol   0   total 150")
        .containsSubsequence(
            "t1 alice -> bob     30",
            "   receipt: alice paid bob 30, balance 70   (post-commit action)",
            "   reply:   done, balance 70",
            "t2 bob   -> carol   60",
            "   receipt: bob paid carol 60, balance 20",
            "   reply:   done, balance 20",
            "t3 carol -> alice  500",
            "   reply:   refused, insufficient funds: balance 60",
            "balances: alice  70   bob  20   carol  60   total 150",
            "dave's balance: refused, no such account: dave (init declined)")
        .containsPattern(
            "100 concurrent transfers from 4 threads: (\\d+) done, \\d+ refused, \\1 receipts")
        .containsPattern("balances: .* total 150 \\(conserved\\)");
  }

  @Test
  void atomicTransferExample_abortsWholeTransfers_andEverySnapshotHoldsTheTotal() throws Exception {
    String out = run(AtomicTransferExample::main);
    assertThat(out)
        .contains("opened:   alice 100   bob  50   carol   0   frozen-dan  10   total 160")
        .containsSubsequence(
            "t1 alice -> bob          30",
            "   done, alice has 70",
            "t2 bob   -> frozen-dan   20",
            "   refused, frozen-dan is frozen; nothing was committed",
            "t3 carol -> alice       500",
            "   refused, insufficient funds: balance 0; nothing was committed",
            "balances: alice  70   bob  80   carol   0   frozen-dan  10   total 160")
        .containsPattern("100 concurrent transfers from 4 threads: \\d+ done, \\d+ refused")
        .containsPattern("auditor: [1-9]\\d* atomic snapshots of every account, 0 with a total")
        .containsPattern("balances: .* total 160 \\(conserved\\)");
  }

  @Test
  void chatRoomExample_editsAndMovesMessages() throws Exception {
    String out = run(ChatRoomExample::main);
    assertThat(out)
        .containsSubsequence(
            "edited m3",
            "  m3 grace  The docs are fixed: the flag is gone.",
            "moved m6 to the top",
            "  m6 grace  Ship it once the docs are fixed.",
            "  m1 ada");
    if (reportsBytesWritten()) {
      assertThat(out)
          .containsPattern("posted 6 messages \\(\\d+ bytes written\\):")
          .containsPattern(
              "bytes written: posting all 6 = \\d+, editing one = \\d+, moving one = \\d+");
    }
  }

  @Test
  void longJobExample_answersStatusWhileLockedAndQueuesTheRest() throws Exception {
    String out = run(LongJobExample::main);
    assertThat(out)
        .containsPattern("status while locked \\(priority call\\): +running report")
        .containsPattern("note cast while locked; queue length: +1 \\(waits for the lock\\)")
        .containsPattern("start call answered after \\d+ ms: +report: 4 steps done")
        .containsPattern("status after the release: +idle, 4 of 4 steps done")
        .containsSubsequence(
            "  1. started report",
            "  2. finished report",
            "  3. note: asked for the numbers while the report ran");
  }

  @Test
  void deadLetterExample_deadLettersThenRequeues() throws Exception {
    String out = run(DeadLetterExample::main);
    assertThat(out)
        .containsSubsequence(
            "  attempt 1 at",
            "  attempt 2 at",
            "  attempt 3 at",
            "handleDeadLetter: Import[line=2|\"pears] after 3 attempts",
            "imported: [1|apples, 3|plums]",
            "dead letters: 1",
            "  attempts   3",
            "  last error java.lang.IllegalArgumentException: unbalanced quote in 2|\"pears",
            "fixed the parser; requeued at the head: true",
            "imported: [1|apples, 3|plums, 2|\"pears]   dead letters: 0")
        .doesNotContain("attempt 4");
  }

  @Test
  void idempotentOrderExample_chargesOncePerKeyAndServesReportsAcrossNodes() throws Exception {
    String out = run(IdempotentOrderExample::main);
    assertThat(out)
        .contains(backendBanner())
        .containsSubsequence(
            "POST /orders key=7f3c-a1  -> 201 receipt #1: alice charged 4000",
            "POST /orders key=7f3c-a1  -> 201 receipt #1: alice charged 4000",
            "4 concurrent retries of key=9b2e-c4 -> [201 receipt #2: bob charged 2500]",
            "POST /reports             -> 202 /calls/",
            "-> 200 report: 2 orders, 6500 charged",
            "GET again                 -> 200 report: 2 orders, 6500 charged",
            "POST /orders key=7f3c-a1  -> 201 receipt #1: alice charged 4000   (still charged once)");
  }

  @Test
  void reminderExample_firesStoredRemindersAfterARestart() throws Exception {
    String out = run(ReminderExample::main);
    assertThat(out)
        .contains(backendBanner())
        .containsSubsequence(
            "scheduled: stretch in 300 ms, standup in 10 min, water in 500 ms x3",
            "cancelled standup: true",
            "lunch in an hour, then cancelled: true",
            "closing the runtime; the reminders are stored in the database",
            "restarted; went off: [stretch, water, water, water]");
  }

  @Test
  void shardedAccountsExample_spreadsAccountsOverThreeRuntimes_andConservesTheTotalWhenOneLeaves()
      throws Exception {
    String out = run(ShardedAccountsExample::main);
    assertThat(out)
        .contains(backendBanner())
        .containsSubsequence(
            "three runtimes host kind \"account\" over 256 buckets",
            "buckets held:  {runtime 0=",
            "opened 300 accounts with 100 each through refs in all three runtimes",
            "600 concurrent transfers:",
            "runtime 2 leaves; the others take its buckets at once",
            "buckets held:  {runtime 0=",
            "total across 300 accounts: 30000 (conserved: true)");
    assertThat(out)
        .containsPattern("buckets held:  \\{runtime 0=\\d+, runtime 1=\\d+, runtime 2=\\d+}");
  }
}
