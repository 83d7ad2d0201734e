package io.dgen.benchmarks;

import io.dgen.DGen;
import io.dgen.HostOptions;
import io.dgen.Tenant;
import io.dgen.backend.CountingBackend;
import io.dgen.backend.fdb.FdbBackend;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;

/**
 * The program of a child JVM of the multi-JVM scale-out rows ({@link ScaleOutScenarios}): a runtime
 * on FoundationDB that hosts {@link LedgerServer} in one tenant until its standard input ends (or
 * it is killed).
 *
 * <p>Protocol, one line each: it prints {@code READY <memberId>} once it hosts; to the line {@code
 * COUNTS} on its input it answers {@code COUNTS <applied> <committed> <retried>}: credits applied
 * here, and its backend's writing commits and retried attempts so far (every transaction of the
 * runtime: consumer batches, and the few of the heartbeat and the placement).
 */
public final class HostingMember {

  static final String READY = "READY ";
  static final String COUNTS = "COUNTS";

  private HostingMember() {}

  /**
   * Runs the hosting runtime.
   *
   * @param args the cluster file, the top-level directory, the tenant's name under it, the bucket
   *     count, the lease in milliseconds, and {@code consumeK}
   * @throws IOException if standard input or output fails
   */
  public static void main(String[] args) throws IOException {
    Progress applied = new Progress();
    try (CountingBackend backend =
            CountingBackend.wrap(FdbBackend.builder().clusterFile(Path.of(args[0])).open());
        DGen dgen =
            DGen.builder(backend)
                .buckets(Integer.parseInt(args[3]))
                .leaseDuration(Duration.ofMillis(Long.parseLong(args[4])))
                .build()) {
      Tenant tenant = dgen.tenant(args[1], args[2]);
      dgen.host(
          LedgerServer.KIND,
          () -> new LedgerServer(applied, dgen.memberId().toString()),
          HostOptions.builder(tenant).consumeK(Integer.parseInt(args[5])).build());
      System.out.println(READY + dgen.memberId());
      System.out.flush();
      BufferedReader in =
          new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
      String line;
      while ((line = in.readLine()) != null) {
        if (line.equals(COUNTS)) {
          CountingBackend.Counters c = backend.counters();
          System.out.println(
              COUNTS
                  + " "
                  + applied.applied()
                  + " "
                  + c.transactionsCommitted()
                  + " "
                  + c.transactionsRetried());
          System.out.flush();
        }
      }
    }
  }
}
