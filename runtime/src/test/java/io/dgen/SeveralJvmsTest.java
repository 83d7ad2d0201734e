package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dgen.TestServer.Msg;
import io.dgen.TestServer.Seq;
import io.dgen.admin.ServerControl;
import io.dgen.backend.fdb.FdbBackend;
import io.dgen.backend.fdb.FdbTestEnvironment;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Several JVMs on one FoundationDB cluster, the promise the memory backend cannot test: processes
 * of one server in different JVMs coordinate only through transactions, and a JVM killed in the
 * middle of its work loses nothing and doubles nothing.
 */
@ExtendWith(FdbTestEnvironment.class)
@Timeout(value = 15, unit = TimeUnit.MINUTES)
class SeveralJvmsTest {

  private static final int CONSUMER_JVMS = 3;
  private static final int PUBLISHERS = 4;
  private static final int PER_PUBLISHER = 2_500;
  private static final int MESSAGES = PUBLISHERS * PER_PUBLISHER;
  private static final int CONSUME_K = 8;

  @Test
  void threeConsumerJvms_oneKilledMidRun_applyEveryCastOnceInEachPublishersOrder()
      throws Exception {
    String tenantId = UUID.randomUUID().toString();
    List<Process> children = new ArrayList<>();
    try (FdbBackend backend = FdbTestEnvironment.openBackend();
        DGen dgen = DGen.builder(backend).build()) {
      Tenant tenant = dgen.tenant("test", tenantId);
      ServerRef<Msg> publisher =
          dgen.start(
              new TestServer(new TestServer.Hooks()),
              null,
              StartOptions.builder(tenant).consume(false).build());
      for (int i = 0; i < CONSUMER_JVMS; i++) {
        children.add(startConsumerJvm(tenantId, i));
      }
      for (int i = 0; i < CONSUMER_JVMS; i++) {
        Path out = output(i);
        await("consumer JVM " + i + " ready")
            .atMost(Duration.ofSeconds(60))
            .until(() -> Files.readString(out).contains(ConsumerJvm.READY));
      }

      ExecutorService pool = Executors.newFixedThreadPool(PUBLISHERS);
      try {
        CountDownLatch go = new CountDownLatch(1);
        List<Future<?>> sent = new ArrayList<>();
        for (int p = 0; p < PUBLISHERS; p++) {
          String name = "p" + p;
          sent.add(
              pool.submit(
                  () -> {
                    go.await();
                    for (long seq = 1; seq <= PER_PUBLISHER; seq++) {
                      publisher.cast(new Seq(name, seq));
                    }
                    return null;
                  }));
        }
        go.countDown();
        // Mid-run: the three JVMs are racing for batches when one of them dies without warning.
        await("a fifth of the messages applied")
            .atMost(RuntimeTestBase.BULK_WAIT)
            .until(() -> total(publisher) >= MESSAGES / 5);
        Process victim = children.get(0);
        victim.destroyForcibly(); // SIGKILL: no shutdown hook, no clean stop
        assertThat(victim.waitFor(30, TimeUnit.SECONDS)).isTrue();
        assertThat(total(publisher)).as("killed before the end").isLessThan(MESSAGES);
        for (Future<?> f : sent) {
          f.get(RuntimeTestBase.BULK_WAIT.toSeconds(), TimeUnit.SECONDS);
        }
      } finally {
        pool.shutdownNow();
      }

      await("every message applied")
          .atMost(RuntimeTestBase.BULK_WAIT)
          .until(() -> total(publisher) >= MESSAGES);
      TestServer.State s = publisher.priorityCall(new TestServer.GetState());
      assertThat(s.total()).as("applied, each exactly once").isEqualTo(MESSAGES);
      assertThat(s.outOfOrder()).as("gaps, duplicates or reorderings").isZero();
      assertThat(s.lastSeq())
          .containsOnlyKeys("p0", "p1", "p2", "p3")
          .allSatisfy((p, last) -> assertThat(last).isEqualTo(PER_PUBLISHER));
      assertThat(ServerControl.of(publisher).queueLength()).isZero();
      for (int i = 1; i < CONSUMER_JVMS; i++) {
        assertThat(children.get(i).isAlive()).as("surviving consumer JVM %s", i).isTrue();
      }
    } finally {
      stop(children);
      try (FdbBackend backend = FdbTestEnvironment.openBackend()) {
        backend.removeDirectory("test", tenantId);
      }
    }
  }

  @Test
  void aKillInOneJvm_stopsTheServersConsumerInAnother_withinSeconds() throws Exception {
    String tenantId = UUID.randomUUID().toString();
    List<Process> children = new ArrayList<>();
    try (FdbBackend backend = FdbTestEnvironment.openBackend();
        DGen dgen = DGen.builder(backend).build()) {
      Tenant tenant = dgen.tenant("test", tenantId);
      ServerRef<Msg> here =
          dgen.start(
              new TestServer(new TestServer.Hooks()),
              null,
              StartOptions.builder(tenant).consume(false).build());
      children.add(startConsumerJvm(tenantId, CONSUMER_JVMS));
      Path out = output(CONSUMER_JVMS);
      await("consumer JVM ready")
          .atMost(Duration.ofSeconds(60))
          .until(() -> Files.readString(out).contains(ConsumerJvm.READY));
      here.cast(new TestServer.Add(1));
      await("consumed in the other JVM")
          .atMost(Duration.ofSeconds(30))
          .until(() -> ServerControl.of(here).queueLength() == 0);

      ServerControl.of(here).kill("test");

      await("the other JVM's process stopped")
          .atMost(Duration.ofSeconds(10))
          .until(() -> Files.readString(out).contains(ConsumerJvm.STOPPED));
      var root = tenant.subspace().subspace(here.tuid());
      List<io.dgen.backend.KeyValue> rows =
          backend.run(tx -> tx.getRange(root.range().begin, root.range().end));
      assertThat(rows).isEmpty();
    } finally {
      stop(children);
      try (FdbBackend backend = FdbTestEnvironment.openBackend()) {
        backend.removeDirectory("test", tenantId);
      }
    }
  }

  private static long total(ServerRef<Msg> ref) {
    return ref.<Long>priorityCall(new TestServer.Get());
  }

  /** A JVM with this test's class path running {@link ConsumerJvm}; its output goes to a file. */
  private static Process startConsumerJvm(String tenantId, int index) throws IOException {
    return FdbChildJvm.start(
        ConsumerJvm.class, output(index), List.of(), tenantId, Integer.toString(CONSUME_K));
  }

  private static Path output(int index) {
    return Path.of("target", "several-jvms", "consumer-" + index + ".log");
  }

  /** Ends the surviving children by closing their input, and kills any that do not exit. */
  private static void stop(List<Process> children) throws InterruptedException {
    for (Process child : children) {
      try {
        child.getOutputStream().close();
      } catch (IOException ignored) {
        // already gone
      }
    }
    for (Process child : children) {
      if (!child.waitFor(30, TimeUnit.SECONDS)) {
        child.destroyForcibly();
      }
    }
  }
}
