package io.dgen.cli.ui;

import java.util.List;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * {@code /live?t=T}: a tenant's queue depth and throughput over the last minutes, drawn as SVG by
 * {@code live.js}, which polls {@code /api/live?t=T} every {@value #POLL_SECONDS} seconds. Each
 * point is one background scan of the tenant ({@link TenantScans}), repeated while someone polls: a
 * small tenant gets a point every few seconds, a large one a point per scan.
 */
final class LivePage implements Page {

  static final int POLL_SECONDS = 3;

  private final Ui ui;

  LivePage(Ui ui) {
    this.ui = ui;
  }

  @Override
  public String path() {
    return "/live";
  }

  @Override
  public Http.Response handle(Http.Request r) {
    List<String> path = Ui.tenantPath(r);
    ui.tenant(path);
    String name = Urls.tenant(path);
    Html h = new Html();
    h.open("p", "class", "crumbs")
        .link("/", "Tenants")
        .text(" / ")
        .link(Urls.of("/tenant", "t", name), name)
        .text(" / live")
        .close("p");
    h.open(
        "div",
        "id",
        "live",
        "data-src",
        Urls.of("/api/live", "t", name),
        "data-poll",
        Integer.toString(POLL_SECONDS * 1000));
    h.el("p", "Waiting for the first scan…", "id", "live-status", "class", "note");
    h.el("h2", "Queued messages");
    h.open("div", "id", "depth-chart", "class", "chart").close("div");
    h.el("h2", "Throughput (messages consumed per second)");
    h.open("div", "id", "rate-chart", "class", "chart").close("div");
    h.close("div");
    h.el(
        "p",
        "Each point is a scan of every server's counters (at most "
            + ui.scans.cap()
            + " servers), repeated while this page is open, at least "
            + POLL_SECONDS
            + " s apart and at most half of the time; the last "
            + TenantScans.HISTORY_MINUTES
            + " minutes are kept. Throughput is the change of the consumed counters between two"
            + " scans; servers started or killed in between distort that interval.",
        "class",
        "note");
    return ui.page(200, "Live: " + name, h, "/static/live.js");
  }

  /** {@code /api/live?t=T}: the points, as JSON; marks the tenant as watched. */
  static final class Data implements Page {
    private final Ui ui;

    Data(Ui ui) {
      this.ui = ui;
    }

    @Override
    public String path() {
      return "/api/live";
    }

    @Override
    public Http.Response handle(Http.Request r) {
      List<String> path = Ui.tenantPath(r);
      ui.tenant(path);
      TenantScans.View v = ui.scans.watch(path);
      ObjectNode o = Ui.COMPACT.createObjectNode();
      ArrayNode points = o.putArray("points");
      TenantScans.Point previous = null;
      for (TenantScans.Point p : v.history()) {
        ObjectNode n = points.addObject();
        n.put("t", p.at().toEpochMilli());
        n.put("depth", p.depth());
        if (previous != null) {
          double seconds = (p.at().toEpochMilli() - previous.at().toEpochMilli()) / 1000.0;
          n.put("rate", seconds <= 0 ? 0 : Math.max(0, p.popped() - previous.popped()) / seconds);
        }
        previous = p;
      }
      TenantScans.Result last = v.last();
      o.put("servers", last == null ? -1 : last.servers());
      o.put("capped", last != null && last.capped());
      o.put("scanMillis", last == null ? -1 : last.took().toMillis());
      o.put("scanning", v.running());
      o.put("error", v.error());
      return Http.Response.json(Ui.COMPACT.writeValueAsString(o));
    }
  }
}
