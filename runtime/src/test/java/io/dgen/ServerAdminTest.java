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
import io.dgen.admin.ServerControl;
import io.dgen.admin.TenantAdmin;
import io.dgen.admin.Tuids;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The admin API over servers a real runtime filled: read without the servers' classes' help. */
class ServerAdminTest extends RuntimeTestBase {

  private static final Tuple ORDERS = Tuple.from("orders", 1L);

  private ProcessRef<Msg> startOrders(boolean consume) {
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
    ProcessRef<Msg> a = startOrders(true);
    ServerRef<Msg> b = start();

    assertThat(new DGenAdmin(backend).tenants()).contains(tenant.path());
    assertThat(tenantAdmin().servers())
        .extracting(e -> Tuids.format(e.tuid()), TenantAdmin.ServerEntry::behaviour)
        .containsExactlyInAnyOrder(
            org.assertj.core.groups.Tuple.tuple(
                "(\"dgen_server\", \"io.dgen.TestServer\")", "io.dgen.TestServer"),
            org.assertj.core.groups.Tuple.tuple("(\"orders\", 1)", "io.dgen.TestServer"));

    ServerControl.of(b).kill("test");
    orders().kill();

    assertThat(tenantAdmin().servers()).isEmpty();
    assertThat(tenantAdmin().server(ORDERS)).isEmpty();
    // the admin's kill (no ServerRef) stops the server's processes too, as one in another runtime
    await().atMost(Duration.ofSeconds(5)).until(() -> !a.isAlive());
  }

