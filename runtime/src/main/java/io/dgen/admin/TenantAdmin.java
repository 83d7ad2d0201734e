package io.dgen.admin;

import com.apple.foundationdb.subspace.Subspace;
import com.apple.foundationdb.tuple.Tuple;
import io.dgen.backend.Backend;
import io.dgen.backend.KeyValue;
import io.dgen.backend.Transaction;
import io.dgen.internal.OperationTimeouts;
import io.dgen.internal.ServerKeys;
import io.dgen.internal.TenantKeys;
import io.dgen.internal.codec.Serde;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Function;

/**
 * The admin view of one tenant: its servers, listed from the tenant's server index {@code 0xFF (2,
 * tuid..)} (one short range read, no scan of the servers' keys).
 *
 * <p>A server is indexed by its start transaction; a server last started by a runtime older than
 * the index is not listed until it is started again, but {@link #server} still finds it by tuid.
 */
public final class TenantAdmin {

  /**
   * A server in the index.
   *
   * @param tuid its identity
   * @param behaviour the class name of the behaviour that last started it
   */
  public record ServerEntry(Tuple tuid, String behaviour) {}

  private final Backend backend;
  private final List<String> path;
  private final Subspace subspace;
  private final TenantKeys keys;
  private final Serde serde;
  private final Clock clock;
  private final OperationTimeouts operations;
  private final String context;

  TenantAdmin(
      Backend backend,
      List<String> path,
      Subspace subspace,
      Serde serde,
      Clock clock,
      OperationTimeouts operations) {
    this.operations = operations;
    this.context = "tenant=" + path;
    this.backend = backend;
    this.path = path;
    this.subspace = subspace;
    this.keys = new TenantKeys(subspace);
    this.serde = serde;
    this.clock = clock;
  }

  /** The tenant's directory path. */
  public List<String> path() {
    return path;
  }

  /** Every indexed server, in key order of its tuid. */
  public List<ServerEntry> servers() {
    Subspace index = keys.servers();
    List<KeyValue> rows =
        run("servers", tx -> tx.snapshot().getRange(index.range().begin, index.range().end));
    List<ServerEntry> out = new ArrayList<>(rows.size());
    for (KeyValue kv : rows) {
      out.add(
          new ServerEntry(index.unpack(kv.key()), new String(kv.value(), StandardCharsets.UTF_8)));
    }
    return out;
  }

  /**
   * The server {@code tuid}, if it is indexed or has any key (state, queue, dead letters...).
   * Nothing is created.
   */
  public Optional<ServerAdmin> server(Tuple tuid) {
    Objects.requireNonNull(tuid, "tuid must not be null");
    ServerKeys server = new ServerKeys(subspace, tuid);
    byte[] indexed =
        run(
            "server",
            tx -> {
              byte[] entry = tx.snapshot().get(keys.serverKey(tuid));
              if (entry != null) {
                return entry;
              }
              Subspace root = server.root();
              return tx.snapshot()
                      .getRange(root.range().begin, root.range().end, 1, false)
                      .isEmpty()
                  ? null
                  : new byte[0];
            });
    if (indexed == null) {
      return Optional.empty();
    }
    String behaviour = indexed.length == 0 ? null : new String(indexed, StandardCharsets.UTF_8);
    return Optional.of(
        new ServerAdmin(backend, server, keys, behaviour, serde, clock, operations, context));
  }

  /**
   * Runs an admin transaction within the operation timeout.
   *
   * @throws io.dgen.OperationTimeoutException if the cluster does not answer in time
   */
  private <T> T run(String operation, Function<? super Transaction, ? extends T> body) {
    return operations.run(backend, body, "TenantAdmin." + operation, context);
  }
}
