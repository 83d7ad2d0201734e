package io.dgen.cli.ui;

import java.util.List;

/**
 * {@code /}: every tenant with its server count and total queue depth, from the tenant's last
 * background scan (a page view asks for a new one when it is stale). Listing the tenants is one
 * directory listing; nothing here reads a tenant's servers in the request.
 */
final class TenantsPage implements Page {

  private final Ui ui;

  TenantsPage(Ui ui) {
    this.ui = ui;
  }

  @Override
  public String path() {
    return "/";
  }

  @Override
  public String nav() {
    return "Tenants";
  }

  @Override
  public Http.Response handle(Http.Request request) {
    List<List<String>> tenants = ui.admin.tenants();
    Html body = new Html();
    boolean counting = false;
    if (tenants.isEmpty()) {
      body.el("p", "No tenants: nothing is stored yet.");
    } else {
      body.table("tenants", "Tenant", "Servers", "Queued messages", "Counted", "");
      for (List<String> path : tenants) {
        TenantScans.View v = ui.scans.view(path);
        counting |= v.last() == null && v.error() == null;
        String name = Urls.tenant(path);
        body.open("tr", "data-tenant", name);
        body.open("td").link(Urls.of("/tenant", "t", name), name).close("td");
        ScanCells.totals(body, v, ui);
        body.open("td").link(Urls.of("/live", "t", name), "live").close("td");
        body.close("tr");
      }
      body.endTable();
      body.el(
          "p",
          "Counts come from a background scan of each tenant's servers (at most "
              + ui.scans.cap()
              + " servers each, one after the other), repeated when this page is shown and the"
              + " last count is older than 15 s.",
          "class",
          "note");
    }
    Http.Response page = ui.page(200, "Tenants", body);
    // refreshed until every tenant has a first count; later scans show on the next visit
    return counting ? page.withHeader("Refresh", "2") : page;
  }
}
