package io.dgen.chaos;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dgen.DGen;
import io.dgen.ServerRef;
import io.dgen.Tenant;
import io.dgen.admin.DGenAdmin;
import io.dgen.admin.TenantAdmin;
import io.dgen.backend.memory.MemoryBackend;
import io.dgen.chaos.ChaosServer.Apply;
import io.dgen.chaos.ChaosServer.Msg;
import io.dgen.chaos.Journal.Outcome;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The chaos test's invariants can fail: a handful of operations on the memory backend, to started
 * and hosted servers (one of which never gets a message), verify clean, and each kind of damage to
 * what the cluster holds or what the journal says (an application doubled or lost, a transfer
 * credited twice, an atomic transfer's debit doubled, a cancelled timer that fired, an application
 * nobody sent, a call that outlived its timeout) is reported under its invariant, with the id.
 */
class VerifierTest {

  @TempDir Path dir;

  @Test
  void cleanRun_holds_andEveryKindOfDamage_isReportedWithItsId() throws Exception {
    MemoryBackend backend = MemoryBackend.builder().build();
    try (DGen dgen = DGen.builder(backend).build()) {
      Tenant tenant = dgen.tenant("chaos", "verifier");
      List<ServerRef<Msg>> refs = ChaosServers.host(dgen, tenant, (e, id) -> {});
      Path file = dir.resolve("T-g0.journal");
      try (Journal journal = new Journal(file)) {
        send(journal, "CAST", "c1", 0, "", () -> refs.get(0).cast(new Apply("c1")));
        send(
            journal,
            "CAST_ALL",
            "c2",
            1,
            "c2.0,c2.1",
            () -> refs.get(1).castAll(List.of(new Apply("c2.0"), new Apply("c2.1"))));
        send(
            journal,
            "TRANSFER",
            "t1",
            2,
            "5:1000",
            () -> refs.get(2).cast(new ChaosServer.Transfer("t1", 5, 1000)));
        send(journal, "KEYED_CAST", "k1", 4, "", () -> refs.get(4).cast(new Apply("k1"), "k1"));
        send(
            journal,
            "TIMER",
            "tm1",
            0,
            "0:-1",
            () -> refs.get(0).castAfter(new Apply("tm1"), Duration.ZERO));
        send(journal, "POISON", "p1", 1, "", () -> refs.get(1).cast(new ChaosServer.Poison("p1")));
        send(journal, "POISON", "p2", 5, "", () -> refs.get(5).cast(new ChaosServer.Poison("p2")));
        journal.sent("CALL", "call1", 6, "2000");
        String reply = refs.get(6).call(new ChaosServer.Ask("call1"), Duration.ofSeconds(10));
        journal.result("call1", reply.equals("call1") ? Outcome.OK : Outcome.WRONG, reply);
        // between two hosted servers their first messages (k1, call1) created
        send(
            journal,
            "ATOMIC",
            "a1",
            4,
            "6:700",
            () ->
                dgen.transact(
                    tenant,
                    tx -> {
                      tx.call(refs.get(4), new ChaosServer.Take("a1", 700));
                      return tx.call(refs.get(6), new ChaosServer.Give("a1", 700));
                    }));
      }
      TenantAdmin admin = new DGenAdmin(backend).tenant("chaos", "verifier").orElseThrow();
      await().atMost(Duration.ofSeconds(30)).until(() -> Verifier.settled(admin));

      List<Journal.Line> lines = Journal.read(List.of(file));
      Verifier.Verdict clean = new Verifier(backend, tenant, admin).verify(lines);
      assertThat(clean.holds()).as("%s", clean.violations()).isTrue();
      assertThat(clean.counts()).containsEntry("dead letters", 2L);

      // the damage
      add(backend, tenant, "c1"); // a cast applied twice
      add(backend, tenant, "k1"); // a keyed cast applied twice
      add(backend, tenant, "t1/credit"); // a transfer credited twice
      add(backend, tenant, "a1"); // an atomic transfer's debit applied twice, its credit once
      add(backend, tenant, "ghost"); // applied, never sent
      List<Journal.Line> damaged = new ArrayList<>(lines);
      long now = System.currentTimeMillis();
      damaged.add(new Journal.Line(now, "S", "lost", List.of("CAST", "0"), "test"));
      damaged.add(
          new Journal.Line(now, "R", "lost", List.of("OK"), "test")); // acked, never applied
      damaged.add(new Journal.Line(now, "C", "tm1", List.of("true"), "test")); // cancelled, fired
      damaged.add(new Journal.Line(now, "E", "call1", List.of(Workload.OVERRAN), "test"));

      Verifier.Verdict verdict = new Verifier(backend, tenant, admin).verify(damaged);
      assertThat(verdict.violations().get("cast exactly once"))
          .anyMatch(v -> v.startsWith("c1 "))
          .anyMatch(v -> v.startsWith("lost "));
      assertThat(verdict.violations().get("keyed exactly once")).anyMatch(v -> v.startsWith("k1 "));
      assertThat(verdict.violations().get("conserved"))
          .anyMatch(v -> v.startsWith("t1 "))
          .anyMatch(v -> v.startsWith("a1 "));
      assertThat(verdict.violations().get("atomic exactly once"))
          .anyMatch(v -> v.startsWith("a1 "));
      assertThat(verdict.violations().get("timer exactly once"))
          .anyMatch(v -> v.startsWith("tm1 "));
      assertThat(verdict.violations().get("nothing invented"))
          .anyMatch(v -> v.startsWith("ghost "));
      assertThat(verdict.violations().get("calls end by their timeout"))
          .anyMatch(v -> v.startsWith("call1 "));
    }
  }

  private static void send(
      Journal journal, String op, String id, int server, String detail, Runnable send) {
    journal.sent(op, id, server, detail);
    send.run();
    journal.result(id, Outcome.OK, "");
  }

  private static void add(MemoryBackend backend, Tenant tenant, String id) {
    backend.run(
        tx -> {
          tx.add(ChaosServer.key(tenant, ChaosServer.APPLIED, id), 1);
          return null;
        });
  }
}
