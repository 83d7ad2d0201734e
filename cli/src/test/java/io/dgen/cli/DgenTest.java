package io.dgen.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.DGen;
import io.dgen.backend.Backend;
import io.dgen.backend.KeyValue;
import io.dgen.backend.memory.MemoryBackend;
import io.dgen.backend.rocksdb.RocksDbBackend;
import io.dgen.internal.keys.Buckets;
import io.dgen.internal.keys.ServerKeys;
import io.dgen.internal.keys.StuckRecord;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Every command against a memory backend filled by a real run; JSON output against goldens. */
class DgenTest {

  private static final String T = "shop/eu";

  private Backend memory;
  private ShopFixture shop;

  @BeforeEach
  void fill() throws InterruptedException {
    memory = MemoryBackend.create();
    shop = new ShopFixture(memory, "shop", "eu");
  }

  @AfterEach
  void close() {
    shop.close();
    memory.close();
  }

  private CliRun dgen(String... args) {
    return CliRun.run(CliRun.over(memory), args);
  }

  /** Every key of the tenant, the server index included: what "nothing written" compares. */
  private List<KeyValue> everything() {
    byte[] begin = new byte[0];
    byte[] end = {(byte) 0xff};
    return memory.run(tx -> tx.getRange(begin, end));
  }

  // ------------------------------------------------------------------ reads

  @Test
  void tenants() throws Exception {
    dgen("tenants", "--json").ok().matchesGolden("tenants");
    assertThat(dgen("tenants").ok().out())
        .isEqualTo(
            "TENANT   SERVERS\nshop     0\nshop/eu  2\n".replace("\n", System.lineSeparator()));
  }

  @Test
  void servers() throws Exception {
    dgen("servers", T, "--json").ok().matchesGolden("servers");
    assertThat(dgen("servers", T).ok().out().lines())
        .containsExactly(
            "TUID                BEHAVIOUR",
            "(\"carts\", \"alice\")  io.dgen.cli.Shop",
            "(\"orders\", 1)       io.dgen.cli.Shop");
  }

