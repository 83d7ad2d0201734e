package io.dgen.cli.ui;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.admin.ServerAdmin;
import io.dgen.admin.TenantAdmin.ServerSummary;
import io.dgen.admin.Tuids;
import java.time.Duration;
import java.time.Instant;
import java.util.HexFormat;
import java.util.List;
import org.jspecify.annotations.Nullable;
import tools.jackson.databind.JsonNode;

/**
 * {@code /server?t=T&tuid=U}: one server. Its summary (counters, oldest item, lock), the lock
 * holder, the state as JSON, the first {@value #QUEUED} queued messages, the first {@value #LISTED}
 * dead letters, timers and kept replies, each section a bounded read; and, when writes are allowed,
 * links to the actions (each behind a confirmation page).
 */
final class ServerPage implements Page {

  static final int QUEUED = 20;
  static final int LISTED = 100;

  private final Ui ui;

  ServerPage(Ui ui) {
    this.ui = ui;
  }

  @Override
  public String path() {
    return "/server";
  }

  @Override
  public Http.Response handle(Http.Request r) {
    List<String> path = Ui.tenantPath(r);
    Tuple tuid = Ui.tuid(r);
    ServerAdmin s = ui.server(path, tuid);
    String tenant = Urls.tenant(path);
    String literal = Tuids.format(tuid);
    Instant before = ui.clock.instant();
    ServerSummary summary = s.summary();
    ui.versions.record(summary.readVersion(), before, ui.clock.instant());

    Html h = new Html();
    h.open("p", "class", "crumbs")
        .link("/", "Tenants")
        .text(" / ")
        .link(Urls.of("/tenant", "t", tenant), tenant)
        .text(" / " + literal)
        .close("p");
    String done = Actions.doneMessage(r);
    if (done != null) {
      h.el("p", done, "class", "done", "id", "done");
    }
    if (!ui.allowWrites) {
      h.el(
          "p",
          "Read-only: this dashboard was started without --allow-writes; its actions say so"
              + " and write nothing.",
          "class",
          "note",
          "id",
          "read-only-note");
    }
    overview(h, s, summary);
    section(h, "State", "state");
    h.el(
        "pre",
        s.state().map(Ui::pretty).orElse("(no state stored)"),
        "class",
        "json",
        "id",
        "state-json");
    h.close("section");
    queue(h, s, summary, path, tuid);
    deadLetters(h, s, path, tuid);
    timers(h, s, path, tuid, r.param("timers-after"));
    keptReplies(h, s);
    section(h, "Kill", "kill");
    h.el(
        "p",
        "Removes the server with its state, queue, lock, dead letters and timers; waiting callers"
            + " fail.");
    h.open("p")
        .link(
            Actions.confirmUrl("kill", path, tuid),
            "Kill this server…",
            "class",
            "danger",
            "id",
            "kill-link")
        .close("p");
    h.close("section");
    return ui.page(200, "Server " + literal, h);
  }

  private static void section(Html h, String title, String id) {
    h.open("section", "id", id).el("h2", title);
  }

  private void overview(Html h, ServerAdmin s, ServerSummary summary) {
    h.open("table", "class", "fields", "id", "overview");
    row(h, "behaviour", s.behaviour().orElse("- (not indexed)"));
    row(h, "queued", Long.toString(summary.queueLength()));
    row(h, "pushed / consumed", summary.pushed() + " / " + summary.popped());
    row(
        h,
        "oldest item",
        summary.oldestVersion().isPresent() ? ui.age(summary.oldestVersion().getAsLong()) : "-");
    var lock = s.lock().orElse(null);
    if (lock == null) {
      row(h, "lock", "-");
    } else {
      row(
          h,
          "lock",
          "held by "
              + lock.token()
              + " since "
              + ui.time(lock.acquiredAt())
              + " ("
              + VersionClock.format(lock.age())
              + "), message "
              + (lock.item().type() == null ? "(declared type)" : lock.item().type())
              + " "
              + Ui.compact(lock.item().message(), 300));
    }
    var stuck = s.stuck().orElse(null);
    row(
        h,
        "stuck",
        stuck == null
            ? "-"
            : "since "
                + ui.time(stuck.since())
                + " (member "
                + stuck.member()
                + "): its state does not decode, and its holder loads it again only after a"
                + " backoff; replace the state to repair it: "
                + stuck.reason());
    h.close("table");
  }

