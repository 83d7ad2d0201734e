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
 * One server's entry in its tenant's server index, {@code FF (2, tuid..)}, the mark of a server
 * that exists, and the publish step every push goes through. The entry of a started server holds
 * its behaviour's class name (written by its start); a hosted server's holds whether it is
 * <em>ready</em> (it may have work; its bucket's holder runs it) or <em>idle</em> (written by its
 * first push, and by its holder's eviction). Both are cleared by a kill, from any runtime.
 *
 * <ul>
 *   <li>every publish ({@code cast}, {@code castAll}, a queued {@code call}, keyed casts and calls,
 *       {@code submit}, the outbox, a timer firing) reads the entry <em>serializably</em> in its
 *       own transaction, issued together with its other work, and rings the server's bucket once
 *       the read is in ({@link #publish}). A started server's entry gone means killed: the publish
 *       fails with {@link ServerStoppedException} and commits nothing (a kill that commits after
 *       the read clears the entry, so the publish conflicts, retries and fails the same way), and
 *       the process whose publish found it gone stops. A hosted server's entry absent or idle is
 *       made ready, its ready index entry written, and the ring carries its tuid (an activation);
 *       two such pushes racing conflict on the entry and the second retries as a plain one;
 *   <li>a consumer batch that finds the queue empty (a kill rings the server's bucket in every
 *       runtime) looks at the state's version key if it read it anyway, else at the entry, and
 *       stops its process when the server is gone.
 * </ul>
 *
 * <p>Never commits. Thread-safe (stateless). Public for the admin tools ({@code io.dgen.admin});
 * not an API.
 */
public final class ServerEntry {

  private static final Logger log = LoggerFactory.getLogger(ServerEntry.class);

  /** The first byte of a hosted server's entry; no class name starts with it. */
  private static final byte HOSTED = 0;

  private static final byte IDLE = 0;
  private static final byte READY = 1;

  private static final byte[] HOSTED_READY = {HOSTED, READY};
  private static final byte[] HOSTED_IDLE = {HOSTED, IDLE};

  private final TenantKeys tenant;
  private final Tuple tuid;
  private final byte[] key;
  private final int bucket;
  private final long wakeId;
  private final boolean hosted;
  private final Lifecycle lifecycle;
  private final String context;

  /**
   * @param hosted whether the server is addressed by id (a ref): its first push creates it
   * @param lifecycle the process's: a publish that finds a started server killed stops it
   */
  ServerEntry(
      TenantKeys tenant, ServerKeys server, boolean hosted, Lifecycle lifecycle, String context) {
    this.tenant = tenant;
    this.tuid = server.tuid();
    this.key = tenant.serverKey(tuid);
    this.bucket = server.bucket();
    this.wakeId = server.wakeId();
    this.hosted = hosted;
    this.lifecycle = lifecycle;
    this.context = context;
  }

  /** Whether a stored entry is a hosted server's. */
  static boolean isHosted(byte @Nullable [] value) {
    return value != null && value.length == 2 && value[0] == HOSTED;
  }

  /** Whether a stored entry is a hosted server's that may have work. */
  static boolean isReady(byte @Nullable [] value) {
    return isHosted(value) && value[1] == READY;
  }

  /** What an entry says of its server, for tools: the behaviour, or the hosted server's state. */
  public static String describe(byte[] value) {
    if (isHosted(value)) {
      return value[1] == READY ? "hosted (ready)" : "hosted (idle)";
    }
    return new String(value, StandardCharsets.UTF_8);
  }

  /** Starts reading the entry for {@link #index}, in the start transaction. */
  CompletableFuture<byte @Nullable []> readForIndex(Transaction tx) {
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
   * The publish step: reads the entry serializably (so a kill committed after it aborts the
   * publish), then rings the server's bucket: with its tuid if a hosted server becomes ready (the
   * entry and the ready index are written then), plainly otherwise. The caller issues it with its
   * pushes and waits for it before its transaction commits.
   *
   * @return completes once the ring is written; fails with {@link ServerStoppedException} if a
   *     started server was killed (nothing may then commit)
   */
  CompletableFuture<@Nullable Void> publish(Transaction tx) {
    return read(tx, true)
        .thenApply(
            v -> {
              ring(tx, v);
              return null;
            });
  }

  /**
   * The first half of {@link #publish}, for a transaction that decides whether it pushes only once
   * the entry is read (a keyed push): the entry as read, for {@link #ring}.
   *
   * @param forPush whether the caller may push: a started server's entry gone then fails the future
   *     with {@link ServerStoppedException}
   */
  CompletableFuture<byte @Nullable []> read(Transaction tx, boolean forPush) {
    return tx.getAsync(key)
        .thenApply(
            v -> {
              if (v == null && !hosted && forPush) {
                if (lifecycle.isAlive()) {
                  log.warn("publish found the server killed; stopping this process: {}", context);
                  lifecycle.terminate(null);
                }
                throw gone();
              }
              return v;
            });
  }

  /**
   * The publish step of a transaction that runs for no process of the server (a timer that fires,
   * an admin tool's re-queue): a hosted server is activated as by a push; any other, or a server
   * without an entry (started before the index existed), is rung plainly.
   */
  public static CompletableFuture<@Nullable Void> publishFor(
      Transaction tx, TenantKeys tenant, ServerKeys server) {
    byte[] key = tenant.serverKey(server.tuid());
    return tx.getAsync(key)
        .thenApply(
            v -> {
              if (isHosted(v)) {
                activate(tx, tenant, server.tuid(), key, server.bucket(), server.wakeId(), v);
              } else {
                tenant.ring(tx, server.bucket(), server.wakeId());
              }
              return null;
            });
  }

  /** The second half of {@link #publish}: rings (or activates) the server, given its entry. */
  void ring(Transaction tx, byte @Nullable [] entry) {
    if (hosted || isHosted(entry)) {
      activate(tx, tenant, tuid, key, bucket, wakeId, entry);
    } else {
      tenant.ring(tx, bucket, wakeId);
    }
  }

  private static void activate(
      Transaction tx,
      TenantKeys tenant,
      Tuple tuid,
      byte[] key,
      int bucket,
      long wakeId,
      byte @Nullable [] entry) {
    if (isReady(entry)) {
      tenant.ring(tx, bucket, wakeId);
      return;
    }
    tx.set(key, HOSTED_READY);
    tx.set(tenant.readyKey(bucket, tuid), new byte[0]);
    tenant.ringActivating(tx, bucket, wakeId, tuid.pack());
  }

  /**
   * For a hosted server's timer scheduled before its first push: makes sure the server exists
   * (idle) so that a kill finds and deletes the timer. A started server's entry must exist.
   *
   * @throws ServerStoppedException (in the future) if a started server was killed
   */
  CompletableFuture<@Nullable Void> require(Transaction tx) {
    return tx.getAsync(key)
        .thenApply(
            v -> {
              if (v == null) {
                if (!hosted) {
                  if (lifecycle.isAlive()) {
                    log.warn("publish found the server killed; stopping this process: {}", context);
                    lifecycle.terminate(null);
                  }
                  throw gone();
                }
                tx.set(key, HOSTED_IDLE);
              }
              return null;
            });
  }

  /**
   * Evicts a hosted server in {@code tx}: marks its entry idle and clears its ready index entry.
   * The caller has read the queue (serializably, and found it empty) and the lock in {@code tx}.
   *
   * @return false if the entry is gone (a kill) or not a ready hosted server's
   */
  CompletableFuture<Boolean> evict(Transaction tx) {
    return tx.getAsync(key)
        .thenApply(
            v -> {
              if (!isReady(v)) {
                return false;
              }
              tx.set(key, HOSTED_IDLE);
              tx.clear(tenant.readyKey(bucket, tuid));
              return true;
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
