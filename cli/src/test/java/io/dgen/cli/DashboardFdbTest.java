package io.dgen.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.dgen.admin.DGenAdmin;
import io.dgen.admin.Tuids;
import io.dgen.backend.Backend;
import io.dgen.backend.fdb.FdbTestEnvironment;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.openqa.selenium.By;
import org.openqa.selenium.WebElement;

/**
 * {@code dgen ui} over FoundationDB: the click-through and a re-queue in the browser, and the first
 * page of a tenant of 100,000 servers, measured.
 */
@ExtendWith(FdbTestEnvironment.class)
class DashboardFdbTest {

  @Test
  void clickThroughAndRequeue_onFoundationDb() throws Exception {
    String id = UUID.randomUUID().toString();
    try (Backend fdb = FdbTestEnvironment.openBackend()) {
      try (UiFixture ui = new UiFixture(fdb, true, 1_000_000, "dgen-ui-test", id);
          Browser browser = Browser.start()) {
        var d = browser.driver;
        String tenant = "dgen-ui-test/" + id;
        d.get(ui.url("/"));
        browser.awaitText(By.cssSelector("tr[data-tenant='" + tenant + "'] td.servers"), "3");
        d.findElement(By.linkText(tenant)).click();
        browser.awaitText(By.id("servers"), ShopFixture.ORDERS);
        d.findElement(By.linkText(ShopFixture.ORDERS)).click();
        browser.awaitText(By.id("state-json"), "\"total\" : 8");
        // FoundationDB's versions follow the clock: ages are estimates
        assertThat(d.findElement(By.cssSelector("td[data-field='oldest item']")).getText())
            .startsWith("≈ ");
        WebElement declined =
            d.findElements(By.cssSelector("#dead-letter-items tbody tr")).stream()
                .filter(tr -> tr.getText().contains("card declined"))
                .findFirst()
                .orElseThrow();
        declined.findElement(By.cssSelector("a.requeue-tail")).click();
        d.findElement(By.id("confirm")).click();
        browser.awaitText(By.id("done"), "Re-queued at the tail of the queue: 1 dead letter");
        assertThat(
                new DGenAdmin(fdb)
                    .tenant("dgen-ui-test", id)
                    .orElseThrow()
                    .server(Tuids.parse(ShopFixture.ORDERS))
                    .orElseThrow()
                    .peek(10))
            .extracting(i -> i.message().toString())
            .last()
            .isEqualTo("{\"why\":\"card declined\"}");
        assertThat(ui.watched.writes()).isEqualTo(1);
      } finally {
        fdb.removeDirectory("dgen-ui-test", id);
      }
    }
  }

  @Test
  void firstPageOfAHundredThousandServers_onFoundationDb() throws Exception {
    String id = UUID.randomUUID().toString();
    try (Backend fdb = FdbTestEnvironment.openBackend()) {
      try {
        BigTenant.fill(fdb, DashboardScaleTest.SERVERS, 2_000, "dgen-ui-big", id);
        DashboardScaleTest.measure(fdb, 1_000_000, "fdb", "dgen-ui-big", id);
      } finally {
        fdb.removeDirectory("dgen-ui-big", id);
      }
    }
  }
}
