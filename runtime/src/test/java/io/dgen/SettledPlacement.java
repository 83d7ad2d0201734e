package io.dgen;

import io.dgen.admin.TenantAdmin;
import io.dgen.internal.Placement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.Supplier;
import org.awaitility.Awaitility;

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
    Awaitility.await("every lease of " + kind + " held by its desired owner among " + ids)
        .atMost(atMost)
        .pollInterval(Duration.ofMillis(100))
        .until(
            () -> {
              Map<Integer, UUID> held = new HashMap<>();
              for (TenantAdmin.Lease l : admin.get().leases()) {
                if (l.kind().equals(kind)) {
                  held.put(l.bucket(), l.holder());
                }
              }
              return held.equals(desired);
            });
    Map<UUID, Integer> count = new HashMap<>();
    desired.values().forEach(id -> count.merge(id, 1, Integer::sum));
    return count;
  }
}
