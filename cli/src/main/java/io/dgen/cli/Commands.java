package io.dgen.cli;

import io.dgen.admin.DGenAdmin;
import io.dgen.admin.LimitView;
import io.dgen.admin.ServerAdmin;
import io.dgen.admin.TenantAdmin;
import io.dgen.admin.Tuids;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/** The commands of {@code dgen}. */
final class Commands {

  private Commands() {}

  /** What every command shares: {@code --json}, the output, the admin. */
  abstract static class Base implements Callable<Integer> {
    @Option(names = "--json", description = "print JSON instead of a table")
    boolean json;

    @Spec CommandSpec spec;

    PrintWriter out() {
      return spec.commandLine().getOut();
    }

    /** Prints {@code list} with {@code --json}, else the table of {@code rows}; returns OK. */
    int listing(ArrayNode list, List<String> header, List<List<String>> rows) {
      if (json) {
        Output.json(out(), list);
      } else {
        Output.table(out(), header, rows);
      }
      return Dgen.OK;
    }

    DGenAdmin admin() {
      return ((Dgen) spec.root().userObject()).admin();
    }

    static String[] tenantPath(String tenant) {
      String[] path = tenant.split("/", -1);
      for (String element : path) {
        if (element.isEmpty()) {
          throw new CliException(
              Dgen.USAGE, "malformed tenant " + tenant + ": an empty path element (e.g. shop/eu)");
        }
      }
      return path;
    }

    TenantAdmin tenant(String tenant) {
      String[] path = tenantPath(tenant);
      return admin()
          .tenant(path)
          .orElseThrow(() -> new CliException(Dgen.NOT_FOUND, "no tenant " + tenant));
    }
  }

  /** A command on one server: TENANT TUID. */
  abstract static class OnServer extends Base {
    @Parameters(index = "0", paramLabel = "TENANT", description = "the tenant, e.g. shop/eu")
    String tenant;

    @Parameters(
        index = "1",
        paramLabel = "TUID",
        description = "the server's tuid, a tuple literal, e.g. '(\"orders\", 42)'")
    String tuid;

    ServerAdmin server() {
      var id = Tuids.parse(tuid); // malformed: refused before the backend is opened
      String[] path = tenantPath(tenant);
      return tenant(String.join("/", path))
          .server(id)
          .orElseThrow(
              () ->
                  new CliException(
                      Dgen.NOT_FOUND, "no server " + Tuids.format(id) + " in tenant " + tenant));
    }
  }

  /** A destructive command: refused without {@code --yes}. */
  abstract static class Destructive extends OnServer {
    @Option(names = "--yes", description = "really do it (refused without)")
    boolean yes;

    void confirm(String what) {
      if (!yes) {
        throw new CliException(
            Dgen.REFUSED, what + ": refused without --yes (nothing was written)");
      }
    }

    /** Prints {@code {field: value}} with {@code --json}, else {@code text}; returns OK. */
    int report(String field, Object value, String text) {
      if (json) {
        Output.json(out(), Output.object().put(field, String.valueOf(value)));
      } else {
        out().println(text);
      }
      return Dgen.OK;
    }
  }

  @Command(
      name = "tenants",
      mixinStandardHelpOptions = true,
      description = "List the tenants (directories) and how many servers each indexes.")
  static final class Tenants extends Base {
    @Override
    public Integer call() {
      DGenAdmin admin = admin();
      ArrayNode list = Output.array();
      List<List<String>> rows = new ArrayList<>();
      for (List<String> path : admin.tenants()) {
        String name = String.join("/", path);
        int servers =
            admin.tenant(path.toArray(String[]::new)).map(t -> t.servers().size()).orElse(0);
        list.addObject().put("tenant", name).put("servers", servers);
        rows.add(List.of(name, Integer.toString(servers)));
      }
      return listing(list, List.of("TENANT", "SERVERS"), rows);
    }
  }