  @Test
  void limits_showsEachLimitsConfigurationAndHolders() throws Exception {
    java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
    java.util.concurrent.CountDownLatch entered = new java.util.concurrent.CountDownLatch(1);
    try (DGen d =
        DGen.builder(memory).rateLimit("api", 50, 10).concurrencyLimit("slots", 2).build()) {
      io.dgen.Tenant t = d.tenant("limited");
      io.dgen.ServerRef<Shop.Msg> ref =
          d.start(
              new Shop(entered, release),
              com.apple.foundationdb.tuple.Tuple.from("desk", 1),
              io.dgen.StartOptions.builder(t)
                  .concurrencyLimit("slots")
                  .lockTimeout(java.time.Duration.ofMinutes(1))
                  .build());
      ref.cast(new Shop.Hold("h"));
      assertThat(entered.await(30, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
      assertThat(dgen("limits").ok().out().lines())
          .containsExactly(
              "TYPE         NAME   LIMIT            STATE",
              "rate         api    50.0/s burst 10  tokens 10.0",
              "concurrency  slots  2                held 1: [tenant=[limited] tuid=(\"desk\", 1)]");
      assertThat(dgen("limits", "--json").ok().out())
          .contains("\"permitsPerSecond\" : 50.0")
          .contains("\"holders\"");
      assertThat(dgen("tenants").ok().out()).doesNotContain("$dgen");
      release.countDown();
    }
  }

  @Test
  void limits_showEachRuntimesShareOfARateLimit() throws Exception {
    try (DGen d = DGen.builder(memory).rateLimit("api", 50, 10).build()) {
      d.start(
          new Shop(
              new java.util.concurrent.CountDownLatch(1),
              new java.util.concurrent.CountDownLatch(0)),
          com.apple.foundationdb.tuple.Tuple.from("desk", 2),
          io.dgen.StartOptions.builder(d.tenant("limited")).rateLimit("api").build());
      String share = d.memberId().toString().substring(0, 8) + " 50.0/s";
      org.awaitility.Awaitility.await("the runtime joins the limit with the whole rate")
          .atMost(java.time.Duration.ofSeconds(30))
          .until(() -> dgen("limits").ok().out().contains(share));
      assertThat(dgen("limits").ok().out().lines())
          .contains("rate  api   50.0/s burst 10  tokens 10.0, shares: " + share);
      assertThat(dgen("limits", "--json").ok().out())
          .contains("\"runtime\" : \"" + d.memberId() + "\"")
          .contains("\"tookPerSecond\"");
    }
  }

  @Test
  void placement_showsTheHostingRuntimesAndTheirBuckets() {
    try (DGen host = DGen.builder(memory).buckets(16).build()) {
      io.dgen.Tenant t = host.tenant("bank");
      host.host(
          "account",
          () ->
              new Shop(
                  new java.util.concurrent.CountDownLatch(0),
                  new java.util.concurrent.CountDownLatch(0)),
          io.dgen.HostOptions.builder(t).build());
      org.awaitility.Awaitility.await()
          .atMost(java.time.Duration.ofSeconds(30))
          .until(() -> dgen("placement", "bank").ok().out().contains("{account=16}"));

      String out = dgen("placement", "bank").ok().out();
      assertThat(out)
          .contains("buckets: 16, released leases: 0")
          .contains(host.memberId().toString())
          .contains("account");
      assertThat(dgen("placement", "bank", "--json").ok().out())
          .contains("\"member\" : \"" + host.memberId() + "\"")
          .contains("\"account\" : 16");
    }
    assertThat(dgen("placement", "bank").ok().out())
        .as("a closed runtime leaves: its record is deleted and its leases released")
        .contains("released leases: 16")
        .doesNotContain("account=");
  }

  @Test
  void inspect() throws Exception {
    dgen("inspect", T, ShopFixture.ORDERS, "--json").ok().matchesGolden("inspect-orders");
    dgen("inspect", T, ShopFixture.CARTS, "--json").ok().matchesGolden("inspect-carts");
    assertThat(dgen("inspect", T, ShopFixture.ORDERS).ok().out())
        .contains("queue length  2")
        .contains("dead letters  2")
        .contains("message io.dgen.cli.Shop$Hold")
        .contains("\"total\" : 8");
    assertThat(dgen("inspect", T, ShopFixture.CARTS).ok().out())
        .contains("timers        1 pending");
  }

  @Test
  void timers_listsIdsDueTimesSchedulesAndTypes_aPageAtATime() throws Exception {
    String every = shop.carts.castEvery(new Shop.AddItem("eggs", 1), java.time.Duration.ofHours(1));
    String cron =
        shop.carts.castCron(
            new Shop.AddItem("tea", 1), "0 9 * * MON-FRI", java.time.ZoneId.of("Europe/Berlin"));
    String table = dgen("timers", T, ShopFixture.CARTS).ok().out();
    assertThat(table)
        .contains("ID", "DUE", "SCHEDULE", "TYPE", "MESSAGE")
        .contains(every + "  ")
        .contains("every PT1H")
        .contains(cron + "  ")
        .contains("cron 0 9 * * MON-FRI Europe/Berlin")
        .contains("once")
        .contains("io.dgen.cli.Shop$AddItem")
        .doesNotContain("more:");

    tools.jackson.databind.JsonNode first =
        Output.JSON.readTree(dgen("timers", T, ShopFixture.CARTS, "-n", "2", "--json").ok().out());
    assertThat(first.get("timers")).hasSize(2);
    String next = first.get("next").asString();
    assertThat(dgen("timers", T, ShopFixture.CARTS, "-n", "2").ok().out())
        .contains("more: dgen timers " + T + " '" + ShopFixture.CARTS + "' --after " + next);
    tools.jackson.databind.JsonNode second =
        Output.JSON.readTree(
            dgen("timers", T, ShopFixture.CARTS, "-n", "2", "--after", next, "--json").ok().out());
    assertThat(second.get("timers")).hasSize(1);
    assertThat(second.get("next").isNull()).isTrue();
    List<String> ids = new java.util.ArrayList<>();
    first.get("timers").forEach(t -> ids.add(t.get("id").asString()));
    second.get("timers").forEach(t -> ids.add(t.get("id").asString()));
    assertThat(ids).hasSize(3).contains(every, cron).doesNotHaveDuplicates();

    dgen("timers", T, ShopFixture.CARTS, "--after", "nope").fails(Dgen.USAGE, "not a timer id");
    dgen("timers", T, ShopFixture.CARTS, "-n", "0").fails(Dgen.USAGE, "-n must be");
  }

  @Test
  void pauseCancelMessageAndResume() throws Exception {
    dgen("pause", T, ShopFixture.CARTS).fails(Dgen.REFUSED, "refused without --yes");
    assertThat(dgen("pause", T, ShopFixture.CARTS, "--reason", "inventory", "--yes").ok().out())
        .contains("paused (\"carts\", \"alice\")");
    assertThat(dgen("pause", T, ShopFixture.CARTS, "--yes").ok().out())
        .contains("was paused already");
    assertThat(dgen("queue", T, ShopFixture.CARTS).ok().out())
        .contains("paused since")
        .contains("(inventory)");

    String id =
        Output.JSON
            .readTree(dgen("queue", T, ShopFixture.CARTS, "--json").ok().out())
            .get("items")
            .get(0)
            .get("id")
            .asString();
    dgen("cancel-message", T, ShopFixture.CARTS, id).fails(Dgen.REFUSED, "refused without --yes");
    assertThat(dgen("cancel-message", T, ShopFixture.CARTS, id, "--yes").ok().out())
        .contains("removed queued message " + id);
    dgen("cancel-message", T, ShopFixture.CARTS, id, "--yes")
        .fails(Dgen.NOT_FOUND, "no queued message " + id);
    dgen("cancel-message", T, ShopFixture.CARTS, "nope", "--yes")
        .fails(Dgen.USAGE, "not a queued message id");
    assertThat(dgen("queue", T, ShopFixture.CARTS).ok().out()).contains("queue length: 0");

    assertThat(dgen("resume", T, ShopFixture.CARTS, "--yes").ok().out()).contains("resumed");
    assertThat(dgen("resume", T, ShopFixture.CARTS, "--yes").ok().out()).contains("was not paused");
    assertThat(dgen("queue", T, ShopFixture.CARTS).ok().out()).doesNotContain("paused since");
  }

  /**
   * A hosted server stuck on a state that does not decode: its holder's record is shown, with the
   * way to repair it (the runtime's side is {@code FieldEvolutionTest}).
   */
  @Test
  void inspect_showsAStuckServersRecord() throws Exception {
    UUID member = UUID.randomUUID();
    ServerKeys keys =
        new ServerKeys(
            shop.tenant.subspace(),
            Buckets.of(shop.tenant.bucketCount()),
            Tuple.from("orders", 1L));
    memory.run(
        tx -> {
          tx.set(
              keys.stuckKey(),
              StuckRecord.encode(1_700_000_000_000L, member, "storedType=shop.order is unknown"));
          return null;
        });

    assertThat(dgen("inspect", T, ShopFixture.ORDERS).ok().out())
        .contains("stuck         since 2023-11-14T22:13:20Z (member " + member + ")")
        .contains("dgen state-replace repairs it: storedType=shop.order is unknown");
    assertThat(dgen("inspect", T, ShopFixture.ORDERS, "--json").ok().out())
        .contains("\"member\" : \"" + member + "\"")
        .contains("\"since\" : \"2023-11-14T22:13:20Z\"");
  }

  @Test
  void queue() throws Exception {
    dgen("queue", T, ShopFixture.ORDERS, "--json").ok().matchesGolden("queue-orders");
    dgen("queue", T, ShopFixture.ORDERS, "-n", "1", "--json").ok().matchesGolden("queue-orders-1");
    assertThat(dgen("queue", T, ShopFixture.ORDERS).ok().out())
        .contains("queue length: 2")
        .contains("cast  io.dgen.cli.Shop$AddItem  0         {\"name\":\"plum\",\"price\":7}");
  }

  @Test
  void deadLetters_list() throws Exception {
    dgen("dead-letters", "list", T, ShopFixture.ORDERS, "--json")
        .ok()
        .matchesGolden("dead-letters");
    assertThat(dgen("dead-letters", "list", T, ShopFixture.ORDERS).ok().out())
        .contains("java.lang.IllegalStateException: out of stock")
        .contains("java.lang.IllegalStateException: card declined");
  }

  // ------------------------------------------------------------------ writes

  @Test
  void deadLetters_requeue_movesThemBehindTheLock() throws Exception {
    dgen("dead-letters", "requeue", T, ShopFixture.ORDERS, "--yes", "--json")
        .ok()
        .matchesGolden("requeue");
    dgen("queue", T, ShopFixture.ORDERS, "--json").ok().matchesGolden("queue-after-requeue");
    assertThat(dgen("dead-letters", "list", T, ShopFixture.ORDERS, "--json").ok().out().strip())
        .isEqualTo("[ ]");
  }

  @Test
  void deadLetters_purge_oneThenAll() throws Exception {
    String id =
        Output.JSON
            .readTree(dgen("dead-letters", "list", T, ShopFixture.ORDERS, "--json").ok().out())
            .get(0)
            .get("id")
            .asString();
    assertThat(dgen("dead-letters", "purge", T, ShopFixture.ORDERS, "--id", id, "--yes").ok().out())
        .isEqualTo("purged 1 dead letter" + System.lineSeparator());
    dgen("dead-letters", "purge", T, ShopFixture.ORDERS, "--id", id, "--yes")
        .fails(Dgen.NOT_FOUND, "no dead letter " + id);
    dgen("dead-letters", "purge", T, ShopFixture.ORDERS, "--yes", "--json")
        .ok()
        .matchesGolden("purge-all");
    assertThat(dgen("inspect", T, ShopFixture.ORDERS, "--json").ok().out())
        .contains("\"deadLetters\" : 0");
  }

  @Test
  void kill_removesTheServerAndItsIndexEntry() throws Exception {
    dgen("kill", T, ShopFixture.CARTS, "--yes", "--json").ok().matchesGolden("kill");
    dgen("servers", T, "--json").ok().matchesGolden("servers-after-kill");
    dgen("inspect", T, ShopFixture.CARTS).fails(Dgen.NOT_FOUND, "no server");
  }

  @Test
  void stateReplace_writesTheTreeInTheFile_onlyWithYes() throws Exception {
    Path file = Files.createTempFile("state", ".json");
    try {
      Files.writeString(file, "{\"items\":[\"fig\"],\"total\":1}");
      dgen("state-replace", T, ShopFixture.ORDERS, file.toString())
          .fails(Dgen.REFUSED, "refused without --yes");
      assertThat(dgen("inspect", T, ShopFixture.ORDERS).ok().out()).contains("\"total\" : 8");
      dgen("state-replace", T, ShopFixture.ORDERS, file.toString(), "--type", "order#2", "--yes")
          .ok();
      assertThat(dgen("inspect", T, ShopFixture.ORDERS).ok().out())
          .contains("\"total\" : 1", "\"fig\"", "state type    order#2");
    } finally {
      Files.delete(file);
    }
  }

  // ------------------------------------------------------------------ help and bad input

  @Test
  void everyCommandHasHelp() {
    for (String command :
        List.of(
            "",
            "tenants",
            "servers",
            "inspect",
            "queue",
            "dead-letters",
            "dead-letters list",
            "dead-letters requeue",
            "dead-letters purge",
            "state-replace",
            "kill")) {
      String[] args = (command + " --help").strip().split(" ");
      CliRun help = dgen(args).ok();
      assertThat(help.out()).as(command).contains("Usage: dgen " + command).contains("--help");
    }
    assertThat(dgen("--help").out()).contains("Exit codes:").contains("3  refused");
  }

  /** The help names both backends the CLI reads, and claims nothing the build lacks. */
  @Test
  void helpDescribesBothBackends() {
    String help = dgen("--help").out().replaceAll("\\s+", " ");
    assertThat(help)
        .contains("FoundationDB (--cluster-file)")
        .contains("embedded backend (--data-dir)")
        .contains("needs no FoundationDB client")
        .doesNotContain("not in this build");
  }

  @Test
  void unknownTenantOrServer_exit2_nothingWritten() {
    List<KeyValue> before = everything();
    dgen("servers", "shop/us").fails(Dgen.NOT_FOUND, "no tenant shop/us");
    dgen("inspect", "shop/us", ShopFixture.ORDERS).fails(Dgen.NOT_FOUND, "no tenant shop/us");
    dgen("inspect", T, "(\"orders\", 2)").fails(Dgen.NOT_FOUND, "no server (\"orders\", 2)");
    dgen("kill", T, "(\"orders\", 2)", "--yes").fails(Dgen.NOT_FOUND, "no server");
    dgen("dead-letters", "requeue", T, ShopFixture.ORDERS, "--id", "00".repeat(12), "--yes")
        .fails(Dgen.NOT_FOUND, "no dead letter");
    assertThat(everything()).usingRecursiveFieldByFieldElementComparator().isEqualTo(before);
  }

  @Test
  void malformedInput_exit1_oneLine_nothingWritten() {
    List<KeyValue> before = everything();
    for (String tuid : List.of("orders", "(\"orders\",)", "('orders', 1)", "(\"orders\" 1)", "")) {
      dgen("kill", T, tuid, "--yes").fails(Dgen.USAGE, "malformed tuid");
      dgen("inspect", T, tuid).fails(Dgen.USAGE, "malformed tuid");
    }
    dgen("servers", "shop//eu").fails(Dgen.USAGE, "malformed tenant");
    dgen("queue", T, ShopFixture.ORDERS, "-n", "0").fails(Dgen.USAGE, "-n must be at least 1");
    dgen("dead-letters", "purge", T, ShopFixture.ORDERS, "--id", "xyz", "--yes")
        .fails(Dgen.USAGE, "not a dead letter id");
    dgen("inspect", T).fails(Dgen.USAGE, "Missing required parameter");
    dgen("frobnicate").fails(Dgen.USAGE, "Unmatched argument");
    dgen("--cluster-file", "a", "--data-dir", "b", "tenants")
        .fails(Dgen.USAGE, "exclude each other");
    assertThat(dgen().code()).isEqualTo(Dgen.USAGE);
    assertThat(everything()).usingRecursiveFieldByFieldElementComparator().isEqualTo(before);
  }

  @Test
  void destructiveCommands_withoutYes_exit3_nothingWritten() {
    List<KeyValue> before = everything();
    dgen("kill", T, ShopFixture.CARTS).fails(Dgen.REFUSED, "refused without --yes");
    dgen("dead-letters", "requeue", T, ShopFixture.ORDERS).fails(Dgen.REFUSED, "--yes");
    dgen("dead-letters", "purge", T, ShopFixture.ORDERS).fails(Dgen.REFUSED, "--yes");
    assertThat(everything()).usingRecursiveFieldByFieldElementComparator().isEqualTo(before);
    assertThat(dgen("servers", T).ok().out()).contains(ShopFixture.CARTS);
  }

  @Test
  void unreadableClusterFile_andDataDir_exit4_oneLine() {
    BackendSource real = new BackendSource();
    CliRun.run(real, "--cluster-file", "/nonexistent/fdb.cluster", "servers", T)
        .fails(Dgen.BACKEND, "cannot read cluster file /nonexistent/fdb.cluster");
    CliRun.run(real, "--cluster-file", "/tmp", "tenants")
        .fails(Dgen.BACKEND, "cannot read cluster file /tmp");
    CliRun.run(real, "--data-dir", "/nonexistent/dgen-data", "tenants")
        .fails(Dgen.BACKEND, "--data-dir /nonexistent/dgen-data: not a DGen data directory");
  }

  @Test
  void dataDir_thatIsNotOne_isRefused_andLeftUntouched(@TempDir Path dir) throws Exception {
    Path other = Files.writeString(dir.resolve("notes.txt"), "someone else's files");
    CliRun.run(new BackendSource(), "--data-dir", dir.toString(), "tenants")
        .fails(Dgen.BACKEND, "--data-dir " + dir + ": not a DGen data directory");
    try (var files = Files.list(dir)) {
      assertThat(files).containsExactly(other); // no RocksDB files, no lock, no format file
    }
  }

  @Test
  void dataDir_readsAndKillsOnTheEmbeddedBackend(@TempDir Path dir) throws Exception {
    try (Backend rocks = RocksDbBackend.open(dir);
        ShopFixture filled = new ShopFixture(rocks, "shop", "eu")) {
      assertThat(filled.tenantName).isEqualTo(T);
    }
    BackendSource real = new BackendSource();
    CliRun.run(real, "--data-dir", dir.toString(), "servers", T, "--json")
        .ok()
        .matchesGolden("servers");
    CliRun.run(real, "--data-dir", dir.toString(), "kill", T, ShopFixture.CARTS, "--yes").ok();
    assertThat(CliRun.run(real, "--data-dir", dir.toString(), "servers", T).ok().out())
        .doesNotContain("carts");
    try (Backend held = RocksDbBackend.open(dir)) {
      CliRun.run(real, "--data-dir", dir.toString(), "tenants")
          .fails(Dgen.BACKEND, "--data-dir " + dir + ":");
    }
  }
}
