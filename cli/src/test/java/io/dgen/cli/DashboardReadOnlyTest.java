package io.dgen.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.admin.DGenAdmin;
import io.dgen.admin.ServerAdmin;
import io.dgen.admin.Tuids;
import io.dgen.backend.CountingBackend;
import io.dgen.backend.memory.MemoryBackend;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.By;
import org.openqa.selenium.WebElement;

/**
 * Without {@code --allow-writes} the dashboard writes nothing: every page is shown and every action
 * form is submitted from a real browser (its disabled button enabled by a script, as a user could),
 * and the dashboard's backend, wrapped in a counting backend, saw no writing commit and no
 * directory created or removed.
 */
class DashboardReadOnlyTest {

  private MemoryBackend memory;
  private UiFixture ui;
  private Browser browser;

  @BeforeEach
  void start() throws Exception {
    browser = Browser.start();
    memory = MemoryBackend.create();
    ui = new UiFixture(memory, false, "shop", "eu");
  }

  @AfterEach
  void stop() {
    browser.close();
    ui.close();
    memory.close();
  }

  private static String q(String s) {
    return URLEncoder.encode(s, StandardCharsets.UTF_8);
  }

  @Test
  void everyPageAndEveryActionForm_writeNothing() {
    var d = browser.driver;
    CountingBackend.Counters before = ui.watched.counting.counters();

    d.get(ui.url("/"));
    browser.awaitText(By.cssSelector("tr[data-tenant='shop/eu'] td.servers"), "3");
    assertThat(d.findElement(By.id("mode")).getText()).isEqualTo("read-only");
    for (String sort : List.of("tuid", "depth", "age")) {
      d.get(ui.url("/tenant?t=shop/eu&sort=" + sort));
      browser.awaitText(By.id("servers"), "orders");
      d.get(ui.url("/tenant?t=shop/eu&sort=" + sort + "&q=" + q("(\"carts\", \"a")));
      browser.awaitText(By.id("servers"), "alice");
    }
    d.get(ui.url("/live?t=shop/eu"));
    browser.awaitLivePoints(2);

    // every action link of every server, each form submitted
    List<String> servers =
        List.of(ShopFixture.ORDERS, ShopFixture.CARTS, Tuids.format(Tuple.from(UiFixture.EVIL)));
    int forms = 0;
    for (String tuid : servers) {
      String page = ui.url("/server?t=shop/eu&tuid=" + q(tuid));
      d.get(page);
      browser.awaitText(By.id("read-only-note"), "Read-only");
      List<String> actions = new ArrayList<>();
      for (WebElement a : d.findElements(By.cssSelector("a[href^='/confirm']"))) {
        actions.add(a.getAttribute("href"));
      }
      assertThat(actions).isNotEmpty();
      for (String action : actions) {
        d.get(action);
        browser.awaitText(By.id("read-only"), "read-only");
        WebElement confirm = d.findElement(By.id("confirm"));
        assertThat(confirm.isEnabled()).as("the confirm button of " + action).isFalse();
        d.executeScript("document.getElementById('confirm').disabled = false");
        d.findElement(By.id("confirm")).click();
        browser.awaitText(By.id("error"), "read-only: dgen ui was started without --allow-writes");
        forms++;
      }
    }
    // orders: pause, each of 2 queued messages, all (3), each of 2 dead letters (3), kill;
    // carts: pause, its queued message, a timer, kill; the markup: pause, 3, 3, 1
    assertThat(forms).isEqualTo(13 + 4 + 8);

    CountingBackend.Counters cost = ui.watched.counting.counters().minus(before);
    assertThat(cost.rowsRead() + cost.keysRead()).as("the dashboard read").isPositive();
    assertThat(cost.transactionsCommitted()).as("writing commits").isZero();
    assertThat(cost.bytesWritten()).isZero();
    assertThat(ui.watched.directoryWrites).hasValue(0);
    assertThat(ui.watched.writes()).isZero();

    ServerAdmin orders =
        new DGenAdmin(memory)
            .tenant("shop", "eu")
            .orElseThrow()
            .server(Tuple.from("orders", 1L))
            .orElseThrow();
    assertThat(orders.deadLetterCount()).isEqualTo(2);
    assertThat(orders.queueLength()).isEqualTo(2);
  }
}