  @Command(
      name = "limits",
      mixinStandardHelpOptions = true,
      description =
          "List the rate and concurrency limits runtimes configured: each one's numbers, a rate"
              + " limit's tokens now (negative while runtimes reserved permits ahead) and each"
              + " runtime's share of it, and a concurrency limit's holders.")
  static final class Limits extends Base {
    @Override
    public Integer call() {
      ArrayNode list = Output.array();
      List<List<String>> rows = new ArrayList<>();
      for (LimitView l : admin().limits()) {
        ObjectNode o = list.addObject().put("type", l.type()).put("name", l.name());
        String state;
        if (l.type().equals("rate")) {
          o.put("permitsPerSecond", l.permitsPerSecond()).put("burst", l.burst());
          o.put("tokens", l.tokens());
          ArrayNode shares = o.putArray("shares");
          List<String> parts = new ArrayList<>();
          for (LimitView.Share s : l.shares()) {
            shares
                .addObject()
                .put("runtime", s.runtime().toString())
                .put("permitsPerSecond", s.permitsPerSecond())
                .put("burst", s.burst())
                .put("tokens", s.tokens())
                .put("hungry", s.hungry())
                .put("tookPerSecond", s.tookPerSecond())
                .put("heartbeatAt", s.heartbeatAt().toString());
            parts.add(
                String.format(
                    java.util.Locale.ROOT,
                    "%s %.1f/s%s",
                    s.runtime().toString().substring(0, 8),
                    s.permitsPerSecond(),
                    s.hungry() ? " (hungry)" : ""));
          }
          state =
              String.format(java.util.Locale.ROOT, "tokens %.1f", l.tokens())
                  + (parts.isEmpty() ? "" : ", shares: " + String.join(", ", parts));
        } else {
          o.put("limit", l.limit());
          ArrayNode holders = o.putArray("holders");
          List<String> names = new ArrayList<>();
          for (LimitView.Holder h : l.holders()) {
            holders
                .addObject()
                .put("slot", h.slot())
                .put("holder", h.holder())
                .put("token", h.token())
                .put("acquiredAt", h.acquiredAt().toString())
                .put("expiresAt", h.expiresAt().toString())
                .put("expired", h.expired());
            names.add(h.holder() + (h.expired() ? " (expired)" : ""));
          }
          state = "held " + l.holders().size() + (names.isEmpty() ? "" : ": " + names);
        }
        rows.add(List.of(l.type(), l.name(), l.describe(), state));
      }
      return listing(list, List.of("TYPE", "NAME", "LIMIT", "STATE"), rows);
    }
  }

  @Command(
      name = "servers",
      mixinStandardHelpOptions = true,
      description = "List a tenant's servers (from its server index) with their behaviours.")
  static final class Servers extends Base {
    @Parameters(index = "0", paramLabel = "TENANT", description = "the tenant, e.g. shop/eu")
    String tenant;

    @Override
    public Integer call() {
      ArrayNode list = Output.array();
      List<List<String>> rows = new ArrayList<>();
      for (TenantAdmin.ServerEntry e : tenant(tenant).servers()) {
        String tuid = Tuids.format(e.tuid());
        list.addObject().put("tuid", tuid).put("behaviour", e.behaviour());
        rows.add(List.of(tuid, e.behaviour()));
      }
      return listing(list, List.of("TUID", "BEHAVIOUR"), rows);
    }
  }

  @Command(
      name = "placement",
      mixinStandardHelpOptions = true,
      description =
          "Show which runtimes host kinds in a tenant (their member records, live or stale) and"
              + " how many buckets of each kind each holds.")
  static final class PlacementView extends Base {
    @Parameters(index = "0", paramLabel = "TENANT", description = "the tenant, e.g. bank")
    String tenant;

