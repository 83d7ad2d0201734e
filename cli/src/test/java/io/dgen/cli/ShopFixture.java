package io.dgen.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.DGen;
import io.dgen.ServerRef;
import io.dgen.StartOptions;
import io.dgen.Tenant;
import io.dgen.admin.DGenAdmin;
import io.dgen.admin.ServerAdmin;
import io.dgen.backend.Backend;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * A tenant filled by a real run: server {@code ("orders", 1)} applied two items, dead-lettered two
 * messages, holds the lock (its callback waits at a gate) with two messages queued behind it;
 * server {@code ("carts", "alice")} does not consume, has one message queued and one timer due in a
 * day.
 */
final class ShopFixture implements AutoCloseable {

  static final String ORDERS = "(\"orders\", 1)";
  static final String CARTS = "(\"carts\", \"alice\")";

  final DGen dgen;
  final Tenant tenant;
  final String tenantName;

  /** The server {@code ("carts", "alice")}, which does not consume. */
  final ServerRef<Shop.Msg> carts;

  private final CountDownLatch gate = new CountDownLatch(1);

  ShopFixture(Backend backend, String... tenantPath) throws InterruptedException {
    this.dgen = DGen.builder(backend).build();
    this.tenant = dgen.tenant(tenantPath);
    this.tenantName = String.join("/", tenantPath);
    CountDownLatch entered = new CountDownLatch(1);
    Shop shop = new Shop(entered, gate);
    ServerRef<Shop.Msg> orders =
        dgen.start(
            shop,
            Tuple.from("orders", 1L),
            StartOptions.builder(tenant).deadLetterThreshold(1).build());
    orders.castAll(
        List.of(
            new Shop.AddItem("apple", 3),
            new Shop.AddItem("pear", 5),
            new Shop.Fail("out of stock"),
            new Shop.Fail("card declined")));
    ServerAdmin admin =
        new DGenAdmin(backend)
            .tenant(tenantPath)
            .orElseThrow()
            .server(Tuple.from("orders", 1L))
            .orElseThrow();
    await().atMost(Duration.ofSeconds(60)).until(() -> admin.deadLetterCount() == 2);
    orders.cast(new Shop.Hold("h1"));
    assertThat(entered.await(60, TimeUnit.SECONDS)).isTrue();
    orders.castAll(List.of(new Shop.AddItem("plum", 7), new Shop.AddItem("fig", 2)));

    carts =
        dgen.start(
            shop,
            Tuple.from("carts", "alice"),
            StartOptions.builder(tenant).consume(false).build());
    carts.cast(new Shop.AddItem("milk", 1));
    carts.castAfter(new Shop.AddItem("bread", 2), Duration.ofDays(1));
  }

  @Override
  public void close() {
    gate.countDown();
    dgen.close();
  }
}
