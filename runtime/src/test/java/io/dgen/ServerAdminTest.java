package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.TestServer.Add;
import io.dgen.TestServer.Boom;
import io.dgen.TestServer.FailFirst;
import io.dgen.TestServer.Init;
import io.dgen.TestServer.Msg;
import io.dgen.TestServer.Work;
import io.dgen.admin.DGenAdmin;
import io.dgen.admin.ServerAdmin;
import io.dgen.admin.TenantAdmin;
import io.dgen.admin.Tuids;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The admin API over servers a real runtime filled: read without the servers' classes' help. */
class ServerAdminTest extends RuntimeTestBase {

  private static final Tuple ORDERS = Tuple.from("orders", 1L);

  private ServerRef<Msg> startOrders(boolean consume) {
    return dgen.start(
        new TestServer(hooks),
        new Init(0, ORDERS, null),
        StartOptions.builder(tenant).deadLetterThreshold(1).consume(consume).build());
  }

  private TenantAdmin tenantAdmin() {
    return new DGenAdmin(backend).tenant(tenant.path().toArray(String[]::new)).orElseThrow();
  }

  private ServerAdmin orders() {
    return tenantAdmin().server(ORDERS).orElseThrow();
  }

  @Test
  void startIndexesServers_andKillRemovesThem() {
    ServerRef<Msg> a = startOrders(true);
    ServerRef<Msg> b = start();

    assertThat(new DGenAdmin(backend).tenants()).contains(tenant.path());
    assertThat(tenantAdmin().servers())
        .extracting(e -> Tuids.format(e.tuid()), TenantAdmin.ServerEntry::behaviour)
        .containsExactlyInAnyOrder(
            org.assertj.core.groups.Tuple.tuple(
                "(\"dgen_server\", \"io.dgen.TestServer\")", "io.dgen.TestServer"),
            org.assertj.core.groups.Tuple.tuple("(\"orders\", 1)", "io.dgen.TestServer"));

    b.kill("test");
    orders().kill();

    assertThat(tenantAdmin().servers()).isEmpty();
    assertThat(tenantAdmin().server(ORDERS)).isEmpty();
    // the admin's kill (no ServerRef) stops the server's processes too, as one in another runtime
    await().atMost(Duration.ofSeconds(5)).until(() -> !a.isAlive());
  }

  @Test
  void stateQueueAndDeadLetters_decodeWithoutTheClasses() {
    ServerRef<Msg> ref = startOrders(true);
    ref.cast(new Add(5));
    ref.cast(new Boom("bad"));
    ref.cast(new FailFirst("f", 1));
    await().atMost(Duration.ofSeconds(30)).until(() -> orders().deadLetterCount() == 2);
    awaitTotal(ref, 5);

    ServerAdmin admin = orders();
    assertThat(admin.behaviour()).hasValue("io.dgen.TestServer");
    assertThat(admin.state().orElseThrow().get("total").asLong()).isEqualTo(5);
    List<ServerAdmin.DeadLetterEntry> dead = admin.deadLetters();
    assertThat(dead)
        .extracting(d -> d.item().type())
        .containsExactly("io.dgen.TestServer$Boom", "io.dgen.TestServer$FailFirst");
    assertThat(dead.get(0).item().message().get("why").asString()).isEqualTo("bad");
    assertThat(dead.get(0).error()).contains("boom: bad");
    assertThat(dead.get(0).item().kind()).isEqualTo("cast");

    assertThat(admin.purgeDeadLetter(dead.get(0).id())).isTrue();
    assertThat(admin.purgeDeadLetter(dead.get(0).id())).isFalse();
    assertThat(admin.requeueDeadLetters()).isEqualTo(1);
    awaitTotal(ref, 6); // the re-queued FailFirst ran again, with its failure count cleared
    assertThat(admin.deadLetterCount()).isZero();
    assertThatThrownBy(() -> admin.requeueDeadLetter("xyz"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("not a dead letter id");
  }

  @Test
  void peekShowsQueuedItems_inOrder() {
    ServerRef<Msg> ref = startOrders(false);
    ref.castAll(List.of(new Add(1), new Boom("later")));

    ServerAdmin admin = orders();
    assertThat(admin.queueLength()).isEqualTo(2);
    assertThat(admin.peek(1)).hasSize(1);
    assertThat(admin.peek(10))
        .extracting(ServerAdmin.QueuedItem::type, i -> i.message().toString())
        .containsExactly(
            org.assertj.core.groups.Tuple.tuple("io.dgen.TestServer$Add", "{\"n\":1}"),
            org.assertj.core.groups.Tuple.tuple("io.dgen.TestServer$Boom", "{\"why\":\"later\"}"));
    assertThat(admin.lock()).isEmpty();
  }

  @Test
  void lockShowsItsHolder_andAge() throws Exception {
    CountDownLatch gate = new CountDownLatch(1);
    hooks.lockGate = gate;
    try {
      ServerRef<Msg> ref = startOrders(true);
      ref.cast(new Work("w"));
      assertThat(hooks.lockEntered.await(10, TimeUnit.SECONDS)).isTrue();
      Instant later = Instant.now().plusSeconds(60);
      ServerAdmin admin =
          new DGenAdmin(backend, Clock.fixed(later, ZoneOffset.UTC))
              .tenant(tenant.path().toArray(String[]::new))
              .orElseThrow()
              .server(ORDERS)
              .orElseThrow();
      ServerAdmin.LockHolder holder = admin.lock().orElseThrow();
      assertThat(holder.item().type()).isEqualTo("io.dgen.TestServer$Work");
      assertThat(holder.age()).isBetween(Duration.ofSeconds(50), Duration.ofSeconds(61));
      assertThat(holder.token()).isNotEmpty();
    } finally {
      gate.countDown();
    }
  }

  @Test
  void tuids_parseStrictly_andRoundTrip() {
    Tuple t = Tuids.parse(" ( \"a\\\"b\" , -42, true, null, (\"x\") ) ");
    assertThat((Object) t).isEqualTo(Tuple.from("a\"b", -42L, true, null, Tuple.from("x")));
    assertThat((Object) Tuids.parse(Tuids.format(t))).isEqualTo(t);
    for (String bad :
        List.of(
            "",
            "orders",
            "(\"a\",)",
            "('a')",
            "(1.5)",
            "(\"a\") x",
            "(\"a\"",
            "(99999999999999999999)")) {
      assertThatThrownBy(() -> Tuids.parse(bad))
          .as(bad)
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageStartingWith("malformed tuid");
    }
  }
}
