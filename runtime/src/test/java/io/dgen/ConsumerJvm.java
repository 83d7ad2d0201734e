package io.dgen;

import io.dgen.backend.fdb.FdbBackend;
import java.io.IOException;
import java.nio.file.Path;

/**
 * The program of a child JVM in {@link SeveralJvmsTest}: one consuming process of the shared {@link
 * TestServer} on FoundationDB, which runs until its standard input ends (or the JVM is killed).
 */
public final class ConsumerJvm {

  /** What the child prints once its process consumes. */
  static final String READY = "READY";

  /** What the child prints once its process stopped (the server was killed elsewhere). */
  static final String STOPPED = "STOPPED";

  private ConsumerJvm() {}

  /**
   * Runs the consumer.
   *
   * @param args the cluster file, the tenant's path element under {@code "test"}, and {@code
   *     consumeK}
   * @throws IOException if standard input fails
   */
  public static void main(String[] args) throws IOException {
    try (FdbBackend backend = FdbBackend.open(Path.of(args[0]));
        DGen dgen = DGen.builder(backend).build()) {
      Tenant tenant = dgen.tenant("test", args[1]);
      ProcessRef<TestServer.Msg> ref =
          dgen.start(
              new TestServer(new TestServer.Hooks()),
              null,
              StartOptions.builder(tenant).consumeK(Integer.parseInt(args[2])).build());
      ref.termination()
          .whenComplete(
              (v, err) -> {
                System.out.println(STOPPED);
                System.out.flush();
              });
      System.out.println(READY);
      System.out.flush();
      while (System.in.read() != -1) {
        // the parent ends this process by closing the pipe (or kills it)
      }
    }
  }
}