  @Test
  void stateQueueAndDeadLetters_decodeWithoutTheClasses() {
    ProcessRef<Msg> ref = startOrders(true);
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
    ProcessRef<Msg> ref = startOrders(false);
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
      ProcessRef<Msg> ref = startOrders(true);
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

  @Test
  void tuidPrefixes_matchWhatWasTyped() {
    Tuple orders = Tuple.from("orders", 42L);
    Tuple alice = Tuple.from("carts", "alice");
    assertThat(Tuids.prefix("  ").isAll()).isTrue();
    assertThat(Tuids.prefix("ord").matches(orders)).isTrue();
    assertThat(Tuids.prefix("ord").matches(alice)).isFalse();
    assertThat(Tuids.prefix("(\"orders\"").matches(orders)).isTrue();
    assertThat(Tuids.prefix("(\"orders\", 42)").matches(orders)).isTrue();
    assertThat(Tuids.prefix("(\"orders\", 4").matches(orders)).isFalse(); // integers are whole
    assertThat(Tuids.prefix("(\"carts\", \"al").matches(alice)).isTrue();
    assertThat(Tuids.prefix("(\"carts\", \"bo").matches(alice)).isFalse();
    assertThat(Tuids.prefix("(\"a\\u00").matches(Tuple.from("a\u0000b"))).isTrue();
    assertThat(Tuids.prefix("a\u0000").matches(Tuple.from("a\u0000b"))).isTrue();
    assertThat(Tuids.prefix("a\u0000").matches(Tuple.from("a"))).isFalse();
    for (String bad : List.of("(\"a\") x", "('a", "(\"a\" 1", "(tru")) {
      assertThatThrownBy(() -> Tuids.prefix(bad))
          .as(bad)
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageStartingWith("malformed tuid");
    }
  }

  @Test
  void serverPages_followTheirCursor_withinAPrefix() {
    for (int i = 0; i < 7; i++) {
      dgen.start(
          new TestServer(hooks),
          new Init(0, Tuple.from("page", (long) i), null),
          StartOptions.builder(tenant).consume(false).build());
    }
    startOrders(false);
    TenantAdmin t = tenantAdmin();
    List<String> seen = new java.util.ArrayList<>();
    Tuple after = null;
    int pages = 0;
    do {
      TenantAdmin.ServerPage page = t.servers(Tuids.prefix("(\"page\""), after, 3);
      page.servers().forEach(e -> seen.add(Tuids.format(e.tuid())));
      after = page.next();
      pages++;
    } while (after != null);
    assertThat(pages).isEqualTo(3);
    assertThat(seen)
        .containsExactly(
            "(\"page\", 0)",
            "(\"page\", 1)",
            "(\"page\", 2)",
            "(\"page\", 3)",
            "(\"page\", 4)",
            "(\"page\", 5)",
            "(\"page\", 6)");
    assertThat(t.servers(Tuids.Prefix.ALL, Tuple.from("page", 6L), 10).servers()).isEmpty();
    assertThat(t.servers(Tuids.Prefix.ALL, null, 1).servers())
        .extracting(e -> Tuids.format(e.tuid()))
        .containsExactly("(\"orders\", 1)");
    assertThatThrownBy(() -> t.servers(Tuids.Prefix.ALL, null, 0))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> t.servers(Tuids.Prefix.ALL, null, TenantAdmin.MAX_PAGE + 1))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void summaries_showCountersHeadDeadLettersAndLock() throws Exception {
    ServerRef<Msg> idle =
        dgen.start(
            new TestServer(hooks),
            new Init(0, Tuple.from("idle"), null),
            StartOptions.builder(tenant).consume(false).build());
    idle.castAll(List.of(new Add(1), new Add(2), new Add(3)));
    CountDownLatch gate = new CountDownLatch(1);
    hooks.lockGate = gate;
    try {
      ProcessRef<Msg> ref = startOrders(true);
      ref.cast(new Boom("x"));
      await().atMost(Duration.ofSeconds(30)).until(() -> orders().deadLetterCount() == 1);
      ref.cast(new Work("w"));
      assertThat(hooks.lockEntered.await(10, TimeUnit.SECONDS)).isTrue();
      ref.cast(new Add(1));

      TenantAdmin.SummaryPage page = tenantAdmin().summaries(Tuids.Prefix.ALL, null, 10);
      assertThat((Object) page.next()).isNull();
      assertThat(page.servers())
          .extracting(
              x -> Tuids.format(x.tuid()),
              TenantAdmin.ServerSummary::queueLength,
              TenantAdmin.ServerSummary::hasDeadLetters,
              x -> x.lockedSince().isPresent(),
              x -> x.oldestVersion().isPresent())
          .containsExactly(
              org.assertj.core.groups.Tuple.tuple("(\"idle\")", 3L, false, false, true),
              org.assertj.core.groups.Tuple.tuple("(\"orders\", 1)", 1L, true, true, true));
      TenantAdmin.ServerSummary orders = page.servers().get(1);
      assertThat(orders.pushed()).isEqualTo(3);
      assertThat(orders.popped()).isEqualTo(2); // Boom dead-lettered, Work took the lock
      // the idle server's items were queued before the orders' last one
      assertThat(page.servers().get(0).oldestVersion().getAsLong())
          .isLessThan(orders.oldestVersion().getAsLong())
          .isLessThanOrEqualTo(orders.readVersion());
      TenantAdmin.ServerSummary one = orders().summary();
      assertThat(one.queueLength()).isEqualTo(1);
      assertThat(one.lockedSince()).isEqualTo(orders.lockedSince());
      assertThat(one.oldestVersion()).isEqualTo(orders.oldestVersion());
      assertThat(one.behaviour()).isEqualTo("io.dgen.TestServer");
      assertThat(one.readVersion()).isGreaterThanOrEqualTo(orders.readVersion());
    } finally {
      gate.countDown();
    }
  }

  /**
   * More dead letters than one transaction moves: the admin re-queues them a page a transaction,
   * every one once, in order, with its failure count cleared, then purges them the same way.
   */
  @Test
  void deadLettersBeyondAPage_areRequeuedThenPurged_aPageATransaction() {
    int count = 250;
    ProcessRef<Msg> ref = startOrders(true);
    List<Msg> poison = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      poison.add(new Boom("p" + i));
    }
    ref.castAll(poison);
    await().atMost(BULK_WAIT).until(() -> orders().deadLetterCount() == count);
    ref.stop();

    ServerAdmin admin = orders();
    assertThat(admin.requeueDeadLetters()).isEqualTo(count);
    assertThat(admin.deadLetterCount()).isZero();
    List<ServerAdmin.QueuedItem> queued = admin.peek(count);
    assertThat(queued)
        .extracting(i -> i.message().get("why").asString())
        .containsExactlyElementsOf(poison.stream().map(m -> ((Boom) m).why()).toList());
    assertThat(queued).allSatisfy(i -> assertThat(i.failures()).isZero());

    ProcessRef<Msg> again = startOrders(true); // dead-letters every one again
    await().atMost(BULK_WAIT).until(() -> orders().deadLetterCount() == count);
    again.stop();
    assertThat(admin.purgeDeadLetters()).isEqualTo(count);
    assertThat(admin.deadLetterCount()).isZero();
    assertThat(admin.queueLength()).isZero();
  }

