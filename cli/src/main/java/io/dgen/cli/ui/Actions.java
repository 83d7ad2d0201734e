package io.dgen.cli.ui;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.admin.ServerAdmin;
import io.dgen.admin.Tuids;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * The actions, each behind a confirmation: a link leads to {@code GET /confirm}, which says what
 * will happen and holds the form; the form posts to {@code POST /action}, which does it and
 * redirects back with what was done.
 *
 * <pre>
 * op            parameters   does
 * requeue       id, lane     one dead letter back to the head or tail of the queue
 * requeue-all   lane         every dead letter back to the head or tail
 * purge         id           deletes one dead letter
 * purge-all                  deletes every dead letter
 * cancel-timer  id           cancels one pending timer
 * cancel-message id          removes one queued message
 * pause                      pauses the server's consumption
 * resume                     resumes it
 * kill                       removes the server
 * </pre>
 *
 * Without {@code --allow-writes}, {@code /confirm} says the dashboard is read-only (its button is
 * disabled), and {@code /action} refuses before it opens the tenant: nothing is read or written.
 */
final class Actions {

  private static final List<String> OPS =
      List.of(
          "requeue",
          "requeue-all",
          "purge",
          "purge-all",
          "cancel-timer",
          "cancel-message",
          "pause",
          "resume",
          "kill");

  /** What a redirect after an action may say: fixed texts, chosen by a code. */
  private static final Map<String, String> DONE =
      Map.of(
          "requeued-head", "Re-queued at the head of the queue: ",
          "requeued-tail", "Re-queued at the tail of the queue: ",
          "purged", "Purged: ",
          "cancelled", "Cancelled the timer.",
          "not-found", "Nothing to do: it was already gone.",
          "message-cancelled", "Removed the message from the queue.",
          "paused", "Paused: the server consumes nothing until it is resumed.",
          "resumed", "Resumed: the server consumes its queue again.",
          "already", "Nothing to do: it was so already.",
          "killed", "Killed the server.");

  private Actions() {}

  /** The link to the confirmation of {@code op} on a server. */
  static String confirmUrl(String op, List<String> tenant, Tuple tuid, String... more) {
    String[] t = Urls.tuid(tuid);
    String[] all = new String[6 + more.length];
    all[0] = "op";
    all[1] = op;
    all[2] = "t";
    all[3] = Urls.tenant(tenant);
    all[4] = t[0];
    all[5] = t[1];
    System.arraycopy(more, 0, all, 6, more.length);
    return Urls.of("/confirm", all);
  }

  /** The message of a redirect's {@code done} code, or null. */
  static @Nullable String doneMessage(Http.Request r) {
    String code = r.param("done");
    if (code == null || !DONE.containsKey(code)) {
      return null;
    }
    String n = r.param("n");
    String count =
        n != null && n.matches("\\d{1,9}") ? n + " dead letter" + (n.equals("1") ? "" : "s") : "";
    return DONE.get(code) + (DONE.get(code).endsWith(": ") ? count : "");
  }

  /** What {@code op} will do, in words. */
  private static String describe(String op, @Nullable String id, boolean head, String server) {
    String where = head ? "the head" : "the tail";
    return switch (op) {
      case "requeue" ->
          "Re-queue dead letter "
              + id
              + " of "
              + server
              + " at "
              + where
              + " of its queue, with its failure count cleared.";
      case "requeue-all" ->
          "Re-queue every dead letter of "
              + server
              + " at "
              + where
              + " of its queue, with their failure counts cleared.";
      case "purge" -> "Delete dead letter " + id + " of " + server + " for good.";
      case "purge-all" -> "Delete every dead letter of " + server + " for good.";
      case "cancel-timer" -> "Cancel timer " + id + " of " + server + ": it will not fire.";
      case "cancel-message" ->
          "Remove queued message "
              + id
              + " of "
              + server
              + ": it will not be applied. If it is a call, its caller waits until its timeout.";
      case "pause" ->
          "Pause "
              + server
              + ": no runtime applies a queued message until it is resumed. Casts, calls and"
              + " timers still queue; queued calls wait or time out; priority messages still run.";
      case "resume" -> "Resume " + server + ": its queue is consumed again, in order.";
      case "kill" ->
          "Kill "
              + server
              + ": remove its state, queue, lock, dead letters and timers. Waiting callers fail. This cannot be undone.";
      default -> throw new Http.Failure(400, "no action " + op);
    };
  }

