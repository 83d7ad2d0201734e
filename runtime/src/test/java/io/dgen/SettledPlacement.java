package io.dgen;

import io.dgen.admin.TenantAdmin;
import io.dgen.internal.hosting.Placement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.Supplier;
import org.awaitility.Awaitility;
import org.awaitility.core.ConditionTimeoutException;

/** Waits, in a test, until a tenant's placement settled among given members. */
final class SettledPlacement {

  private SettledPlacement() {}

  /**
   * Waits until every bucket of {@code kind} is held by its rendezvous owner among {@code members},
   * as the stored leases show, and returns how many buckets each holds.
   *
   * @param admin the tenant's admin view, read again at each poll
   */
  static Map<UUID, Integer> await(
      Supplier<TenantAdmin> admin,
      String kind,
      int buckets,
      Collection<UUID> members,
      Duration atMost) {
    List<UUID> ids = new ArrayList<>(members);
    ids.sort(null);
    Map<Integer, UUID> desired = new HashMap<>();
    for (int b = 0; b < buckets; b++) {
      desired.put(b, Placement.desiredOwner(kind, b, ids));
    }
    try {
      Awaitility.await("every lease of " + kind + " held by its desired owner among " + ids)
          .atMost(atMost)
          .pollInterval(Duration.ofMillis(100))
          .until(() -> held(admin.get(), kind).equals(desired));
    } catch (ConditionTimeoutException e) {
      throw new AssertionError(unsettled(admin.get(), kind, desired), e);
    }
    Map<UUID, Integer> count = new HashMap<>();
    desired.values().forEach(id -> count.merge(id, 1, Integer::sum));
    return count;
  }

  private static Map<Integer, UUID> held(TenantAdmin admin, String kind) {
    Map<Integer, UUID> held = new HashMap<>();
    for (TenantAdmin.Lease l : admin.leases()) {
      if (l.kind().equals(kind)) {
        held.put(l.bucket(), l.holder());
      }
    }
    return held;
  }

  /** What a placement that did not settle looks like: the buckets astray, and the members. */
  private static String unsettled(TenantAdmin admin, String kind, Map<Integer, UUID> desired) {
    StringBuilder out = new StringBuilder("placement of " + kind + " did not settle; astray:");
    Map<Integer, TenantAdmin.Lease> leases = new HashMap<>();
    admin.leases().stream()
        .filter(l -> l.kind().equals(kind))
        .forEach(l -> leases.put(l.bucket(), l));
    desired.forEach(
        (bucket, owner) -> {
          TenantAdmin.Lease l = leases.get(bucket);
          if (l == null || !owner.equals(l.holder())) {
            out.append(
                String.format(
                    " b%d=%s@%s(want %s)",
                    bucket, l == null ? null : l.holder(), l == null ? 0 : l.epoch(), owner));
          }
        });
    out.append("; members:");
    for (TenantAdmin.Member m : admin.members()) {
      out.append(
          String.format(
              " %s(pid %d, heartbeat %d, kinds %s)", m.id(), m.pid(), m.heartbeat(), m.kinds()));
    }
    return out.toString();
  }
}
