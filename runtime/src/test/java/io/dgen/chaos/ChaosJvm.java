package io.dgen.chaos;

import io.dgen.DGen;
import io.dgen.DGenListener;
import io.dgen.LockFencedException;
import io.dgen.ServerRef;
import io.dgen.Tenant;
import io.dgen.backend.fdb.FdbBackend;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CountDownLatch;

/**
 * The program of a chaos client JVM: it consumes every chaos server ({@link ChaosServers#host}) and
 * runs the {@link Workload} until the parent writes {@value #STOP_WORKLOAD} to its standard input
 * (or a safety deadline passes), then keeps consuming until its standard input ends (the parent's
 * signal to exit; also what happens when the parent dies). A generation after the first starts by
 * retrying the keyed operations its predecessors (killed) left unfinished.
 *
 * <p>Prints {@value #READY} once its consumers run and {@value #DONE} once its workload ended.
 */
public final class ChaosJvm {

  static final String READY = "CHAOS-READY";
  static final String DONE = "CHAOS-DONE";
  static final String STOP_WORKLOAD = "stop-workload";
  static final int WORKER_THREADS = 3;

  private ChaosJvm() {}

  /**
   * Runs the client.
   *
   * @param args the cluster file, the tenant's directory path ({@code /}-separated), the client's
   *     name, its generation, the workload's safety deadline (epoch millis), the journal directory,
   *     the seed
   */
  public static void main(String[] args) throws Exception {
    Path clusterFile = Path.of(args[0]);
    String[] tenantPath = args[1].split("/");
    String name = args[2];
    int generation = Integer.parseInt(args[3]);
    long deadline = Long.parseLong(args[4]);
    Path journals = Path.of(args[5]);
    long seed = Long.parseLong(args[6]);

    CountDownLatch stopWorkload = new CountDownLatch(1);
    CountDownLatch stop = new CountDownLatch(1);
    Thread stdin =
        new Thread(
            () -> {
              try (BufferedReader in =
                  new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                for (String line = in.readLine(); line != null; line = in.readLine()) {
                  if (line.equals(STOP_WORKLOAD)) {
                    stopWorkload.countDown();
                  }
                }
              } catch (IOException ignored) {
                // treated as the end
              }
              // the parent ends this client by closing the pipe (or dies, which closes it)
              stopWorkload.countDown();
              stop.countDown();
            },
            "chaos-stdin");
    stdin.setDaemon(true);
    stdin.start();

    long jvmStart = java.lang.management.ManagementFactory.getRuntimeMXBean().getStartTime();
    long mainStart = System.currentTimeMillis();
    List<Journal.Line> earlier = Journal.read(earlierJournals(journals, name, generation));
    try (Journal journal = new Journal(journals.resolve(journalName(name, generation)));
        ClientMetrics metrics = new ClientMetrics(journal);
        FdbBackend backend = FdbBackend.open(clusterFile);
        DGen dgen =
            DGen.builder(backend)
                .meterRegistry(metrics.registry())
                .listener(
                    new DGenListener() {
                      @Override
                      public void lockFenced(ServerRef<?> server, LockFencedException error) {
                        journal.event(server.tuid().toString().replace(' ', '_'), "fenced");
                      }
                    })
                .build()) {
      long opened = System.currentTimeMillis();
      Tenant tenant = dgen.tenant(tenantPath);
      List<ServerRef<ChaosServer.Msg>> refs =
          ChaosServers.host(dgen, tenant, (event, id) -> journal.event(id, event));
      long now = System.currentTimeMillis();
      say(
          READY
              + " after "
              + (now - jvmStart)
              + " ms: JVM "
              + (mainStart - jvmStart)
              + ", backend "
              + (opened - mainStart)
              + ", servers "
              + (now - opened));
      Workload workload =
          new Workload(refs, body -> dgen.transact(tenant, body), journal, name + generation, seed);
      Thread retries = workload.retryUnfinished(earlier);
      workload.run(WORKER_THREADS, deadline, () -> stopWorkload.getCount() == 0);
      retries.join();
      say(DONE);
      stop.await();
    }
  }

  static String journalName(String name, int generation) {
    return name + "-g" + generation + ".journal";
  }

  private static List<Path> earlierJournals(Path dir, String name, int generation) {
    return java.util.stream.IntStream.range(0, generation)
        .mapToObj(g -> dir.resolve(journalName(name, g)))
        .filter(Files::isRegularFile)
        .toList();
  }

  private static void say(String line) {
    System.out.println(line);
    System.out.flush();
  }
}