  /** The action a request names, checked. */
  private record Action(
      String op, List<String> tenant, Tuple tuid, @Nullable String id, boolean head) {
    static Action of(Http.Request r) {
      String op = r.required("op");
      if (!OPS.contains(op)) {
        throw new Http.Failure(400, "no action " + op + "; one of " + OPS);
      }
      String id = r.param("id");
      if (List.of("requeue", "purge", "cancel-timer", "cancel-message").contains(op)
          && (id == null || id.isBlank())) {
        throw new Http.Failure(400, "missing parameter 'id'");
      }
      String lane = r.param("lane");
      if (op.startsWith("requeue") && !"head".equals(lane) && !"tail".equals(lane)) {
        throw new Http.Failure(400, "lane must be head or tail");
      }
      return new Action(op, Ui.tenantPath(r), Ui.tuid(r), id, "head".equals(lane));
    }

    String server() {
      return Tuids.format(tuid) + " in tenant " + Urls.tenant(tenant);
    }
  }

  /** {@code GET /confirm}: what will happen, and the form that does it. */
  static final class Confirm implements Page {
    private final Ui ui;

    Confirm(Ui ui) {
      this.ui = ui;
    }

    @Override
    public String path() {
      return "/confirm";
    }

    @Override
    public Http.Response handle(Http.Request r) {
      Action a = Action.of(r);
      Html h = new Html();
      h.el("p", describe(a.op(), a.id(), a.head(), a.server()), "id", "what");
      if (!ui.allowWrites) {
        h.el(
            "p",
            "This dashboard is read-only: it was started without --allow-writes, and refuses"
                + " this action.",
            "class",
            "error",
            "id",
            "read-only");
      }
      h.open("form", "method", "post", "action", "/action", "id", "confirm-form");
      h.hidden("csrf", ui.csrf);
      h.hidden("op", a.op());
      h.hidden("t", Urls.tenant(a.tenant()));
      String[] t = Urls.tuid(a.tuid());
      h.hidden(t[0], t[1]);
      if (a.id() != null) {
        h.hidden("id", a.id());
      }
      if (a.op().startsWith("requeue")) {
        h.hidden("lane", a.head() ? "head" : "tail");
      }
      h.el(
          "button",
          "Confirm",
          "type",
          "submit",
          "id",
          "confirm",
          "class",
          "danger",
          "disabled",
          ui.allowWrites ? null : "");
      h.text(" ");
      h.link(Urls.server(a.tenant(), a.tuid()), "Cancel", "id", "cancel");
      h.close("form");
      return ui.page(200, "Confirm", h);
    }
  }

  /** {@code POST /action}: does it, then redirects to the server (or, after a kill, its tenant). */
  static final class Act implements Page {
    private final Ui ui;

    Act(Ui ui) {
      this.ui = ui;
    }

    @Override
    public String path() {
      return "/action";
    }

    @Override
    public String method() {
      return "POST";
    }

    @Override
    public Http.Response handle(Http.Request r) {
      if (!ui.allowWrites) {
        throw new Http.Failure(
            403, "read-only: dgen ui was started without --allow-writes; nothing was written");
      }
      Action a = Action.of(r);
      ServerAdmin s = ui.server(a.tenant(), a.tuid());
      String back = Urls.server(a.tenant(), a.tuid());
      try {
        String[] done =
            switch (a.op()) {
              case "requeue" ->
                  s.requeueDeadLetter(a.id(), a.head())
                      ? new String[] {a.head() ? "requeued-head" : "requeued-tail", "1"}
                      : new String[] {"not-found", null};
              case "requeue-all" ->
                  new String[] {
                    a.head() ? "requeued-head" : "requeued-tail",
                    Integer.toString(s.requeueDeadLetters(a.head()))
                  };
              case "purge" ->
                  s.purgeDeadLetter(a.id())
                      ? new String[] {"purged", "1"}
                      : new String[] {"not-found", null};
              case "purge-all" -> new String[] {"purged", Integer.toString(s.purgeDeadLetters())};
              case "cancel-timer" ->
                  s.cancelTimer(a.id())
                      ? new String[] {"cancelled", null}
                      : new String[] {"not-found", null};
              case "cancel-message" ->
                  s.cancelQueued(a.id())
                      ? new String[] {"message-cancelled", null}
                      : new String[] {"not-found", null};
              case "pause" ->
                  s.pause("paused from the dashboard")
                      ? new String[] {"paused", null}
                      : new String[] {"already", null};
              case "resume" ->
                  s.resume() ? new String[] {"resumed", null} : new String[] {"already", null};
              default -> {
                s.kill();
                yield new String[] {"killed", null};
              }
            };
        if (a.op().equals("kill")) {
          return Http.Response.redirect(
              Urls.of("/tenant", "t", Urls.tenant(a.tenant()), "done", "killed"));
        }
        // back has a query already: append to it
        return Http.Response.redirect(
            back + "&" + Urls.of("", "done", done[0], "n", done[1]).substring(1));
      } catch (IllegalArgumentException e) {
        throw new Http.Failure(400, e.getMessage());
      } catch (IllegalStateException e) {
        throw new Http.Failure(409, e.getMessage()); // a pause of a server that is gone
      }
    }
  }
}
