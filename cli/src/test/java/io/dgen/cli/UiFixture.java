package io.dgen.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.ServerRef;
import io.dgen.StartOptions;
import io.dgen.admin.DGenAdmin;
import io.dgen.admin.ServerAdmin;
import io.dgen.backend.Backend;
import io.dgen.cli.ui.Dashboard;
import java.io.IOException;
import java.net.InetAddress;
import java.net.URI;
import java.time.Clock;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;

/**
 * The shop of {@link ShopFixture} plus a server whose tuid, state and dead letter hold markup
 * ({@link #EVIL}), and a dashboard over all of it, given a {@link WatchedBackend} so that the test
 * can count what the dashboard wrote.
 */
final class UiFixture implements AutoCloseable {

  /** Markup that would change the page if it were not escaped: a script and an element. */
  static final String EVIL = "<script>document.title='pwned'</script><b id=\"injected\">bold</b>";

  final ShopFixture shop;
  final WatchedBackend watched;
  final Dashboard dashboard;

  UiFixture(Backend backend, boolean allowWrites, String... tenant)
      throws InterruptedException, IOException {
    this(backend, allowWrites, 0, tenant);
  }

  /**
   * @param versionsPerSecond the backend's version rate (FoundationDB: 1,000,000), or 0
   */
  UiFixture(Backend backend, boolean allowWrites, long versionsPerSecond, String... tenant)
      throws InterruptedException, IOException {
    shop = new ShopFixture(backend, tenant);
    ServerRef<Shop.Msg> evil =
        shop.dgen.start(
            new Shop(new CountDownLatch(1), new CountDownLatch(0)),
            Tuple.from(EVIL),
            StartOptions.builder(shop.tenant).deadLetterThreshold(1).build());
    evil.cast(new Shop.AddItem(EVIL, 1));
    evil.cast(new Shop.Fail(EVIL));
    ServerAdmin admin =
        new DGenAdmin(backend).tenant(tenant).orElseThrow().server(Tuple.from(EVIL)).orElseThrow();
    await().atMost(Duration.ofSeconds(60)).until(() -> admin.deadLetterCount() == 1);
    assertThat(admin.state().orElseThrow().toString()).contains("<script>");
    watched = new WatchedBackend(backend);
    dashboard =
        new Dashboard(
            new DGenAdmin(watched.counting, Duration.ofSeconds(10)),
            new Dashboard.Options(
                InetAddress.getLoopbackAddress(),
                0,
                allowWrites,
                null,
                versionsPerSecond,
                Dashboard.Options.DEFAULT_SCAN_CAP,
                Dashboard.Options.DEFAULT_RANKING),
            Clock.systemUTC());
  }

  /** The dashboard's address, by a loopback name. */
  String url(String pathAndQuery) {
    URI u = dashboard.uri();
    return "http://localhost:" + u.getPort() + pathAndQuery;
  }

  @Override
  public void close() {
    dashboard.close();
    shop.close();
  }
}
