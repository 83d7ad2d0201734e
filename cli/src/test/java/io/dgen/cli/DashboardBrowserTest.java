package io.dgen.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.DGen;
import io.dgen.HostOptions;
import io.dgen.ServerRef;
import io.dgen.StartOptions;
import io.dgen.Tenant;
import io.dgen.backend.memory.MemoryBackend;
import io.dgen.internal.hosting.Placement;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.openqa.selenium.By;
import org.openqa.selenium.NoAlertPresentException;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.support.ui.ExpectedConditions;
import org.openqa.selenium.support.ui.Select;
import tools.jackson.databind.JsonNode;

/**
 * {@code dgen ui} in a real browser (Debian's headless Chromium) over a store a real run filled,
 * with writes allowed: from the tenants through a tenant's servers to a server, the actions behind
 * their confirmations, the live chart, and markup in tuids, states and errors shown as text.
 * Screenshots of each page land in target/screenshots (docs/images with
 * -Ddgen.updateScreenshots=true).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class DashboardBrowserTest {

  private MemoryBackend memory;
  private UiFixture ui;
  private Browser browser;

  @BeforeAll
  void start() throws Exception {
    browser = Browser.start();
    memory = MemoryBackend.create();
    ui = new UiFixture(memory, true, "shop", "eu");
  }

  @AfterAll
  void stop() {
    if (browser != null) {
      browser.close();
    }
    if (ui != null) {
      ui.close();
    }
    if (memory != null) {
      memory.close();
    }
  }

  /** The texts of a column (read again if the page refreshed itself meanwhile). */
  private List<String> column(String table, String cssClass) {
    return browser
        .waiting()
        .until(
            d ->
                d.findElements(By.cssSelector("#" + table + " td." + cssClass)).stream()
                    .map(WebElement::getText)
                    .toList());
  }

  private void assertNoInjection() {
    assertThat(browser.driver.findElements(By.id("injected"))).as("injected element").isEmpty();
    assertThat(browser.driver.getTitle()).isNotEqualTo("pwned"); // what the script would set
    try {
      browser.driver.switchTo().alert();
      throw new AssertionError("an alert is open");
    } catch (NoAlertPresentException expected) {
      // nothing ran
    }
    // our own pages load scripts only from the server, never inline
    for (WebElement s : browser.driver.findElements(By.tagName("script"))) {
      assertThat(s.getAttribute("src")).as("script src").endsWith("/static/live.js");
    }
  }

  @Test
  @Order(1)
  void clickThrough_requeue_andMarkupStaysText() {
    var d = browser.driver;
    d.get(ui.url("/"));
    WebElement row = browser.awaitText(By.cssSelector("tr[data-tenant='shop/eu'] td.servers"), "3");
    assertThat(row.getText()).isEqualTo("3");
    browser.awaitText(By.cssSelector("tr[data-tenant='shop/eu'] td.depth"), "3");
    browser.screenshot("tenants");

    d.findElement(By.linkText("shop/eu")).click();
    browser.awaitText(By.cssSelector("#servers"), "(\"orders\", 1)");
    assertThat(column("servers", "tuid"))
        .containsExactly(
            "(\"" + UiFixture.EVIL.replace("\"", "\\\"") + "\")",
            "(\"carts\", \"alice\")",
            "(\"orders\", 1)");
    assertThat(column("servers", "depth")).containsExactly("0", "1", "2");
    assertNoInjection();
    browser.screenshot("servers");

    // search by the beginning of a tuid
    d.findElement(By.id("q")).sendKeys("(\"ord");
    d.findElement(By.id("show")).click();
    browser.awaitText(By.id("servers"), "orders");
    assertThat(column("servers", "tuid")).containsExactly("(\"orders\", 1)");

    // sorted by depth, over the tenant's scan
    d.findElement(By.id("q")).clear();
    new Select(d.findElement(By.id("sort"))).selectByValue("depth");
    d.findElement(By.id("show")).click();
    browser.awaitText(By.id("window"), "Sorted by queue depth over the 3 servers");
    assertThat(column("servers", "depth")).containsExactly("2", "1", "0");
    new Select(d.findElement(By.id("sort"))).selectByValue("age");
    d.findElement(By.id("show")).click();
    browser.awaitText(By.id("window"), "age of the oldest queued item");
    assertThat(column("servers", "tuid"))
        .containsExactly("(\"orders\", 1)", "(\"carts\", \"alice\")");
    browser.screenshot("servers-by-age");

    // the server
    d.findElement(By.linkText("(\"orders\", 1)")).click();
    browser.awaitText(By.id("state-json"), "\"total\" : 8");
    assertThat(d.findElement(By.cssSelector("td[data-field='lock']")).getText())
        .startsWith("held by ")
        .contains("Shop$Hold");
    assertThat(column("dead-letter-items", "error"))
        .hasSize(2)
        .anySatisfy(e -> assertThat(e).contains("out of stock"))
        .anySatisfy(e -> assertThat(e).contains("card declined"));
    assertThat(column("queue-items", "message"))
        .containsExactly("{\"name\":\"plum\",\"price\":7}", "{\"name\":\"fig\",\"price\":2}");
    browser.screenshot("server");

    // re-queue "out of stock" at the head, behind its confirmation
    WebElement outOfStock =
        d.findElements(By.cssSelector("#dead-letter-items tbody tr")).stream()
            .filter(tr -> tr.getText().contains("out of stock"))
            .findFirst()
            .orElseThrow();
    outOfStock.findElement(By.cssSelector("a.requeue-head")).click();
    browser.awaitText(By.id("what"), "at the head of its queue");
    browser.screenshot("confirm");
    d.findElement(By.id("confirm")).click();
    browser.awaitText(By.id("done"), "Re-queued at the head of the queue: 1 dead letter");
    assertThat(column("dead-letter-items", "error"))
        .singleElement()
        .asString()
        .contains("card declined");
    // the lock holder still runs: the message waits at the head, failure count cleared
    assertThat(column("queue-items", "message").get(0)).isEqualTo("{\"why\":\"out of stock\"}");
    assertThat(ui.shop.dgen).isNotNull();

    // cancel the carts' timers: a one-shot one and a recurring one
    ui.shop.carts.castEvery(new Shop.AddItem("eggs", 1), java.time.Duration.ofHours(1));
    d.get(
        ui.url(
            "/server?t=shop/eu&tuid="
                + java.net.URLEncoder.encode(
                    ShopFixture.CARTS, java.nio.charset.StandardCharsets.UTF_8)));
    browser.awaitText(By.id("timer-items"), "Shop$AddItem");
    assertThat(column("timer-items", "schedule")).containsExactlyInAnyOrder("once", "every PT1H");
    for (int i = 0; i < 2; i++) {
      d.findElement(By.cssSelector("#timer-items a.cancel")).click();
      d.findElement(By.id("confirm")).click();
      browser.awaitText(By.id("done"), "Cancelled the timer.");
    }
    browser.awaitText(By.id("timers"), "None pending.");
  }

  @Test
  @Order(2)
  void markupInTuidStateAndErrors_isShownAsText() {
    var d = browser.driver;
    d.get(ui.url("/tenant?t=shop/eu"));
    browser.awaitText(By.id("servers"), "<script>");
    d.findElement(By.partialLinkText("<script>")).click();
    browser.awaitText(By.id("state-json"), UiFixture.EVIL.replace("\"", "\\\""));
    assertThat(d.findElement(By.tagName("h1")).getText())
        .contains("<script>document.title='pwned'</script>");
    assertThat(column("dead-letter-items", "error"))
        .singleElement()
        .asString()
        .contains(UiFixture.EVIL);
    assertNoInjection();
    browser.screenshot("server-markup");

    // kill it, behind its confirmation
    d.findElement(By.id("kill-link")).click();
    browser.awaitText(By.id("what"), "cannot be undone");
    assertNoInjection();
    d.findElement(By.id("confirm")).click();
    browser.awaitText(By.id("done"), "Killed the server.");
    assertThat(d.findElement(By.id("servers")).getText()).doesNotContain("<script>");
  }

  @Test
  @Order(3)
  void liveView_drawsDepthAndThroughput() throws Exception {
    var d = browser.driver;
    ServerRef<Shop.Msg> ticker =
        ui.shop.dgen.start(
            new Shop(new CountDownLatch(1), new CountDownLatch(0)),
            Tuple.from("ticker"),
            StartOptions.builder(ui.shop.dgen.tenant("shop", "live")).build());
    d.get(ui.url("/live?t=shop/live"));
    for (int round = 1; round <= 4; round++) {
      for (int i = 0; i < 25 * round; i++) {
        ticker.cast(new Shop.AddItem("tick", 1));
      }
      int points = round + 1;
      browser.awaitLivePoints(points);
    }
    HttpResponse<String> live =
        HttpClient.newHttpClient()
            .send(
                HttpRequest.newBuilder(URI.create(ui.url("/api/live?t=shop/live"))).build(),
                HttpResponse.BodyHandlers.ofString());
    JsonNode points = Output.JSON.readTree(live.body()).get("points");
    assertThat(points.size()).isGreaterThanOrEqualTo(5);
    List<Double> rates = new ArrayList<>();
    points.forEach(p -> rates.add(p.path("rate").asDouble(0)));
    assertThat(rates).as("consumed per second").anyMatch(r -> r > 0);
    browser
        .waiting()
        .until(
            ExpectedConditions.presenceOfElementLocated(
                By.cssSelector("#depth-chart svg polyline")));
    assertThat(d.findElement(By.id("live-status")).getText()).contains("servers");
    assertNoInjection();
    browser.screenshot("live");
  }

  @Test
  @Order(4)
  void placement_showsEachHostingRuntime_andTheBucketsItHolds() {
    DGen dgen = ui.shop.dgen;
    Tenant hosted = dgen.tenant("shop", "hosted");
    dgen.host(
        "carts",
        () -> new Shop(new CountDownLatch(1), new CountDownLatch(0)),
        HostOptions.builder(hosted).build());
    String first = dgen.memberId().toString();
    int buckets = hosted.bucketCount();
    var d = browser.driver;
    d.get(ui.url("/tenant?t=shop/hosted"));
    d.findElement(By.linkText("placement")).click();
    // the only member takes every bucket within a few rounds; the page shows it on a reload
    awaitRows(Map.of(first, buckets));
    assertThat(d.findElement(By.id("buckets")).getText()).contains(Integer.toString(buckets));

    // a second runtime joins: the buckets are shared as rendezvous hashing says, row by row
    try (DGen second = DGen.builder(memory).build()) {
      second.host(
          "carts",
          () -> new Shop(new CountDownLatch(1), new CountDownLatch(0)),
          HostOptions.builder(second.tenant("shop", "hosted")).build());
      List<UUID> ids = new ArrayList<>(List.of(dgen.memberId(), second.memberId()));
      ids.sort(null);
      Map<String, Integer> share = new HashMap<>();
      for (int b = 0; b < buckets; b++) {
        share.merge(Placement.desiredOwner("carts", b, ids).toString(), 1, Integer::sum);
      }
      assertThat(share).hasSize(2);
      awaitRows(share);
      assertThat(
              d.findElement(By.cssSelector("tr[data-member='" + first + "'] td.changed")).getText())
          .isNotEmpty();
      assertNoInjection();
      browser.screenshot("placement");
    }
  }

  /**
   * Reloads the placement page until each member's row shows kind carts and the buckets it should
   * hold. The two cells come from separate writes: a runtime's rounds may take buckets before its
   * next heartbeat writes the kinds it hosts into its member record, so neither cell is read before
   * the page shows both.
   */
  private void awaitRows(Map<String, Integer> held) {
    var d = browser.driver;
    browser
        .waiting()
        .withMessage(
            () -> "rows of members hosting carts and holding " + held + ": " + d.getPageSource())
        .until(
            x -> {
              x.navigate().refresh();
              return held.entrySet().stream()
                  .allMatch(
                      e ->
                          x
                              .findElements(By.cssSelector("tr[data-member='" + e.getKey() + "']"))
                              .stream()
                              .anyMatch(
                                  tr ->
                                      cell(tr, "kinds").equals("carts")
                                          && cell(tr, "held")
                                              .equals("{carts=" + e.getValue() + "}")));
            });
  }

  private static String cell(WebElement row, String cssClass) {
    return row.findElement(By.cssSelector("td." + cssClass)).getText();
  }

  @Test
  @Order(5)
  void timers_comeInPages_withALinkToTheNext() {
    var d = browser.driver;
    Tenant tenant = ui.shop.tenant;
    ServerRef<Shop.Msg> many =
        ui.shop.dgen.start(
            new Shop(new CountDownLatch(1), new CountDownLatch(0)),
            Tuple.from("many-timers"),
            StartOptions.builder(tenant).consume(false).build());
    int n = 130; // more than a page (100)
    memory.run(
        tx -> {
          for (int i = 0; i < n; i++) {
            many.outbox().castAfter(tx, new Shop.AddItem("t" + i, i), java.time.Duration.ofDays(1));
          }
          return null;
        });
    d.get(
        ui.url(
            "/server?t=shop/eu&tuid="
                + java.net.URLEncoder.encode(
                    "(\"many-timers\")", java.nio.charset.StandardCharsets.UTF_8)));
    browser.awaitText(By.id("timers"), "Pages of 100");
    List<String> firstPage = column("timer-items", "id");
    assertThat(firstPage).hasSize(100);
    d.findElement(By.id("timers-next")).click();
    browser.awaitText(By.id("timers"), "first timers");
    List<String> secondPage = column("timer-items", "id");
    assertThat(secondPage).hasSize(n - 100).doesNotContainAnyElementsOf(firstPage);
    assertThat(d.findElements(By.id("timers-next"))).isEmpty();
  }

  @Test
  @Order(6)
  void pause_cancelAQueuedMessage_andResume() {
    var d = browser.driver;
    String carts =
        ui.url(
            "/server?t=shop/eu&tuid="
                + java.net.URLEncoder.encode(
                    ShopFixture.CARTS, java.nio.charset.StandardCharsets.UTF_8));
    ui.shop.carts.cast(new Shop.AddItem("jam", 1));
    d.get(carts);
    browser.awaitText(By.id("pause"), "Consuming.");
    d.findElement(By.id("pause-link")).click();
    browser.awaitText(By.id("what"), "no runtime applies a queued message");
    d.findElement(By.id("confirm")).click();
    browser.awaitText(By.id("done"), "Paused");
    browser.awaitText(By.id("pause"), "Paused since");

    List<String> before = column("queue-items", "id");
    assertThat(before).isNotEmpty();
    d.findElement(
            By.cssSelector("#queue-items tr[data-id='" + before.get(0) + "'] a.cancel-message"))
        .click();
    browser.awaitText(By.id("what"), "Remove queued message " + before.get(0));
    d.findElement(By.id("confirm")).click();
    browser.awaitText(By.id("done"), "Removed the message from the queue.");
    assertThat(column("queue-items", "id")).doesNotContain(before.get(0));

    d.findElement(By.id("resume-link")).click();
    d.findElement(By.id("confirm")).click();
    browser.awaitText(By.id("done"), "Resumed");
    browser.awaitText(By.id("pause"), "Consuming.");
  }
}
