package io.dgen.admin;

import com.apple.foundationdb.subspace.Subspace;
import io.dgen.backend.Backend;
import io.dgen.internal.codec.Serde;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

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
 */
public final class DGenAdmin {

  private final Backend backend;
  private final Serde serde;
  private final Clock clock;

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
    this.backend = Objects.requireNonNull(backend, "backend must not be null");
    this.clock = Objects.requireNonNull(clock, "clock must not be null");
    this.serde = new Serde(Serde.defaultMapper());
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
    for (String name : backend.listDirectories(parent.toArray(String[]::new))) {
      List<String> path = new ArrayList<>(parent);
      path.add(name);
      out.add(List.copyOf(path));
      walk(path, out);
    }
  }

  /**
   * The tenant at {@code path}, if its directory exists; nothing is created.
   *
   * @throws IllegalArgumentException if the path is empty or has an empty element
   */
  public Optional<TenantAdmin> tenant(String... path) {
    Optional<Subspace> dir = backend.openDirectory(path);
    return dir.map(s -> new TenantAdmin(backend, List.of(path), s, serde, clock));
  }
}