  private static void row(Html h, String name, String value) {
    h.open("tr").el("th", name).el("td", value, "data-field", name).close("tr");
  }

  private void queue(Html h, ServerAdmin s, ServerSummary summary, List<String> path, Tuple tuid) {
    section(h, "Queue", "queue");
    var pause = s.paused().orElse(null);
    h.open("p", "id", "pause");
    if (pause == null) {
      h.text("Consuming. ")
          .link(
              Actions.confirmUrl("pause", path, tuid),
              "Pause…",
              "class",
              "danger",
              "id",
              "pause-link");
    } else {
      h.text(
              "Paused since "
                  + ui.time(pause.since())
                  + (pause.reason().isEmpty() ? "" : " (" + pause.reason() + ")")
                  + ": no runtime applies a queued message. ")
          .link(Actions.confirmUrl("resume", path, tuid), "Resume…", "id", "resume-link");
    }
    h.close("p");
    List<ServerAdmin.QueuedItem> items = s.peek(QUEUED);
    if (items.isEmpty()) {
      h.el("p", "Empty.");
    } else {
      h.el(
          "p",
          "The first "
              + items.size()
              + " of "
              + summary.queueLength()
              + ", next to be consumed first.",
          "class",
          "note");
      h.table("queue-items", "Id", "Age", "Kind", "Type", "Failures", "Message", "");
      for (ServerAdmin.QueuedItem i : items) {
        h.open("tr", "data-id", i.id());
        h.el("td", i.id(), "class", "id");
        h.el("td", ui.age(version(i.id())), "class", "num");
        h.el("td", i.kind());
        h.el("td", i.type() == null ? "-" : i.type());
        h.el("td", i.failures(), "class", "num");
        message(h, i);
        cancelCell(h, Actions.confirmUrl("cancel-message", path, tuid, "id", i.id()), "message");
      }
      h.endTable();
    }
    h.close("section");
  }

  /**
   * A row's last cell, its cancel link (class {@code cancel} or {@code cancel-message}), ending it.
   */
  private static void cancelCell(Html h, String confirmUrl, @Nullable String what) {
    h.open("td", "class", "actions");
    h.link(confirmUrl, "cancel", "class", what == null ? "danger cancel" : "danger cancel-" + what);
    h.close("td").close("tr");
  }

  private static void message(Html h, ServerAdmin.QueuedItem i) {
    if (i.message() == null) {
      h.el("td", "undecodable: " + i.error(), "class", "error");
    } else {
      h.el("td", Ui.compact(i.message(), 2000), "class", "message");
    }
  }

  private void deadLetters(Html h, ServerAdmin s, List<String> path, Tuple tuid) {
    section(h, "Dead letters", "dead-letters");
    List<ServerAdmin.DeadLetterEntry> dead = s.deadLetters(LISTED + 1);
    if (dead.isEmpty()) {
      h.el("p", "None.");
      h.close("section");
      return;
    }
    boolean more = dead.size() > LISTED;
    if (more) {
      dead = dead.subList(0, LISTED);
    }
    h.el(
        "p",
        more
            ? "The first " + LISTED + " (there are more), oldest first."
            : dead.size()
                + (dead.size() == 1 ? " dead letter" : " dead letters")
                + ", oldest first.",
        "class",
        "note");
    h.open("p", "class", "actions");
    h.link(
            Actions.confirmUrl("requeue-all", path, tuid, "lane", "head"),
            "Re-queue all at the head…")
        .text(" ");
    h.link(
            Actions.confirmUrl("requeue-all", path, tuid, "lane", "tail"),
            "Re-queue all at the tail…")
        .text(" ");
    h.link(Actions.confirmUrl("purge-all", path, tuid), "Purge all…", "class", "danger");
    h.close("p");
    h.table("dead-letter-items", "Id", "Moved", "Attempts", "Type", "Error", "Message", "");
    for (ServerAdmin.DeadLetterEntry d : dead) {
      h.open("tr", "data-id", d.id());
      h.el("td", d.id(), "class", "id");
      h.el("td", ui.time(d.at()));
      h.el("td", d.attempts(), "class", "num");
      h.el("td", d.item().type() == null ? "-" : d.item().type());
      h.el("td", d.error(), "class", "error");
      message(h, d.item());
      h.open("td", "class", "actions");
      h.link(
              Actions.confirmUrl("requeue", path, tuid, "id", d.id(), "lane", "head"),
              "re-queue at head",
              "class",
              "requeue-head")
          .text(" ");
      h.link(
              Actions.confirmUrl("requeue", path, tuid, "id", d.id(), "lane", "tail"),
              "at tail",
              "class",
              "requeue-tail")
          .text(" ");
      h.link(
          Actions.confirmUrl("purge", path, tuid, "id", d.id()), "purge", "class", "danger purge");
      h.close("td");
      h.close("tr");
    }
    h.endTable();
    h.close("section");
  }