    @Override
    public Integer call() {
      TenantAdmin t = tenant(tenant);
      Map<String, Map<String, Integer>> held = new TreeMap<>(); // member -> kind -> buckets
      int released = 0;
      for (TenantAdmin.Lease l : t.leases()) {
        if (l.holder() == null) {
          released++;
          continue;
        }
        held.computeIfAbsent(l.holder().toString(), m -> new TreeMap<>())
            .merge(l.kind(), 1, Integer::sum);
      }
      ArrayNode list = Output.array();
      List<List<String>> rows = new ArrayList<>();
      for (TenantAdmin.Member m : t.members()) {
        Map<String, Integer> kinds = held.getOrDefault(m.id().toString(), Map.of());
        var node =
            list.addObject()
                .put("member", m.id().toString())
                .put("host", m.host())
                .put("pid", m.pid())
                .put("startedAt", m.startedAt().toString())
                .put("leaseMillis", m.lease().toMillis())
                .put("heartbeat", m.heartbeat());
        var kindNames = node.putArray("kinds");
        m.kinds().forEach(kindNames::add);
        var buckets = node.putObject("buckets");
        kinds.forEach(buckets::put);
        rows.add(
            List.of(
                m.id().toString(),
                m.host() + ":" + m.pid(),
                String.join(",", m.kinds()),
                kinds.isEmpty() ? "-" : kinds.toString(),
                Long.toString(m.heartbeat())));
      }
      if (!json) {
        out().printf("buckets: %d, released leases: %d%n", t.bucketCount(), released);
      }
      return listing(list, List.of("MEMBER", "WHERE", "KINDS", "BUCKETS HELD", "HEARTBEAT"), rows);
    }
  }

  @Command(
      name = "inspect",
      mixinStandardHelpOptions = true,
      description =
          "Show a server: state as JSON, queue length, lock holder and age, dead letters,"
              + " pending timers.")
  static final class Inspect extends OnServer {
    @Override
    public Integer call() {
      ServerAdmin s = server();
      ObjectNode o = Output.object();
      o.put("tenant", tenant);
      o.put("tuid", Tuids.format(s.tuid()));
      o.put("behaviour", s.behaviour().orElse(null));
      o.put("queueLength", s.queueLength());
      o.put("deadLetters", s.deadLetterCount());
      var lock = s.lock().orElse(null);
      if (lock == null) {
        o.putNull("lock");
      } else {
        ObjectNode l = o.putObject("lock");
        l.put("holder", lock.token());
        l.put("acquiredAt", lock.acquiredAt().toString());
        l.put("ageMillis", lock.age().toMillis());
        Output.item(lock.item(), l.putObject("item"));
      }
      var timers = s.timers();
      ArrayNode t = o.putArray("timers");
      for (ServerAdmin.PendingTimer timer : timers) {
        ObjectNode e = t.addObject().put("id", timer.id()).put("due", timer.due().toString());
        Output.item(timer.item(), e.putObject("item"));
      }
      var stuck = s.stuck().orElse(null);
      if (stuck == null) {
        o.putNull("stuck");
      } else {
        o.putObject("stuck")
            .put("since", stuck.since().toString())
            .put("member", stuck.member())
            .put("reason", stuck.reason());
      }
      o.put("stateType", s.stateType().orElse(null));
      o.set("state", s.state().orElse(null));
      if (json) {
        Output.json(out(), o);
        return Dgen.OK;
      }
      PrintWriter out = out();
      List<List<String>> rows = new ArrayList<>();
      rows.add(List.of("tenant", tenant));
      rows.add(List.of("tuid", Tuids.format(s.tuid())));
      rows.add(List.of("behaviour", s.behaviour().orElse("- (not indexed)")));
      rows.add(List.of("queue length", o.get("queueLength").asString()));
      rows.add(List.of("dead letters", o.get("deadLetters").asString()));
      rows.add(
          List.of(
              "lock",
              lock == null
                  ? "-"
                  : "held by "
                      + lock.token()
                      + " since "
                      + lock.acquiredAt()
                      + " ("
                      + lock.age().toSeconds()
                      + " s), message "
                      + lock.item().type()));
      rows.add(
          List.of(
              "timers",
              timers.isEmpty()
                  ? "-"
                  : timers.size()
                      + " pending, next "
                      + timers.get(0).id()
                      + " due "
                      + timers.get(0).due()));
      rows.add(
          List.of(
              "stuck",
              stuck == null
                  ? "-"
                  : "since "
                      + stuck.since()
                      + " (member "
                      + stuck.member()
                      + "): its state does not decode; dgen state-replace repairs it: "
                      + stuck.reason()));
      rows.add(List.of("state type", s.stateType().orElse("- (version 1)")));
      Output.table(out, List.of("FIELD", "VALUE"), rows);
      out.println("state:");
      out.println(o.get("state").isNull() ? "-" : Output.JSON.writeValueAsString(o.get("state")));
      return Dgen.OK;
    }
  }

