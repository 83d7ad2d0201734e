package io.dgen.admin;

import com.apple.foundationdb.subspace.Subspace;
import io.dgen.OperationTimeoutException;
import io.dgen.backend.Backend;
import io.dgen.backend.KeyValue;
import io.dgen.backend.ReadTransaction;
import io.dgen.internal.base.OperationTimeouts;
import io.dgen.internal.codec.Serde;
import io.dgen.internal.limits.LimitKeys;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;

/**
 * The admin view of a backend: its tenants, and each tenant's servers. It runs no servers and needs
 * none of their classes; every read is a snapshot, and only the explicitly destructive operations
 * of {@link ServerAdmin} write.
 *
 * <pre>{@code
 * DGenAdmin admin = new DGenAdmin(backend);
 * for (List<String> path : admin.tenants()) { ... }
 * admin.tenant("demo", "orders")
 *     .flatMap(t -> t.server(Tuids.parse("(\"orders\", 42)")))
 *     .ifPresent(s -> System.out.println(s.state()));
 * }</pre>
 *
 * Stored messages and states are decoded with the runtime's default Smile mapper; a runtime built
 * with a mapper of another format is not readable here.
 *
 * <p>No call blocks forever: each (and each transaction of one that runs several) fails with {@link
 * OperationTimeoutException} once the operation timeout (default 30 seconds, as the runtime's)
 * passes without an answer from the cluster, naming the tenant and server. A destructive call that
 * timed out may still have happened; reading again tells.
 */
public final class DGenAdmin {

  private final Backend backend;
  private final Serde serde;
  private final Clock clock;
  private final OperationTimeouts operations;
  private final String context;

  /** An admin over {@code backend}, using the system clock for lock ages. */
  public DGenAdmin(Backend backend) {
    this(backend, Clock.systemUTC());
  }

  /**
   * An admin over {@code backend}.
   *
   * @param clock the clock lock ages are measured with
   */
  public DGenAdmin(Backend backend, Clock clock) {
    this(backend, clock, OperationTimeouts.DEFAULT);
  }

  /**
   * An admin over {@code backend} whose calls give up after {@code operationTimeout}.
   *
   * @param operationTimeout how long a call waits for the cluster; positive
   * @throws IllegalArgumentException if {@code operationTimeout} is zero or negative
   */
  public DGenAdmin(Backend backend, Duration operationTimeout) {
    this(backend, Clock.systemUTC(), operationTimeout);
  }

  /**
   * An admin over {@code backend}.
   *
   * @param clock the clock lock ages are measured with
   * @param operationTimeout how long a call waits for the cluster; positive
   * @throws IllegalArgumentException if {@code operationTimeout} is zero or negative
   */
  public DGenAdmin(Backend backend, Clock clock, Duration operationTimeout) {
    this.backend = Objects.requireNonNull(backend, "backend must not be null");
    this.clock = Objects.requireNonNull(clock, "clock must not be null");
    this.operations = new OperationTimeouts(operationTimeout);
    this.serde = new Serde(Serde.defaultMapper());
    this.context = "backend=" + backend;
  }

  /**
   * Every directory of the backend, depth first in name order: each is a tenant (a directory that
   * holds no server is listed too, with none).
   */
  public List<List<String>> tenants() {
    List<List<String>> out = new ArrayList<>();
    walk(new ArrayList<>(), out);
    return out;
  }

  private void walk(List<String> parent, List<List<String>> out) {
    String[] dir = parent.toArray(String[]::new);
    List<String> names =
        operations.call(
            () -> backend.listDirectories(dir), "DGenAdmin.tenants", context + " parent=" + parent);
    for (String name : names) {
      if (parent.isEmpty() && name.equals(LimitKeys.RESERVED)) {
        continue; // DGen's own directory (the limits), not a tenant
      }
      List<String> path = new ArrayList<>(parent);
      path.add(name);
      out.add(List.copyOf(path));
      walk(path, out);
    }
  }

