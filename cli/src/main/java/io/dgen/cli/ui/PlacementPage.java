package io.dgen.cli.ui;

import io.dgen.admin.TenantAdmin;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;

/**
 * {@code /placement?t=T}: the runtimes hosting kinds in a tenant (their member records) and the
 * buckets each holds, read in two snapshot reads of the tenant's member and lease ranges (a few
 * thousand rows at most: one per member, one per bucket of each hosted kind).
 *
 * <p>A member record does not say whether its runtime lives: runtimes observe each other's
 * heartbeat counters change. The page does the same from its own requests: it remembers, per
 * member, the counter it last saw and since when, and shows how long ago this dashboard saw it
 * change. A member whose counter stood still for longer than its lease has lost its leases to the
 * others (or will at their next round).
 */
final class PlacementPage implements Page {

  private final Ui ui;

  /** Per member: the heartbeat counter this dashboard last saw, and when it first saw it. */
  private final Map<UUID, long[]> seen = new ConcurrentHashMap<>();

  PlacementPage(Ui ui) {
    this.ui = ui;
  }

  @Override
  public String path() {
    return "/placement";
  }

  @Override
  public Http.Response handle(Http.Request r) {
    List<String> path = Ui.tenantPath(r);
    TenantAdmin tenant = ui.tenant(path);
    String name = Urls.tenant(path);
    Map<UUID, Map<String, Integer>> held = new TreeMap<>();
    Map<String, Integer> released = new TreeMap<>();
    for (TenantAdmin.Lease l : tenant.leases()) {
      if (l.holder() == null) {
        released.merge(l.kind(), 1, Integer::sum);
      } else {
        held.computeIfAbsent(l.holder(), m -> new TreeMap<>()).merge(l.kind(), 1, Integer::sum);
      }
    }
    List<TenantAdmin.Member> members = tenant.members();
    long now = System.nanoTime();
    seen.keySet().retainAll(members.stream().map(TenantAdmin.Member::id).toList());

    Html h = new Html();
    h.open("p", "class", "crumbs")
        .link("/", "Tenants")
        .text(" / ")
        .link(Urls.of("/tenant", "t", name), name)
        .text(" / placement")
        .close("p");
    h.el(
        "p",
        "Buckets per hosted kind: "
            + tenant.bucketCount()
            + (released.isEmpty() ? "" : "; released and not yet taken: " + released),
        "id",
        "buckets");
    if (members.isEmpty()) {
      h.el("p", "No runtime hosts a kind in this tenant.", "id", "no-members", "class", "note");
    } else {
      h.table(
          "members",
          "Member",
          "Where",
          "Kinds",
          "Buckets held",
          "Lease",
          "Started",
          "Heartbeat",
          "Seen changing");
      for (TenantAdmin.Member m : members) {
        Map<String, Integer> kinds = held.getOrDefault(m.id(), Map.of());
        h.open("tr", "data-member", m.id().toString());
        h.el("td", m.id(), "class", "member");
        h.el("td", m.host() + ":" + m.pid(), "class", "where");
        h.el("td", String.join(", ", m.kinds()), "class", "kinds");
        h.el("td", kinds.isEmpty() ? "-" : kinds.toString(), "class", "held");
        h.el("td", VersionClock.format(m.lease()), "class", "lease");
        h.el("td", ui.time(m.startedAt()), "class", "started");
        h.el("td", m.heartbeat(), "class", "heartbeat");
        h.el("td", changed(m, now), "class", "changed");
        h.close("tr");
      }
      h.endTable();
    }
    h.el(
        "p",
        "A runtime keeps its leases while its heartbeat counter keeps changing; one whose counter"
            + " stood still for longer than its lease has lost them to the others. \"Seen"
            + " changing\" is how long ago this dashboard saw the counter change (reload to"
            + " compare).",
        "class",
        "note");
    return ui.page(200, "Placement of " + name, h);
  }

  /** How long ago this dashboard saw {@code m}'s heartbeat counter change. */
  private String changed(TenantAdmin.Member m, long now) {
    long[] prior = seen.get(m.id());
    if (prior == null || prior[0] != m.heartbeat()) {
      seen.put(m.id(), new long[] {m.heartbeat(), now});
      return prior == null ? "first look" : "since the last look";
    }
    return VersionClock.format(Duration.ofNanos(now - prior[1])) + " ago or more";
  }
}
