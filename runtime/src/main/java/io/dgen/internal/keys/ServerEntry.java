package io.dgen.internal.keys;

import com.apple.foundationdb.subspace.Subspace;
import com.apple.foundationdb.tuple.Tuple;
import io.dgen.HostOptions;
import io.dgen.ServerStoppedException;
import io.dgen.backend.Futures;
import io.dgen.backend.Transaction;
import io.dgen.internal.base.Lifecycle;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;
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
 * <p>A started server's entry also names its <b>incarnation</b>: an id drawn when a start finds no
 * entry (the first start, or the first after a kill), kept by every later start. The server's type
 * table lives and dies with it (a kill clears both, and the server started again builds its table
 * anew), so the incarnation is the table's identity. A process belongs to the incarnation it
 * started in: a publish, or a state read, that finds another one stops the process with {@link
 * ServerStoppedException}, as a kill does — its learned type table, and its behaviour, are those of
 * a server that no longer exists, and nothing encoded with them may reach the new one. A hosted
 * server has no incarnation: its kind's type table is never cleared, so its indexes never change.
 *
 * <p>A hosted server of a kind with an expiry ({@code HostOptions.expireAfter}) has the wall-clock
 * millisecond it expires at appended to its idle entry by the unload that marks it idle (with its
 * {@code Expiry} index entry); the push that activates it clears the index entry and, if the time
 * has passed on the pusher's clock, keeps it in its ready entry, so that its holder, loading it,
 * deletes the old server before the message runs ({@code Expiry.atLoad}). A timer scheduled
 * meanwhile removes the time.
 *
 * <p>Never commits. Thread-safe. Public for the admin tools ({@code io.dgen.admin}); not an API.
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
  private final java.util.function.LongSupplier wallMillis;
  private final String context;

  /** The incarnation this process started in; 0 until its start committed. */
  private volatile long incarnation;

  /**
   * @param hosted whether the server is addressed by id (a ref): its first push creates it
   * @param lifecycle the process's: a publish that finds a started server killed stops it
   * @param wallMillis the runtime's clock: a push that activates a server with an expiry time still
   *     ahead removes the time (the server got a message in time)
   */
  public ServerEntry(
      TenantKeys tenant,
      ServerKeys server,
      boolean hosted,
      Lifecycle lifecycle,
      java.util.function.LongSupplier wallMillis,
      String context) {
    this.wallMillis = wallMillis;
    this.tenant = tenant;
    this.tuid = server.tuid();
    this.key = tenant.serverKey(tuid);
    this.bucket = server.bucket();
    this.wakeId = server.wakeId();
    this.hosted = hosted;
    this.lifecycle = lifecycle;
    this.context = context;
  }

  /** What {@link #expiresAt} returns for an entry that carries no expiry time. */
  public static final long NO_EXPIRY = Long.MIN_VALUE;

  /** Whether a stored entry is a hosted server's. */
  static boolean isHosted(byte @Nullable [] value) {
    return value != null
        && (value.length == 2 || value.length == 2 + Long.BYTES)
        && value[0] == HOSTED;
  }

  /** Whether a stored entry is a hosted server's that is idle (unloaded with an empty queue). */
  public static boolean isIdle(byte @Nullable [] value) {
    return isHosted(value) && value[1] == IDLE;
  }

  /**
   * The wall-clock millisecond a hosted server's entry says it expires at, or {@link #NO_EXPIRY}.
   */
  public static long expiresAt(byte @Nullable [] value) {
    return isHosted(value) && value.length == 2 + Long.BYTES
        ? java.nio.ByteBuffer.wrap(value, 2, Long.BYTES).getLong()
        : NO_EXPIRY;
  }

  /**
   * A hosted server's entry: ready or idle, with the time it expires at if not {@link #NO_EXPIRY}.
   */
  public static byte[] hostedEntry(boolean ready, long expiresAt) {
    if (expiresAt == NO_EXPIRY) {
      return ready ? HOSTED_READY : HOSTED_IDLE;
    }
    return java.nio.ByteBuffer.allocate(2 + Long.BYTES)
        .put(HOSTED)
        .put(ready ? READY : IDLE)
        .putLong(expiresAt)
        .array();
  }

  /** Whether a stored entry is a hosted server's that may have work. */
  public static boolean isReady(byte @Nullable [] value) {
    return isHosted(value) && value[1] == READY;
  }

  /** What an entry says of its server, for tools: the behaviour, or the hosted server's state. */
  public static String describe(byte[] value) {
    if (isHosted(value)) {
      long at = expiresAt(value);
      String expires = at == NO_EXPIRY ? "" : ", expires at " + java.time.Instant.ofEpochMilli(at);
      return (value[1] == READY ? "hosted (ready" : "hosted (idle") + expires + ")";
    }
    return TenantKeys.behaviourOf(value);
  }

  /** Starts reading the entry for {@link #index}, in the start transaction. */
  public CompletableFuture<byte @Nullable []> readForIndex(Transaction tx) {
    return tx.getAsync(key);
  }

  /**
   * Writes the entry at start unless it already names {@code behaviour} and an incarnation; draws
   * the incarnation if there is none. Returns it, for {@link #startedIn} once the start committed.
   */
  public long index(Transaction tx, CompletableFuture<byte @Nullable []> read, String behaviour) {
    byte[] current = Futures.join(read);
    long id = current == null ? 0 : TenantKeys.incarnationOf(current);
    while (!isIncarnation(id)) {
      id = ThreadLocalRandom.current().nextLong();
    }
    byte[] value = TenantKeys.serverEntry(behaviour, id);
    if (!Arrays.equals(current, value)) {
      tx.set(key, value); // a restart of an indexed server writes nothing
    }
    return id;
  }

  /** This process's start committed in incarnation {@code id}. */
  public void startedIn(long id) {
    incarnation = id;
  }

  /** The incarnation this process belongs to (0 before its start committed). */
  public long incarnation() {
    return incarnation;
  }

  /**
   * Whether {@code id} names an incarnation: not 0 (unknown), {@link TenantKeys#NO_ENTRY} or {@link
   * Long#MIN_VALUE} (which callers use for "not looked yet").
   */
  public static boolean isIncarnation(long id) {
    return id != 0 && id != TenantKeys.NO_ENTRY && id != Long.MIN_VALUE;
  }

  /** Whether an entry's value is of this process's incarnation (or either is unknown). */
  private boolean ours(byte[] entry) {
    long id = TenantKeys.incarnationOf(entry);
    long mine = incarnation;
    return id == 0 || mine == 0 || id == mine;
  }

  /**
   * Stops this process if the entry is gone or of another incarnation, and returns what to throw;
   * null if the server is still the one this process started in.
   */
  private @Nullable ServerStoppedException check(byte @Nullable [] entry, String what) {
    if (entry != null && ours(entry)) {
      return null;
    }
    ServerStoppedException e = entry == null ? gone() : startedAgain();
    if (lifecycle.isAlive()) {
      log.warn("{} found {}; stopping this process: {}", what, e.getMessage(), context);
      lifecycle.terminate(null);
    }
    return e;
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
  public CompletableFuture<@Nullable Void> publish(Transaction tx) {
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
  public CompletableFuture<byte @Nullable []> read(Transaction tx, boolean forPush) {
    return tx.getAsync(key)
        .thenApply(
            v -> {
              if (!hosted && forPush) {
                ServerStoppedException stopped = check(v, "a publish");
                if (stopped != null) {
                  throw stopped;
                }
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
    return ringFor(tx, tenant, server, false);
  }

  /**
   * After a repair of the server's stored state ({@code ServerAdmin.replaceState}): a hosted server
   * is made ready and activated even if it is ready already, so its holder loads it at once, even
   * one that stopped on the undecodable state and waits out a backoff; any other server is rung
   * plainly.
   */
  public static CompletableFuture<@Nullable Void> reload(
      Transaction tx, TenantKeys tenant, ServerKeys server) {
    return ringFor(tx, tenant, server, true);
  }

  private static CompletableFuture<@Nullable Void> ringFor(
      Transaction tx, TenantKeys tenant, ServerKeys server, boolean evenIfReady) {
    byte[] key = tenant.serverKey(server.tuid());
    return tx.getAsync(key)
        .thenApply(
            v -> {
              if (isHosted(v)) {
                byte[] seen = evenIfReady ? null : v; // as if absent: an activation
                activate(
                    tx,
                    tenant,
                    server.tuid(),
                    key,
                    server.bucket(),
                    server.wakeId(),
                    seen,
                    NO_EXPIRY); // no clock here: the holder judges at load
              } else {
                tenant.ring(tx, server.bucket(), server.wakeId());
              }
              return null;
            });
  }

  /** The second half of {@link #publish}: rings (or activates) the server, given its entry. */
  public void ring(Transaction tx, byte @Nullable [] entry) {
    if (hosted || isHosted(entry)) {
      activate(tx, tenant, tuid, key, bucket, wakeId, entry, wallMillis.getAsLong());
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
      byte @Nullable [] entry,
      long nowMillis) {
    if (isReady(entry)) {
      tenant.ring(tx, bucket, wakeId);
      return;
    }
    // A time still ahead by the pusher's clock is removed: the message came in time. A time that
    // passed (or a push without a clock) stays for the holder to judge at load. The index entry
    // goes with the idle mark.
    long at = expiresAt(entry);
    if (at != NO_EXPIRY) {
      tx.clear(tenant.expiringKey(bucket, at, tuid));
      if (nowMillis != NO_EXPIRY && nowMillis < at) {
        at = NO_EXPIRY;
      }
    }
    tx.set(key, hostedEntry(true, at));
    tx.set(tenant.readyKey(bucket, tuid), new byte[0]);
    tenant.ringActivating(tx, bucket, wakeId, tuid.pack());
  }

  /**
   * For a hosted server's timer scheduled before its first push: makes sure the server exists
   * (idle) so that a kill finds and deletes the timer. A started server's entry must exist, and
   * name the incarnation this process started in.
   *
   * @throws ServerStoppedException (in the future) if a started server was killed (or started
   *     again)
   */
  public CompletableFuture<@Nullable Void> require(Transaction tx) {
    return tx.getAsync(key)
        .thenApply(
            v -> {
              if (!hosted) {
                ServerStoppedException stopped = check(v, "a timer's schedule");
                if (stopped != null) {
                  throw stopped;
                }
              } else if (v == null) {
                tx.set(key, HOSTED_IDLE);
              } else {
                notExpiring(tx, v); // a pending timer keeps the server
              }
              return null;
            });
  }

  /** Removes the expiry time of a hosted server's entry {@code v}, and its index entry, if any. */
  void notExpiring(Transaction tx, byte[] v) {
    long at = expiresAt(v);
    if (at != NO_EXPIRY) {
      tx.set(key, hostedEntry(isReady(v), NO_EXPIRY));
      tx.clear(tenant.expiringKey(bucket, at, tuid));
    }
  }

  /**
   * Evicts a hosted server in {@code tx}: marks its entry idle and clears its ready index entry.
   * The caller has read the queue (serializably, and found it empty) and the lock in {@code tx}.
   *
   * @param expiresAt when the idle server expires, {@link #NO_EXPIRY} for never: recorded in its
   *     entry and in its bucket's expiry index (one write per eviction, none per message)
   * @return false if the entry is gone (a kill) or not a ready hosted server's
   */
  public CompletableFuture<Boolean> evict(Transaction tx, CompletableFuture<Long> expiresAt) {
    return tx.getAsync(key)
        .thenCombine(
            expiresAt,
            (v, at) -> {
              if (!isReady(v)) {
                return false;
              }
              tx.set(key, hostedEntry(false, at));
              tx.clear(tenant.readyKey(bucket, tuid));
              if (at != NO_EXPIRY) {
                tx.set(tenant.expiringKey(bucket, at, tuid), new byte[0]);
              }
              return true;
            });
  }

  /** The entry's key in the server index. */
  public byte[] key() {
    return key;
  }

  /**
   * Whether the server still exists as the incarnation this process started in, read as a snapshot
   * (for a read-only look).
   */
  public CompletableFuture<Boolean> exists(Transaction tx) {
    return tx.snapshot().getAsync(key).thenApply(v -> v != null && ours(v));
  }

  /**
   * Starts a snapshot read that fails with {@link ServerStoppedException} (and stops this process)
   * if a started server is gone or was started again since this process started: a state read
   * issues it with its own, since a process must not run its callbacks on another incarnation's
   * state. A hosted server has no incarnation: nothing is read.
   */
  public CompletableFuture<@Nullable Void> current(Transaction tx) {
    if (hosted) {
      return CompletableFuture.completedFuture(null);
    }
    return tx.snapshot()
        .getAsync(key)
        .thenApply(
            v -> {
              ServerStoppedException stopped = check(v, "a state read");
              if (stopped != null) {
                throw stopped;
              }
              return null;
            });
  }

  /** The server's tenant and tuid, for messages. */
  public String context() {
    return context;
  }

  /** What a process of a server that was killed and started again meets. */
  private ServerStoppedException startedAgain() {
    return new ServerStoppedException(
        "the server was killed and started again since this process started (its message set,"
            + " type table and state type may differ); nothing was written. Start a new process"
            + " to reach it: "
            + context);
  }

  /** What a publish to a killed server fails with. */
  ServerStoppedException gone() {
    return new ServerStoppedException(
        "the server was killed (its entry in the tenant's server index is gone); nothing was"
            + " written: "
            + context);
  }

  /**
   * The expiry time an eviction in {@code tx} records for a server of a kind with {@code options}:
   * now + {@code expireAfter} if no timer of it is pending, else (or without an expiry) {@link
   * #NO_EXPIRY}. The timers are read serializably: one scheduled concurrently conflicts.
   */
  public static CompletableFuture<Long> expiresAtEviction(
      long nowMillis, HostOptions options, ServerKeys keys, Transaction tx) {
    Duration after = options.expireAfter().orElse(null);
    if (after == null) {
      return CompletableFuture.completedFuture(NO_EXPIRY);
    }
    long at = nowMillis + after.toMillis();
    Subspace timers = keys.timers();
    return tx.getRangeAsync(timers.range().begin, timers.range().end, 1, false)
        .thenApply(pending -> pending.isEmpty() ? at : NO_EXPIRY);
  }

  /**
   * Whether a call may run inline on a server of a kind with an expiry, given its entry as read
   * (serializably) in the call's transaction: only on a ready one whose entry carries no expiry
   * time, which its holder has loaded and judged. An idle server, or one whose holder has not
   * judged it yet, may be due: the call is queued for the holder.
   */
  public static boolean inlineAllowed(byte @Nullable [] entry) {
    return isReady(entry) && expiresAt(entry) == NO_EXPIRY;
  }

  /**
   * For an outbox push into {@code tx}: true if an earlier attempt of this run committed the pushes
   * to this server (so this attempt must not push again); otherwise writes the server's commit
   * marker into {@code tx} (once) and returns false. The first time per server and transaction it
   * also requires the server to exist ({@link #require}, read together with the marker; a hosted
   * server's absent entry is written idle).
   *
   * @throws io.dgen.ServerStoppedException if the server was killed
   */
  public boolean alreadyCommitted(Transaction tx, ServerKeys keys) {
    return UserVersions.alreadyCommitted(
        tx,
        keys.root().getKey(),
        t -> {
          CompletableFuture<@Nullable Void> live = require(t);
          byte[] marker = keys.marker(t.runId());
          boolean committed = t.attempt() > 1 && t.get(marker) != null;
          Futures.join(live);
          if (!committed) {
            t.set(marker, new byte[0]);
          }
          return committed;
        });
  }
}