  @Command(
      name = "state-replace",
      mixinStandardHelpOptions = true,
      description =
          "Replace a server's stored state with the JSON tree in FILE, e.g. one that no longer"
              + " decodes (needs --yes). Refused if the state changes while the command runs.")
  static final class StateReplace extends Destructive {
    @Parameters(index = "2", paramLabel = "FILE", description = "the new state, as JSON")
    java.nio.file.Path file;

    @Option(
        names = "--type",
        paramLabel = "TAG",
        description = "the type tag to store it under, e.g. account#2 (default: none, version 1)")
    @Nullable String type;

    @Override
    public Integer call() {
      ServerAdmin s = server();
      tools.jackson.databind.JsonNode tree;
      try {
        tree = Output.JSON.readTree(file.toFile());
      } catch (RuntimeException e) {
        throw new CliException(Dgen.USAGE, "cannot read " + file + " as JSON: " + e.getMessage());
      }
      confirm("replace the state of " + Tuids.format(s.tuid()));
      if (!s.replaceState(tree, type, s.state().orElse(null))) {
        throw new CliException(
            Dgen.REFUSED, "the state changed while replacing it; nothing was written: run again");
      }
      if (json) {
        Output.json(out(), Output.object().put("replaced", true));
      } else {
        out().println("replaced the state of " + Tuids.format(s.tuid()));
      }
      return Dgen.OK;
    }
  }

  @Command(
      name = "queue",
      mixinStandardHelpOptions = true,
      description = "Peek at a server's queued messages, in the order they will be consumed.")
  static final class Queue extends OnServer {
    @Option(
        names = {"-n", "--limit"},
        paramLabel = "N",
        defaultValue = "10",
        description = "how many messages (default: ${DEFAULT-VALUE})")
    int limit;

    @Override
    public Integer call() {
      if (limit < 1) {
        throw new CliException(Dgen.USAGE, "-n must be at least 1: " + limit);
      }
      ServerAdmin s = server();
      ObjectNode o = Output.object();
      o.put("queueLength", s.queueLength());
      ArrayNode items = o.putArray("items");
      List<List<String>> rows = new ArrayList<>();
      for (ServerAdmin.QueuedItem i : s.peek(limit)) {
        Output.item(i, items.addObject().put("id", i.id()));
        rows.add(
            List.of(
                i.id(),
                i.kind(),
                i.type() == null ? "-" : i.type(),
                Integer.toString(i.failures()),
                Output.message(i)));
      }
      if (json) {
        Output.json(out(), o);
      } else {
        out().println("queue length: " + s.queueLength());
        s.paused()
            .ifPresent(
                p ->
                    out()
                        .println(
                            "paused since "
                                + p.since()
                                + (p.reason().isEmpty() ? "" : " (" + p.reason() + ")")
                                + ": nothing is applied until dgen resume"));
        Output.table(out(), List.of("ID", "KIND", "TYPE", "FAILURES", "MESSAGE"), rows);
      }
      return Dgen.OK;
    }
  }

