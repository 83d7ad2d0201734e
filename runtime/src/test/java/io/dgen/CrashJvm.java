package io.dgen;

import io.dgen.TestServer.Msg;
import io.dgen.backend.rocksdb.RocksDbBackend;
import java.nio.file.Path;
import java.time.Duration;

/**
 * The program of a child JVM in {@link RocksDbCrashTest}: opens the RocksDB data directory, runs
 * the shared {@link TestServer} and sends it messages, one at a time, until it is killed, printing
 * {@code ACK i} once message {@code i} was acknowledged. Message {@code i} of generation {@code g}
 * is {@link #message}{@code (g, i)}; calls in between are not counted.
 */
public final class CrashJvm {

  static final String READY = "READY";
  static final String ACK = "ACK ";

  /** Every fourth message is a lock-mode job, adding 1000; the others are sequence casts. */
  static final int WORK_EVERY = 4;

  private CrashJvm() {}

  static StartOptions options(Tenant tenant) {
    return StartOptions.builder(tenant).lockTimeout(Duration.ofSeconds(1)).build();
  }

  static Msg message(int generation, int i) {
    return i % WORK_EVERY == 0
        ? new TestServer.Work("g" + generation + "-" + i)
        : new TestServer.Seq("g" + generation, seqsUpTo(i));
  }

  /** How many of messages 1..i are sequence casts. */
  static long seqsUpTo(int i) {
    return i - i / WORK_EVERY;
  }

  /**
   * Runs until killed.
   *
   * @param args the data directory and the generation number
   */
  public static void main(String[] args) {
    int generation = Integer.parseInt(args[1]);
    try (RocksDbBackend backend = RocksDbBackend.open(Path.of(args[0]));
        DGen dgen = DGen.builder(backend).build()) {
      Tenant tenant = dgen.tenant("test", "crash");
      ServerRef<Msg> ref =
          dgen.start(new TestServer(new TestServer.Hooks()), null, options(tenant));
      System.out.println(READY);
      System.out.flush();
      for (int i = 1; ; i++) {
        ref.cast(message(generation, i));
        System.out.println(ACK + i);
        System.out.flush();
        if (i % 3 == 0) {
          ref.<Long>call(new TestServer.Get());
        }
      }
    }
  }
}