  private void timers(
      Html h, ServerAdmin s, List<String> path, Tuple tuid, @Nullable String after) {
    section(h, "Timers", "timers");
    ServerAdmin.TimerPage page;
    try {
      page = s.timers(after, LISTED);
    } catch (IllegalArgumentException e) {
      throw new Http.Failure(400, e.getMessage());
    }
    List<ServerAdmin.PendingTimer> timers = page.timers();
    if (timers.isEmpty()) {
      h.el("p", after == null ? "None pending." : "No more pending.");
    } else {
      if (after != null || page.next() != null) {
        h.el(
            "p",
            "Pages of "
                + LISTED
                + " by timer id, soonest first within a page: the soonest of all may be on"
                + " another page.",
            "class",
            "note");
      }
      h.table("timer-items", "Id", "Due", "In", "Schedule", "Type", "Message", "");
      Instant now = ui.clock.instant();
      for (ServerAdmin.PendingTimer t : timers) {
        h.open("tr", "data-id", t.id());
        h.el("td", t.id(), "class", "id");
        h.el("td", ui.time(t.due()));
        Duration in = Duration.between(now, t.due());
        h.el("td", in.isNegative() ? "due" : VersionClock.format(in), "class", "num");
        h.el("td", t.schedule() == null ? "once" : t.schedule(), "class", "schedule");
        h.el("td", t.item().type() == null ? "-" : t.item().type());
        message(h, t.item());
        cancelCell(h, Actions.confirmUrl("cancel-timer", path, tuid, "id", t.id()), null);
      }
      h.endTable();
    }
    String[] id = Urls.tuid(tuid);
    String tenant = Urls.tenant(path);
    h.open("p", "class", "pager");
    if (after != null) {
      h.link(Urls.of("/server", "t", tenant, id[0], id[1]) + "#timers", "« first timers").text(" ");
    }
    if (page.next() != null) {
      h.link(
          Urls.of("/server", "t", tenant, id[0], id[1], "timers-after", page.next()) + "#timers",
          "more timers »",
          "id",
          "timers-next");
    }
    h.close("p");
    h.close("section");
  }

  private void keptReplies(Html h, ServerAdmin s) {
    section(h, "Kept replies", "kept-replies");
    List<ServerAdmin.KeptReply> kept = s.keptReplies(LISTED + 1);
    if (kept.isEmpty()) {
      h.el("p", "None.");
      h.close("section");
      return;
    }
    if (kept.size() > LISTED) {
      kept = kept.subList(0, LISTED);
      h.el("p", "The " + LISTED + " that expire first (there are more).", "class", "note");
    }
    h.table("kept-items", "Call id", "Expires", "Status", "Type", "Reply or error");
    for (ServerAdmin.KeptReply k : kept) {
      h.open("tr");
      h.el("td", k.callId(), "class", "id");
      h.el("td", ui.time(k.expiresAt()));
      h.el("td", k.status());
      h.el("td", k.type() == null ? "-" : k.type());
      JsonNode v = k.value();
      h.el(
          "td",
          k.error() != null ? k.error() : Ui.compact(v, 2000),
          "class",
          k.error() != null ? "error" : "message");
      h.close("tr");
    }
    h.endTable();
    h.close("section");
  }

  /** The commit version in an item id (24 hex digits: the versionstamp). */
  private static long version(String id) {
    byte[] b = HexFormat.of().parseHex(id);
    long v = 0;
    for (int i = 0; i < 8; i++) {
      v = (v << 8) | (b[i] & 0xff);
    }
    return v;
  }
}
