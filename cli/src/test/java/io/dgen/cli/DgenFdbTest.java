package io.dgen.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.dgen.backend.Backend;
import io.dgen.backend.fdb.FdbTestEnvironment;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** The CLI against FoundationDB, opened by the CLI itself from the test cluster's file. */
@ExtendWith(FdbTestEnvironment.class)
class DgenFdbTest {

  private final String id = UUID.randomUUID().toString();
  private Backend fdb;
  private ShopFixture shop;

  @BeforeEach
  void fill() throws InterruptedException {
    fdb = FdbTestEnvironment.openBackend();
    shop = new ShopFixture(fdb, "dgen-cli-test", id);
  }

  @AfterEach
  void close() {
    shop.close();
    fdb.removeDirectory("dgen-cli-test", id);
    fdb.close();
  }

  private CliRun dgen(String... args) {
    String[] all = new String[args.length + 2];
    all[0] = "--cluster-file";
    all[1] = FdbTestEnvironment.clusterFile().toString();
    System.arraycopy(args, 0, all, 2, args.length);
    return CliRun.run(new BackendSource(), all);
  }

  @Test
  void readsAndWrites_onFoundationDb() throws Exception {
    String tenant = shop.tenantName;
    assertThat(dgen("tenants").ok().out()).contains(tenant + "  2");
    dgen("servers", tenant, "--json").ok().matchesGolden("servers");
    String inspect = dgen("inspect", tenant, ShopFixture.ORDERS, "--json").ok().out();
    // the same golden as on the memory backend, but for the tenant's name
    new CliRun(0, inspect.replace(tenant, "shop/eu"), "").matchesGolden("inspect-orders");
    dgen("queue", tenant, ShopFixture.ORDERS, "--json").ok().matchesGolden("queue-orders");
    dgen("dead-letters", "list", tenant, ShopFixture.ORDERS, "--json")
        .ok()
        .matchesGolden("dead-letters");

    dgen("kill", tenant, ShopFixture.CARTS).fails(Dgen.REFUSED, "--yes");
    dgen("inspect", tenant, "(\"carts\",").fails(Dgen.USAGE, "malformed tuid");
    dgen("dead-letters", "requeue", tenant, ShopFixture.ORDERS, "--yes", "--json")
        .ok()
        .matchesGolden("requeue");
    dgen("queue", tenant, ShopFixture.ORDERS, "--json").ok().matchesGolden("queue-after-requeue");
    dgen("kill", tenant, ShopFixture.CARTS, "--yes").ok();
    dgen("servers", tenant, "--json").ok().matchesGolden("servers-after-kill");
    dgen("inspect", tenant, ShopFixture.CARTS).fails(Dgen.NOT_FOUND, "no server");
  }
}