  @Command(
      name = "timers",
      mixinStandardHelpOptions = true,
      description =
          "List a server's pending timers: id, next due time, schedule (recurring timers) and"
              + " message type, a page at a time (soonest first within a page).")
  static final class Timers extends OnServer {
    @Option(
        names = {"-n", "--limit"},
        paramLabel = "N",
        defaultValue = "100",
        description = "how many timers a page lists (default: ${DEFAULT-VALUE})")
    int limit;

    @Option(
        names = "--after",
        paramLabel = "ID",
        description = "the page after timer ID: the 'next' a previous page printed")
    @Nullable String after;

    @Override
    public Integer call() {
      if (limit < 1 || limit > ServerAdmin.MAX_TIMER_PAGE) {
        throw new CliException(
            Dgen.USAGE, "-n must be within 1 and " + ServerAdmin.MAX_TIMER_PAGE + ": " + limit);
      }
      ServerAdmin s = server();
      ServerAdmin.TimerPage page;
      try {
        page = s.timers(after, limit);
      } catch (IllegalArgumentException e) {
        throw new CliException(Dgen.USAGE, e.getMessage());
      }
      ObjectNode o = Output.object();
      ArrayNode list = o.putArray("timers");
      List<List<String>> rows = new ArrayList<>();
      for (ServerAdmin.PendingTimer t : page.timers()) {
        ObjectNode e = list.addObject().put("id", t.id()).put("due", t.due().toString());
        e.put("schedule", t.schedule());
        Output.item(t.item(), e.putObject("item"));
        rows.add(
            List.of(
                t.id(),
                t.due().toString(),
                t.schedule() == null ? "once" : t.schedule(),
                t.item().type() == null ? "-" : t.item().type(),
                Output.message(t.item())));
      }
      o.put("next", page.next());
      if (json) {
        Output.json(out(), o);
      } else {
        Output.table(out(), List.of("ID", "DUE", "SCHEDULE", "TYPE", "MESSAGE"), rows);
        if (page.next() != null) {
          out().println("more: dgen timers " + tenant + " '" + tuid + "' --after " + page.next());
        }
      }
      return Dgen.OK;
    }
  }

