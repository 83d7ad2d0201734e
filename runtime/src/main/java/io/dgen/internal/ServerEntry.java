package io.dgen.internal;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.ServerStoppedException;
import io.dgen.backend.Futures;
import io.dgen.backend.Transaction;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One server's entry in its tenant's server index, {@code FF (2, tuid..)}: written by its start,
 * cleared by its kill (from any runtime), so the mark of a server that exists. Owns the checks that
 * keep a killed server dead everywhere:
 *
 * <ul>
 *   <li>every publish ({@code cast}, {@code castAll}, a queued {@code call}, keyed casts and calls,
 *       {@code submit}, timers, the outbox) reads the entry <em>serializably</em> in its own
 *       transaction, issued together with its other work: a kill that commits first leaves no
 *       entry, so the publish fails with {@link ServerStoppedException} and commits nothing; a kill
 *       that commits after the read clears the entry, so the publish conflicts, retries and fails
 *       the same way. Nothing is ever written under a killed server's keys by a publish, and the
 *       process whose publish found the server gone stops;
 *   <li>a consumer batch that finds the queue empty (a kill rings the server's doorbell in every
 *       runtime) looks at the state's version key if it read it anyway, else at the entry, and
 *       stops its process when the server is gone.
 * </ul>
 *
 * <p>Never commits; writes only at start. Thread-safe (stateless).
 */
final class ServerEntry {

  private static final Logger log = LoggerFactory.getLogger(ServerEntry.class);

  private final byte[] key;
  private final Lifecycle lifecycle;
  private final String context;

  /**
   * @param lifecycle the process's: a publish that finds the server killed stops it
   */
  ServerEntry(TenantKeys tenant, Tuple tuid, Lifecycle lifecycle, String context) {
    this.key = tenant.serverKey(tuid);
    this.lifecycle = lifecycle;
    this.context = context;
  }

  /** Starts reading the entry for {@link #index}, in the start transaction. */
  CompletableFuture<byte @Nullable []> read(Transaction tx) {
    return tx.getAsync(key);
  }

  /** Writes the entry at start unless it already names {@code behaviour}. */
  void index(Transaction tx, CompletableFuture<byte @Nullable []> read, String behaviour) {
    byte[] value = behaviour.getBytes(StandardCharsets.UTF_8);
    if (!Arrays.equals(Futures.join(read), value)) {
      tx.set(key, value); // a restart of an indexed server writes nothing
    }
  }

  /**
   * Starts the read every publish makes: serializable, so that a kill committed after it aborts the
   * publish. The future fails with {@link ServerStoppedException} if the server was killed; the
   * caller waits for it before its transaction commits.
   */
  CompletableFuture<@Nullable Void> require(Transaction tx) {
    return tx.getAsync(key)
        .thenApply(
            v -> {
              if (v == null) {
                if (lifecycle.isAlive()) {
                  log.warn("publish found the server killed; stopping this process: {}", context);
                  lifecycle.terminate(null);
                }
                throw gone();
              }
              return null;
            });
  }

  /** Whether the server still exists, read as a snapshot (for a read-only look). */
  CompletableFuture<Boolean> exists(Transaction tx) {
    return tx.snapshot().getAsync(key).thenApply(v -> v != null);
  }

  /** The server's tenant and tuid, for messages. */
  String context() {
    return context;
  }

  /** What a publish to a killed server fails with. */
  ServerStoppedException gone() {
    return new ServerStoppedException(
        "the server was killed (its entry in the tenant's server index is gone); nothing was"
            + " written: "
            + context);
  }
}
