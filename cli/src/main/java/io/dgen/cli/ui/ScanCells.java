package io.dgen.cli.ui;

import org.jspecify.annotations.Nullable;

/** How a page shows a tenant's scan: totals, progress, and the note on what was counted. */
final class ScanCells {

  private ScanCells() {}

  /** Three cells: servers, queue depth, when counted (or the scan's progress). */
  static void totals(Html h, TenantScans.View v, Ui ui) {
    TenantScans.Result last = v.last();
    if (last == null) {
      h.el("td", "…", "class", "num").el("td", "…", "class", "num");
      h.open("td");
      progress(h, v, null);
      h.close("td");
      return;
    }
    h.el("td", last.servers() + (last.capped() ? "+" : ""), "class", "num servers");
    h.el("td", last.depth(), "class", "num depth");
    h.open("td").text(ui.time(last.finished()));
    if (v.busy()) {
      h.text(" ");
      progress(h, v, last);
    }
    h.close("td");
  }

  /** A progress bar of the running scan (against the last scan's count), or its error. */
  static void progress(Html h, TenantScans.View v, TenantScans.@Nullable Result last) {
    if (v.error() != null) {
      h.el("span", "scan failed: " + v.error(), "class", "error");
    } else if (v.running() >= 0) {
      String max = last == null ? null : Long.toString(Math.max(last.servers(), v.running()));
      h.open("progress", "value", Long.toString(v.running()), "max", max).close("progress");
      h.el("span", " scanning: " + v.running() + " servers so far", "class", "scanning");
    } else if (v.queued()) {
      h.el("span", "scan queued", "class", "scanning");
    }
  }
}
