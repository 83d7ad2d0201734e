package io.dgen;

import static org.awaitility.Awaitility.await;

import io.dgen.backend.fdb.FdbBackend;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;

/**
 * The program of a child JVM in {@link LimitsKillTest}: it starts two servers naming a concurrency
 * limit (configured by the parent), sends each a message that takes the lock, and holds both
 * permits inside {@code handleLocked} until it is killed.
 */
public final class PermitHolderJvm {

  /** What the child prints once both of its servers are inside {@code handleLocked}. */
  static final String HOLDING = "HOLDING";

  private PermitHolderJvm() {}

  /**
   * Runs the holders.
   *
   * @param args the cluster file, the tenant's path element under {@code "test"}, the limit's name
   *     and the lock timeout in milliseconds
   * @throws IOException if standard input fails
   */
  public static void main(String[] args) throws IOException {
    try (FdbBackend backend = FdbBackend.open(Path.of(args[0]));
        DGen dgen = DGen.builder(backend).build()) {
      Tenant tenant = dgen.tenant("test", args[1]);
      LimitsTest.Probe probe = new LimitsTest.Probe();
      probe.block = new CountDownLatch(1); // never released: the JVM is killed holding
      for (String id : new String[] {"k0", "k1"}) {
        dgen.<LimitsTest.Applied, Object>start(
                new LimitsTest.Paced(probe),
                id,
                StartOptions.builder(tenant)
                    .concurrencyLimit(args[2])
                    .lockTimeout(Duration.ofMillis(Long.parseLong(args[3])))
                    .build())
            .cast(-1);
      }
      await().atMost(Duration.ofSeconds(60)).until(() -> probe.inside.get() == 2);
      System.out.println(HOLDING);
      System.out.flush();
      while (System.in.read() != -1) {
        // the parent kills this process
      }
    }
  }
}