  @Command(
      name = "dead-letters",
      mixinStandardHelpOptions = true,
      description = "List, re-queue or purge a server's dead letters.",
      subcommands = {DeadList.class, DeadRequeue.class, DeadPurge.class})
  static final class DeadLetters implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Override
    public Integer call() {
      spec.commandLine().usage(spec.commandLine().getErr());
      return Dgen.USAGE;
    }
  }

  @Command(
      name = "list",
      mixinStandardHelpOptions = true,
      description = "List a server's dead letters, oldest first.")
  static final class DeadList extends OnServer {
    @Override
    public Integer call() {
      ArrayNode list = Output.array();
      List<List<String>> rows = new ArrayList<>();
      for (ServerAdmin.DeadLetterEntry d : server().deadLetters()) {
        ObjectNode o = list.addObject();
        o.put("id", d.id()).put("attempts", d.attempts()).put("at", d.at().toString());
        o.put("error", d.error());
        Output.item(d.item(), o);
        rows.add(
            List.of(
                d.id(),
                Integer.toString(d.attempts()),
                d.at().toString(),
                d.item().type() == null ? "-" : d.item().type(),
                d.error()));
      }
      return listing(list, List.of("ID", "ATTEMPTS", "AT", "TYPE", "ERROR"), rows);
    }
  }

  /** Re-queue or purge: every dead letter, or one by {@code --id}. */
  abstract static class DeadChange extends Destructive {
    @Option(names = "--id", paramLabel = "ID", description = "only this dead letter")
    @Nullable String id;

    int change(String verb, boolean requeue) {
      ServerAdmin s = server();
      String what = verb + (id == null ? " every dead letter" : " dead letter " + id);
      confirm(what + " of " + Tuids.format(s.tuid()));
      int n;
      if (id == null) {
        n = requeue ? s.requeueDeadLetters() : s.purgeDeadLetters();
      } else {
        if (!(requeue ? s.requeueDeadLetter(id) : s.purgeDeadLetter(id))) {
          throw new CliException(Dgen.NOT_FOUND, "no dead letter " + id);
        }
        n = 1;
      }
      String field = requeue ? "requeued" : "purged";
      if (json) {
        Output.json(out(), Output.object().put(field, n));
      } else {
        out().println(field + " " + n + " dead letter" + (n == 1 ? "" : "s"));
      }
      return Dgen.OK;
    }
  }

  @Command(
      name = "requeue",
      mixinStandardHelpOptions = true,
      description =
          "Move dead letters back to the tail of the queue, failure counts cleared (needs --yes).")
  static final class DeadRequeue extends DeadChange {
    @Override
    public Integer call() {
      return change("re-queue", true);
    }
  }

  @Command(
      name = "purge",
      mixinStandardHelpOptions = true,
      description = "Delete dead letters for good (needs --yes).")
  static final class DeadPurge extends DeadChange {
    @Override
    public Integer call() {
      return change("purge", false);
    }
  }

  @Command(
      name = "cancel-message",
      mixinStandardHelpOptions = true,
      description =
          "Remove one queued message (an id 'dgen queue' lists) so that it is never applied;"
              + " a call's caller waits until its timeout (needs --yes).")
  static final class CancelMessage extends Destructive {
    @Parameters(index = "2", paramLabel = "ID", description = "the message's id, from dgen queue")
    String id;

    @Override
    public Integer call() {
      ServerAdmin s = server();
      confirm("remove queued message " + id + " of " + Tuids.format(s.tuid()));
      boolean removed;
      try {
        removed = s.cancelQueued(id);
      } catch (IllegalArgumentException e) {
        throw new CliException(Dgen.USAGE, e.getMessage());
      }
      if (!removed) {
        throw new CliException(
            Dgen.NOT_FOUND, "no queued message " + id + " (consumed, cancelled, or never was)");
      }
      return report("cancelled", id, "removed queued message " + id);
    }
  }

  @Command(
      name = "pause",
      mixinStandardHelpOptions = true,
      description =
          "Pause a server's consumption, durably and for every runtime: casts, calls and timers"
              + " still queue, queued calls wait or time out, nothing is applied until"
              + " 'dgen resume' (needs --yes).")
  static final class Pause extends Destructive {
    @Option(names = "--reason", paramLabel = "TEXT", description = "why, shown by the tools")
    String reason = "";

    @Override
    public Integer call() {
      ServerAdmin s = server();
      confirm("pause server " + Tuids.format(s.tuid()));
      boolean paused;
      try {
        paused = s.pause(reason);
      } catch (IllegalStateException e) {
        throw new CliException(Dgen.NOT_FOUND, e.getMessage());
      }
      return report(
          "paused", paused, paused ? "paused " + Tuids.format(s.tuid()) : "was paused already");
    }
  }

  @Command(
      name = "resume",
      mixinStandardHelpOptions = true,
      description = "Resume a paused server: its queue is consumed again, in order (needs --yes).")
  static final class Resume extends Destructive {
    @Override
    public Integer call() {
      ServerAdmin s = server();
      confirm("resume server " + Tuids.format(s.tuid()));
      boolean resumed = s.resume();
      return report(
          "resumed", resumed, resumed ? "resumed " + Tuids.format(s.tuid()) : "was not paused");
    }
  }

  @Command(
      name = "kill",
      mixinStandardHelpOptions = true,
      description =
          "Remove a server with its state, queue, lock and dead letters; waiting callers fail"
              + " (needs --yes).")
  static final class Kill extends Destructive {
    @Override
    public Integer call() {
      ServerAdmin s = server();
      String name = Tuids.format(s.tuid());
      confirm("kill server " + name + " of tenant " + tenant);
      s.kill();
      if (json) {
        Output.json(out(), Output.object().put("killed", name).put("tenant", tenant));
      } else {
        out().println("killed server " + name + " of tenant " + tenant);
      }
      return Dgen.OK;
    }
  }
}
