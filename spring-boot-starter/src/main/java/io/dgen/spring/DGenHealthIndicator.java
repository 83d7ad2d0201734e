package io.dgen.spring;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.DGen;
import io.dgen.admin.DGenAdmin;
import io.dgen.admin.TenantAdmin;
import io.dgen.backend.Backend;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;

/**
 * The Actuator health of the application's {@link DGen}, under the name {@code dgen}.
 *
 * <p>DOWN when any of these fails, UP otherwise:
 *
 * <ul>
 *   <li><b>the runtime runs</b>: its {@link DGenLifecycle} started and is not stopping;
 *   <li><b>the backend answers</b>: one read-only transaction (a snapshot read of one key) answers
 *       within {@code dgen.health.timeout}. At most one such read is outstanding: while a cluster
 *       does not answer, later checks wait on the same read instead of piling up new ones;
 *   <li><b>the hosted kinds' consumers are alive</b>: in every tenant where this runtime hosts a
 *       kind, its member record exists (after one lease duration from the start, to let the first
 *       heartbeat land) and its heartbeat counter changed within the member's lease duration, as
 *       this indicator observed it across checks. A runtime whose heartbeat stalls loses its
 *       buckets to the others, and its batches are fenced.
 * </ul>
 *
 * <p>Details, none of them secret (no cluster file, no data directory, no host): the backend's
 * type, the read's latency, this runtime's member id, and per hosted kind the member's state and
 * how many of the tenant's buckets this runtime holds the lease of. Thread-safe.
 */
public class DGenHealthIndicator implements HealthIndicator {

  /** The key the probe reads, outside every tenant's directory; it is never written. */
  private static final byte[] PROBE_KEY = Tuple.from("dgen", "health-probe").pack();

  private record Seen(long heartbeat, long changedAtNanos) {}

  private final DGen dgen;
  private final DGenLifecycle lifecycle;
  private final Duration timeout;
  private final Duration joinGrace;
  private final DGenAdmin admin;
  private final Map<List<String>, TenantAdmin> tenants = new ConcurrentHashMap<>();
  private final Map<List<String>, Seen> heartbeats = new ConcurrentHashMap<>();
  private @Nullable CompletableFuture<?> probe;
  private long probeStartedNanos;

  /**
   * Creates the indicator.
   *
   * @param dgen the runtime whose backend is probed
   * @param lifecycle its lifecycle: whether it runs, and the kinds it hosted
   * @param timeout how long a check waits for each read; positive
   * @param leaseDuration the runtime's lease duration: how long after the start a missing member
   *     record is taken for one not written yet
   * @throws
   *     org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException
   *     naming {@code dgen.health.timeout} if {@code timeout} is not positive
   */
  public DGenHealthIndicator(
      DGen dgen, DGenLifecycle lifecycle, Duration timeout, Duration leaseDuration) {
    this.dgen = Objects.requireNonNull(dgen, "dgen");
    this.lifecycle = Objects.requireNonNull(lifecycle, "lifecycle");
    Objects.requireNonNull(timeout, "timeout");
    if (timeout.isNegative() || timeout.isZero()) {
      throw Settings.invalid("dgen.health.timeout", timeout, "must be positive");
    }
    this.timeout = timeout;
    this.joinGrace = Objects.requireNonNull(leaseDuration, "leaseDuration");
    this.admin = new DGenAdmin(dgen.backend(), timeout);
  }

  @Override
  public Health health() {
    Backend backend = dgen.backend();
    Health.Builder health = Health.up().withDetail("backend", backend.getClass().getSimpleName());
    if (!lifecycle.isRunning()) {
      return health.down().withDetail("runtime", "stopped").build();
    }
    health.withDetail("runtime", "running");
    String unreachable = probe(backend, health);
    if (unreachable != null) {
      return health.down().withDetail("error", unreachable).build();
    }
    List<DGenLifecycle.HostedKind> kinds = lifecycle.hostedKinds();
    if (kinds.isEmpty()) {
      return health.build();
    }
    UUID me = dgen.memberId();
    health.withDetail("memberId", me.toString());
    List<Map<String, Object>> hosted = new ArrayList<>();
    Map<List<String>, String> members = new HashMap<>(); // one read of the members per tenant
    boolean alive = true;
    for (DGenLifecycle.HostedKind kind : kinds) {
      Map<String, Object> detail = new LinkedHashMap<>();
      detail.put("tenant", String.join("/", kind.tenant()));
      detail.put("kind", kind.kind());
      try {
        TenantAdmin tenant = tenant(kind.tenant());
        String member = members.get(kind.tenant());
        if (member == null) {
          member = member(kind.tenant(), tenant, me);
          members.put(kind.tenant(), member);
        }
        detail.put("member", member);
        alive &= member.equals("live") || member.equals("joining");
        long held =
            tenant.leases().stream()
                .filter(l -> l.kind().equals(kind.kind()) && me.equals(l.holder()))
                .count();
        detail.put("leasesHeld", held);
        detail.put("buckets", tenant.bucketCount());
      } catch (RuntimeException e) {
        alive = false;
        detail.put("error", describe(e));
      }
      hosted.add(detail);
    }
    health.withDetail("hosted", hosted);
    return alive ? health.build() : health.down().build();
  }

  /**
   * Reads the probe key, waiting at most the timeout on the one outstanding read; records its
   * latency. Returns why the backend is unreachable, or null if it answered.
   */
  private @Nullable String probe(Backend backend, Health.Builder health) {
    CompletableFuture<?> read;
    long started;
    synchronized (this) {
      if (probe == null || probe.isDone()) {
        probeStartedNanos = System.nanoTime();
        try {
          probe = backend.runAsync(tx -> tx.snapshot().getAsync(PROBE_KEY));
        } catch (RuntimeException e) {
          probe = null;
          return describe(e);
        }
      }
      read = probe;
      started = probeStartedNanos;
    }
    try {
      read.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
    } catch (TimeoutException e) {
      return "the backend did not answer a read within "
          + timeout
          + " (outstanding for "
          + Duration.ofNanos(System.nanoTime() - started).toMillis()
          + " ms)";
    } catch (ExecutionException e) {
      return describe(e.getCause() != null ? e.getCause() : e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "interrupted";
    }
    health.withDetail("readMillis", TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started));
    return null;
  }

  private TenantAdmin tenant(List<String> path) {
    TenantAdmin t = tenants.get(path);
    if (t == null) {
      t =
          admin
              .tenant(path.toArray(String[]::new))
              .orElseThrow(() -> new IllegalStateException("no tenant " + path));
      tenants.put(path, t);
    }
    return t;
  }

  /** This runtime's member state in a tenant: live, joining, absent or stalled. */
  private String member(List<String> path, TenantAdmin tenant, UUID me) {
    TenantAdmin.Member record =
        tenant.members().stream().filter(m -> m.id().equals(me)).findFirst().orElse(null);
    long now = System.nanoTime();
    if (record == null) {
      return lifecycle.runningFor().compareTo(joinGrace) < 0 ? "joining" : "absent";
    }
    Seen seen =
        heartbeats.compute(
            path,
            (p, before) ->
                before == null || before.heartbeat() != record.heartbeat()
                    ? new Seen(record.heartbeat(), now)
                    : before);
    return now - seen.changedAtNanos() > record.lease().toNanos() ? "stalled" : "live";
  }

  private static String describe(Throwable e) {
    return e.getClass().getSimpleName() + ": " + e.getMessage();
  }
}
