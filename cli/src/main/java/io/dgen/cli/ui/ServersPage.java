package io.dgen.cli.ui;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.admin.TenantAdmin;
import io.dgen.admin.TenantAdmin.ServerSummary;
import io.dgen.admin.Tuids;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * {@code /tenant?t=T}: a tenant's servers, {@value #PAGE} to a page.
 *
 * <ul>
 *   <li>In tuid order (the default): one page of the server index from a cursor, with each server's
 *       summary, in one transaction ({@link TenantAdmin#summaries}); searchable by the beginning of
 *       a tuid ({@code q}: a range of the index, not a filter).
 *   <li>By queue depth or by the age of the oldest item: an order over the whole tenant needs every
 *       server's counters, which no request reads; these listings show the ranking of the tenant's
 *       last background scan ({@link TenantScans}: its top servers, the scan's time and size stated
 *       on the page) and a search filters that ranking.
 * </ul>
 */
final class ServersPage implements Page {

  static final int PAGE = 50;

  private final Ui ui;

  ServersPage(Ui ui) {
    this.ui = ui;
  }

  @Override
  public String path() {
    return "/tenant";
  }

  @Override
  public Http.Response handle(Http.Request r) {
    List<String> path = Ui.tenantPath(r);
    TenantAdmin tenant = ui.tenant(path);
    String name = Urls.tenant(path);
    String q = r.param("q") == null ? "" : r.param("q");
    Tuids.Prefix prefix;
    try {
      prefix = Tuids.prefix(q);
    } catch (IllegalArgumentException e) {
      throw new Http.Failure(400, e.getMessage());
    }
    String sort = r.param("sort") == null ? "tuid" : r.param("sort");
    if (!List.of("tuid", "depth", "age").contains(sort)) {
      throw new Http.Failure(400, "sort must be tuid, depth or age: " + sort);
    }
    Html body = new Html();
    body.open("p", "class", "crumbs")
        .link("/", "Tenants")
        .text(" / " + name + " · ")
        .link(Urls.of("/live", "t", name), "live view")
        .text(" · ")
        .link(Urls.of("/placement", "t", name), "placement")
        .close("p");
    String done = Actions.doneMessage(r);
    if (done != null) {
      body.el("p", done, "class", "done", "id", "done");
    }
    searchForm(body, name, q, sort);
    boolean waiting = false;
    if (sort.equals("tuid")) {
      inTuidOrder(body, r, tenant, path, prefix, q);
    } else {
      waiting = ranked(body, r, path, prefix, q, sort);
    }
    Http.Response page = ui.page(200, "Servers of " + name, body);
    return waiting ? page.withHeader("Refresh", "2") : page;
  }

  private void searchForm(Html h, String tenant, String q, String sort) {
    h.open("form", "method", "get", "action", "/tenant", "class", "search", "id", "search");
    h.hidden("t", tenant);
    h.open("label").text("tuid starts with ");
    h.open(
        "input",
        "type",
        "search",
        "name",
        "q",
        "value",
        q,
        "id",
        "q",
        "placeholder",
        "orders   or   (\"orders\", 4");
    h.close("label");
    h.open("label").text(" sort by ").open("select", "name", "sort", "id", "sort");
    for (String[] o :
        new String[][] {{"tuid", "tuid"}, {"depth", "queue depth"}, {"age", "oldest item"}}) {
      h.el("option", o[1], "value", o[0], "selected", o[0].equals(sort) ? "" : null);
    }
    h.close("select").close("label");
    h.el("button", "Show", "type", "submit", "id", "show");
    h.close("form");
  }

  private void inTuidOrder(
      Html h,
      Http.Request r,
      TenantAdmin tenant,
      List<String> path,
      Tuids.Prefix prefix,
      String q) {
    String afterParam = r.param("after");
    Tuple after = afterParam == null ? null : Urls.unpack(afterParam);
    Instant before = ui.clock.instant();
    TenantAdmin.SummaryPage page = tenant.summaries(prefix, after, PAGE);
    Instant read = ui.clock.instant();
    if (!page.servers().isEmpty()) {
      ui.versions.record(page.servers().get(0).readVersion(), before, read);
    }
    if (page.servers().isEmpty()) {
      h.el(
          "p",
          prefix.isAll() ? "No servers." : "No server's tuid starts with " + q + ".",
          "id",
          "none");
    } else {
      table(h, path, page.servers());
    }
    String name = Urls.tenant(path);
    h.open("p", "class", "pager");
    if (after != null) {
      h.link(Urls.of("/tenant", "t", name, "q", q.isEmpty() ? null : q), "« first page").text(" ");
    }
    if (page.next() != null) {
      h.link(
          Urls.of(
              "/tenant", "t", name, "q", q.isEmpty() ? null : q, "after", Urls.packed(page.next())),
          "next page »",
          "id",
          "next");
    }
    h.close("p");
    h.el(
        "p",
        "In tuid order, "
            + PAGE
            + " to a page, read from the tenant's server index at each request.",
        "class",
        "note");
  }

  /**
   * The ranking of the last scan; true while there is none yet (the page refreshes itself until the
   * first scan ends, and no longer: a page being read does not move under the reader).
   */
  private boolean ranked(
      Html h, Http.Request r, List<String> path, Tuids.Prefix prefix, String q, String sort) {
    TenantScans.View v = ui.scans.view(path);
    TenantScans.Result last = v.last();
    String what = sort.equals("depth") ? "queue depth" : "age of the oldest queued item";
    if (last == null) {
      h.open("p", "id", "scan-progress");
      h.text("Sorting by " + what + " needs a scan of the whole tenant: ");
      ScanCells.progress(h, v, null);
      h.close("p");
      return v.error() == null;
    }
    List<ServerSummary> ranking = sort.equals("depth") ? last.byDepth() : last.byAge();
    List<ServerSummary> matching = new ArrayList<>();
    for (ServerSummary s : ranking) {
      if (prefix.matches(s.tuid())) {
        matching.add(s);
      }
    }
    int from = parseFrom(r.param("from"), matching.size());
    List<ServerSummary> shown = matching.subList(from, Math.min(matching.size(), from + PAGE));
    h.open("p", "class", "note", "id", "window");
    h.text(
        "Sorted by "
            + what
            + " over the "
            + last.servers()
            + (last.capped()
                ? " servers the scan read before its cap of " + ui.scans.cap()
                : " servers")
            + " of a background scan finished at "
            + ui.time(last.finished())
            + " (took "
            + last.took().toMillis()
            + " ms); it keeps the top "
            + ui.scans.top()
            + (prefix.isAll() ? "" : ", of which " + matching.size() + " match the search")
            + (sort.equals("age") ? "; servers with empty queues are not ranked" : "")
            + ". Counters were read then; open a server for its current state. ");
    if (v.busy()) {
      ScanCells.progress(h, v, last);
    }
    h.close("p");
    if (shown.isEmpty()) {
      h.el("p", "No servers.", "id", "none");
    } else {
      table(h, path, shown);
    }
    String name = Urls.tenant(path);
    h.open("p", "class", "pager");
    if (from > 0) {
      h.link(rankedUrl(name, q, sort, Math.max(0, from - PAGE)), "« previous").text(" ");
    }
    if (from + PAGE < matching.size()) {
      h.link(rankedUrl(name, q, sort, from + PAGE), "next »", "id", "next");
    }
    h.close("p");
    return false;
  }

  private static String rankedUrl(String tenant, String q, String sort, int from) {
    return Urls.of(
        "/tenant",
        "t",
        tenant,
        "q",
        q.isEmpty() ? null : q,
        "sort",
        sort,
        "from",
        Integer.toString(from));
  }

  private static int parseFrom(@Nullable String from, int size) {
    if (from == null) {
      return 0;
    }
    try {
      return Math.max(0, Math.min(Integer.parseInt(from), Math.max(0, size - 1)));
    } catch (NumberFormatException e) {
      throw new Http.Failure(400, "from must be a number: " + from);
    }
  }

  private void table(Html h, List<String> path, List<ServerSummary> servers) {
    h.table("servers", "Tuid", "Behaviour", "Queued", "Oldest item", "Dead letters", "Lock");
    for (ServerSummary s : servers) {
      h.open("tr");
      h.open("td", "class", "tuid")
          .link(Urls.server(path, s.tuid()), Tuids.format(s.tuid()))
          .close("td");
      h.el("td", s.behaviour() == null ? "-" : s.behaviour(), "class", "behaviour");
      h.el("td", s.queueLength(), "class", "num depth");
      h.el(
          "td",
          s.oldestVersion().isPresent() ? ui.age(s.oldestVersion().getAsLong()) : "-",
          "class",
          "num age");
      h.el("td", s.hasDeadLetters() ? "yes" : "-", "class", "dead");
      h.el("td", s.lockedSince().map(t -> "since " + ui.time(t)).orElse("-"), "class", "lock");
      h.close("tr");
    }
    h.endTable();
  }
}