  /**
   * Every rate and concurrency limit stored in the backend (configured by some runtime), with its
   * state, in one snapshot: rate limits first, each kind by name.
   *
   * @throws OperationTimeoutException if the cluster does not answer in time
   */
  public List<LimitView> limits() {
    Optional<Subspace> dir =
        operations.call(
            () -> backend.openDirectory(LimitKeys.directory()), "DGenAdmin.limits", context);
    if (dir.isEmpty()) {
      return List.of();
    }
    LimitKeys keys = new LimitKeys(dir.get());
    long now = clock.millis();
    return operations.call(
        () ->
            backend.run(
                tx -> {
                  var snap = tx.snapshot();
                  List<LimitView> out = new ArrayList<>();
                  byte[][] rates = keys.rateRange();
                  for (KeyValue kv : snap.getRange(rates[0], rates[1], Integer.MAX_VALUE, false)) {
                    var t = keys.unpack(kv.key());
                    if (t.size() != 2) {
                      continue; // a runtime's heartbeat, share or bucket
                    }
                    String name = t.getString(1);
                    LimitKeys.RateConfig c =
                        Objects.requireNonNull(LimitKeys.RateConfig.decode(kv.value()));
                    List<LimitView.Share> shares = rateShares(snap, keys, name, c, now);
                    double tokens =
                        shares.isEmpty()
                            ? c.burst()
                            : shares.stream().mapToDouble(LimitView.Share::tokens).sum();
                    out.add(
                        new LimitView(
                            "rate",
                            name,
                            c.permitsPerSecond(),
                            c.burst(),
                            tokens,
                            0,
                            List.of(),
                            shares));
                  }
                  byte[][] gates = keys.concurrencyRange();
                  for (KeyValue kv : snap.getRange(gates[0], gates[1], Integer.MAX_VALUE, false)) {
                    var t = keys.unpack(kv.key());
                    if (t.size() != 2) {
                      continue; // a slot or the release counter
                    }
                    String name = t.getString(1);
                    byte[][] slots = keys.slots(name);
                    List<LimitView.Holder> holders = new ArrayList<>();
                    for (KeyValue s : snap.getRange(slots[0], slots[1], Integer.MAX_VALUE, false)) {
                      LimitKeys.Permit p = LimitKeys.Permit.decode(s.value());
                      holders.add(
                          new LimitView.Holder(
                              (int) keys.unpack(s.key()).getLong(3),
                              p.holder(),
                              p.token(),
                              Instant.ofEpochMilli(p.acquiredAtMillis()),
                              Instant.ofEpochMilli(p.expiresAtMillis()),
                              p.expired(now)));
                    }
                    out.add(
                        new LimitView(
                            "concurrency",
                            name,
                            0,
                            0,
                            0,
                            Objects.requireNonNull(LimitKeys.decodeLimit(kv.value())),
                            holders,
                            List.of()));
                  }
                  return out;
                }),
        "DGenAdmin.limits",
        context);
  }

  /** The shares of the rate limit {@code name}: each runtime's heartbeat, share and bucket. */
  private static List<LimitView.Share> rateShares(
      ReadTransaction snap, LimitKeys keys, String name, LimitKeys.RateConfig c, long now) {
    byte[][] buckets = keys.rateBuckets(name);
    Map<UUID, LimitKeys.Bucket> byRuntime = new HashMap<>();
    for (KeyValue kv : snap.getRange(buckets[0], buckets[1], Integer.MAX_VALUE, false)) {
      byRuntime.put(
          keys.unpack(kv.key()).getUUID(3),
          Objects.requireNonNull(LimitKeys.Bucket.decode(kv.value())));
    }
    byte[][] shareRange = keys.rateShares(name);
    Map<UUID, Double> shareOf = new HashMap<>();
    for (KeyValue kv : snap.getRange(shareRange[0], shareRange[1], Integer.MAX_VALUE, false)) {
      shareOf.put(keys.unpack(kv.key()).getUUID(3), LimitKeys.decodeShare(kv.value()));
    }
    byte[][] members = keys.rateMembers(name);
    List<LimitView.Share> shares = new ArrayList<>();
    for (KeyValue kv : snap.getRange(members[0], members[1], Integer.MAX_VALUE, false)) {
      UUID runtime = keys.unpack(kv.key()).getUUID(3);
      LimitKeys.Member m = LimitKeys.Member.decode(kv.value());
      double share = shareOf.getOrDefault(runtime, 0.0);
      double burst = c.permitsPerSecond() <= 0 ? 0 : c.burst() * share / c.permitsPerSecond();
      LimitKeys.Bucket b = byRuntime.get(runtime);
      shares.add(
          new LimitView.Share(
              runtime,
              share,
              burst,
              b == null ? 0 : b.tokensAt(now, share, burst),
              m.hungry(),
              m.perSecond(),
              Instant.ofEpochMilli(m.wallMillis())));
    }
    return shares;
  }

  /**
   * The tenant at {@code path}, if its directory exists; nothing is created.
   *
   * @throws OperationTimeoutException if the cluster does not answer in time
   * @throws IllegalArgumentException if the path is empty or has an empty element
   */
  public Optional<TenantAdmin> tenant(String... path) {
    Optional<Subspace> dir =
        operations.call(
            () -> backend.openDirectory(path), "DGenAdmin.tenant", "tenant=" + List.of(path));
    return dir.map(s -> new TenantAdmin(backend, List.of(path), s, serde, clock, operations));
  }
}
