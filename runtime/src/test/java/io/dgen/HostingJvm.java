package io.dgen;

import io.dgen.backend.fdb.FdbBackend;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The program of a child JVM in {@link ScaleOutJvmsTest}: a runtime on FoundationDB that hosts
 * {@link Ledger} servers in one tenant, and runs until its standard input ends (or it is killed).
 *
 * <p>It prints {@value #READY} and its member id once it hosts. Before it exits (its input closed)
 * it prints {@value #TOTALS} with the credits it committed and how many of them were strays
 * (committed while the lease, read in the applying transaction, named another member).
 */
public final class HostingJvm {

  static final String READY = "READY ";
  static final String TOTALS = "TOTALS ";

  private HostingJvm() {}

  /**
   * Runs the hosting runtime.
   *
   * @param args the cluster file, the tenant's path element under {@code "scale-out"}, the bucket
   *     count, the lease in milliseconds, and {@code consumeK}
   * @throws IOException if standard input fails
   */
  public static void main(String[] args) throws IOException {
    AtomicLong applied = new AtomicLong();
    AtomicLong strays = new AtomicLong();
    try (FdbBackend backend = FdbBackend.open(Path.of(args[0]));
        DGen dgen =
            DGen.builder(backend)
                .buckets(Integer.parseInt(args[2]))
                .leaseDuration(Duration.ofMillis(Long.parseLong(args[3])))
                .build()) {
      Tenant tenant = dgen.tenant("scale-out", args[1]);
      dgen.host(
          Ledger.KIND,
          () ->
              new Ledger(
                  dgen.memberId(),
                  a -> {
                    applied.incrementAndGet();
                    if (a.stray()) {
                      strays.incrementAndGet();
                    }
                  }),
          HostOptions.builder(tenant).consumeK(Integer.parseInt(args[4])).build());
      System.out.println(READY + dgen.memberId());
      System.out.flush();
      while (System.in.read() != -1) {
        // the parent ends this process by closing the pipe (or kills it)
      }
    }
    System.out.println(TOTALS + applied.get() + " " + strays.get());
    System.out.flush();
  }
}