  @Test
  void requeueAtTheHead_isConsumedNext() {
    ProcessRef<Msg> ref = startOrders(true);
    ref.cast(new Boom("first"));
    await().atMost(Duration.ofSeconds(30)).until(() -> orders().deadLetterCount() == 1);
    ref.stop();
    ServerRef<Msg> paused = startOrders(false);
    paused.castAll(List.of(new Add(1), new Add(2)));
    ServerAdmin admin = orders();
    String id = admin.deadLetters(1).get(0).id();
    assertThat(admin.deadLetters(0)).hasSize(1);
    assertThat(admin.requeueDeadLetter(id, true)).isTrue();
    assertThat(admin.requeueDeadLetter(id, true)).isFalse();
    assertThat(admin.peek(3))
        .extracting(ServerAdmin.QueuedItem::type)
        .containsExactly(
            "io.dgen.TestServer$Boom", "io.dgen.TestServer$Add", "io.dgen.TestServer$Add");
    assertThat(admin.peek(1).get(0).failures()).isZero();
    // the oldest item is the normal lane's first, not the one re-queued (later) at the head
    long oldest =
        java.nio.ByteBuffer.wrap(java.util.HexFormat.of().parseHex(admin.peek(2).get(1).id()))
            .getLong();
    assertThat(admin.summary().oldestVersion()).hasValue(oldest);
  }

  @Test
  void cancelTimer_removesItFromTheServerAndTheTenant() {
    ProcessRef<Msg> ref = startOrders(false);
    String keep = ref.castAfter(new Add(1), Duration.ofDays(2));
    String cancel = ref.castAfter(new Add(2), Duration.ofDays(1));
    ServerAdmin admin = orders();
    assertThat(admin.timers(1)).hasSize(1);
    assertThat(admin.timers())
        .extracting(ServerAdmin.PendingTimer::id)
        .containsExactly(cancel, keep);
    assertThat(admin.cancelTimer(cancel)).isTrue();
    assertThat(admin.cancelTimer(cancel)).isFalse();
    assertThat(admin.timers()).extracting(ServerAdmin.PendingTimer::id).containsExactly(keep);
    assertThat(ref.cancelTimer(cancel)).isFalse(); // the runtime agrees: it is gone
    assertThatThrownBy(() -> admin.cancelTimer("nope"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("not a timer id");
  }

  @Test
  void keptReplies_showWaitingAndReplied() {
    ProcessRef<Msg> ref = startOrders(false);
    String waiting = ref.submit(new Add(5));
    ServerAdmin admin = orders();
    assertThat(admin.keptReplies(10))
        .singleElement()
        .satisfies(
            k -> {
              assertThat(k.callId()).isEqualTo(waiting);
              assertThat(k.status()).isEqualTo("waiting");
              assertThat(k.expiresAt()).isAfter(Instant.now());
            });
    ref.stop();
    ServerRef<Msg> consuming = startOrders(true);
    assertThat(consuming.<Long>awaitReply(waiting, Duration.ofSeconds(30))).isEqualTo(5L);
    String second = consuming.submit(new Add(2));
    assertThat(consuming.<Long>awaitReply(second, Duration.ofSeconds(30))).isEqualTo(7L);
    List<ServerAdmin.KeptReply> kept = admin.keptReplies(10);
    assertThat(kept)
        .extracting(
            ServerAdmin.KeptReply::callId, ServerAdmin.KeptReply::status, k -> k.value().asLong())
        .containsExactlyInAnyOrder(
            org.assertj.core.groups.Tuple.tuple(waiting, "replied", 5L),
            org.assertj.core.groups.Tuple.tuple(second, "replied", 7L));
    assertThat(admin.keptReplies(1)).hasSize(1);
  }
}
