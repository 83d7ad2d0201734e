package io.dgen.internal.hosting;

import com.apple.foundationdb.subspace.Subspace;
import com.apple.foundationdb.tuple.Tuple;
import io.dgen.HostOptions;
import io.dgen.Tenant;
import io.dgen.backend.Futures;
import io.dgen.backend.KeyValue;
import io.dgen.backend.Transaction;
import io.dgen.internal.base.RuntimeServices;
import io.dgen.internal.commit.Fence;
import io.dgen.internal.keys.ServerEntry;
import io.dgen.internal.keys.ServerKeys;
import io.dgen.internal.keys.TenantKeys;
import io.dgen.internal.process.ServerProcess;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;
import java.util.function.IntPredicate;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The expiry of one hosted kind's servers ({@code HostOptions.expireAfter}): a server idle for that
 * long is deleted, and its next message creates it anew. No key is written per message:
 *
 * <ul>
 *   <li><b>Eviction</b> ({@link #expiresAt}): the transaction that unloads an idle server (empty
 *       queue, no lock, read serializably) also reads its pending timers; with none, it appends the
 *       wall-clock millisecond the server expires at (now + {@code expireAfter}) to the server's
 *       idle entry ({@link ServerEntry}) and writes the index entry {@code FF (13, kind, bucket,
 *       expiresAt, tuid..)} ({@link TenantKeys#expiringKey}). A server stays loaded while it gets
 *       messages, so the idle time counts from its unload.
 *   <li><b>Activation</b>: the push that makes the idle server ready clears the index entry, and
 *       removes the time if it is still ahead on the pusher's clock (the message came in time); a
 *       time that passed stays in the ready entry for the holder to judge. A timer scheduled
 *       meanwhile removes both.
 *   <li><b>Load</b> ({@link #atLoad}): before its loop starts, the holder reads the entry; if the
 *       time it carries has passed (on the runtime's clock) and no timer is pending, the old
 *       server's state, lock, dead letters and kept replies are deleted in that transaction,
 *       keeping the queue and the callers' reply slots: the messages that came find a new server,
 *       whose first batch runs {@code init}. Either way the time is removed.
 *   <li><b>Inline calls</b> ({@link #inlineAllowed}): for a kind with an expiry, a call runs inline
 *       only on a ready server whose entry carries no time (loaded at its holder); any other is
 *       queued for the holder, which judges its expiry at load.
 *   <li><b>Collection</b> ({@link #collect}): the holder of each (kind, bucket) lease reads the
 *       index up to now, {@value #CHUNK} entries a transaction, fenced by the lease, and deletes
 *       each server whose entry is still idle with the same time, whose queue is empty (a
 *       serializable read: a push racing the collection conflicts with it, and either finds the
 *       server deleted and creates a new one, or makes it ready so it is not deleted), unlocked and
 *       without timers, as a kill does; a stale index entry is just cleared.
 * </ul>
 *
 * <p>Never loads or unloads a server ({@link HostedKind} does). Thread-safe: one collection runs at
 * a time.
 */
public final class Expiry {

  private static final Logger log = LoggerFactory.getLogger(Expiry.class);

  /** Index entries a collection transaction reads, and servers it deletes, at most. */
  static final int CHUNK = 100;

  private final RuntimeServices services;
  private final String kind;
  private final IntPredicate holds;
  private final IntFunction<Fence> fences;
  private final TenantKeys tenant;
  private final Tenant owner;
  private final Duration idle;

  /**
   * The expiry of {@code kind}'s servers in {@code owner}.
   *
   * @param holds whether this runtime holds a bucket of the kind now
   * @param fences the fence of a transaction in a bucket: its lease at the epoch held now
   */
  Expiry(
      RuntimeServices services,
      String kind,
      Tenant owner,
      IntPredicate holds,
      IntFunction<Fence> fences,
      TenantKeys tenant,
      Duration idle) {
    this.services = services;
    this.kind = kind;
    this.tenant = tenant;
    this.owner = owner;
    this.holds = holds;
    this.fences = fences;
    this.idle = idle;
  }

  /** How often the holder collects: a tenth of the expiry, between 1 s and 1 min. */
  static long collectPeriodNanos(Duration expireAfter) {
    long tenth = expireAfter.toNanos() / 10;
    return Math.max(TimeUnit.SECONDS.toNanos(1), Math.min(TimeUnit.MINUTES.toNanos(1), tenth));
  }

  Duration idle() {
    return idle;
  }

  // ---------------------------------------------------------------- at load

  /**
   * Judges server {@code keys} as its holder loads it, before its loop starts: one transaction,
   * fenced by the lease, that deletes the old server if its entry's expiry time has passed (see the
   * class comment) and removes the time in any case. Writes nothing for an entry without one.
   *
   * @return whether the server had expired (the listener was told)
   */
  CompletableFuture<Boolean> atLoad(ServerKeys keys, Fence fence) {
    byte[] entryKey = tenant.serverKey(keys.tuid());
    Subspace timers = keys.timers();
    return services
        .backend()
        .runAsync(
            tx -> {
              var entry = tx.getAsync(entryKey);
              var pending = tx.getRangeAsync(timers.range().begin, timers.range().end, 1, false);
              var fenced = fence.check(tx);
              return CompletableFuture.allOf(entry, pending, fenced)
                  .thenApply(
                      ready -> {
                        byte[] v = entry.join();
                        long at = ServerEntry.expiresAt(v);
                        if (at == ServerEntry.NO_EXPIRY) {
                          return false;
                        }
                        boolean expired = at <= services.wallMillis() && pending.join().isEmpty();
                        if (expired) {
                          clearOld(tx, keys);
                        }
                        // the entry keeps its state, without the time
                        tx.set(
                            entryKey,
                            ServerEntry.hostedEntry(ServerEntry.isReady(v), ServerEntry.NO_EXPIRY));
                        tx.clear(tenant.expiringKey(keys.bucket(), at, keys.tuid()));
                        return expired;
                      });
            })
        .thenApply(
            expired -> {
              if (expired) {
                log.info(
                    "server expired (idle for {}); its messages go to a new server: {} tuid={}",
                    idle,
                    owner.path(),
                    keys.tuid());
                services.serverExpired(owner, keys.tuid());
              }
              return expired;
            });
  }

  /**
   * Deletes what the old server leaves to no one: its state, lock, stuck record, dead letters and
   * kept replies. The queue, the callers' reply slots, the commit markers and the idempotency keys
   * belong to the messages that came, which the new server gets.
   */
  private static void clearOld(Transaction tx, ServerKeys keys) {
    for (Subspace s : List.of(keys.stateAndTag(), keys.dead(), keys.kept())) {
      tx.clearRange(s.range().begin, s.range().end);
    }
    tx.clear(keys.lockKey());
    tx.clear(keys.stuckKey());
  }

  /**
   * Starts a loaded server's loop once its holder judged its expiry ({@link #atLoad}): its first
   * batch then runs on the old server's state or, if it expired, on none ({@code init}). If the
   * judgement fails, {@code unload} runs first (the loop of the stopped process only ends).
   */
  void startJudged(ServerProcess<?, ?> p, Fence fence, Runnable unload) {
    // On the executor: the loop's start registers with the doorbell, which may look at the bucket,
    // and must not run on whichever thread completed the commit.
    atLoad(p.keys(), fence)
        .whenCompleteAsync(
            (expired, err) -> {
              if (err != null) {
                log.warn(
                    "judging the expiry of server {} failed; it is loaded again: {}",
                    p.tuid(),
                    owner.path(),
                    err);
                unload.run();
              }
              p.startConsuming();
            },
            services.executor());
  }

  /**
   * Refuses an expiry shorter than the runtime's lease: a holder that died keeps its buckets for a
   * lease, and a server could expire before its new holder loads its queued work.
   *
   * @throws IllegalArgumentException if {@code options.expireAfter()} is shorter than {@code lease}
   */
  public static void checkLease(HostOptions options, Duration lease) {
    Duration idle = options.expireAfter().orElse(null);
    if (idle != null && idle.compareTo(lease) < 0) {
      throw new IllegalArgumentException(
          "expireAfter ("
              + idle
              + ") must not be shorter than the runtime's lease ("
              + lease
              + "): a server could expire while its bucket moves to another runtime");
    }
  }

  // ---------------------------------------------------------------- collection

  /**
   * Collects the expired servers of every bucket of the kind this runtime holds, in the caller's
   * thread: one read-only transaction finds the buckets with a server due (a snapshot read of one
   * index entry per held bucket, all issued at once), then {@value #CHUNK} index entries a
   * transaction, until each such bucket has none due. A bucket whose read fails is tried again by
   * the next collection.
   *
   * @return how many servers were deleted
   */
  synchronized int collect() {
    int deleted = 0;
    for (int b : due()) {
      deleted += collect(b);
    }
    return deleted;
  }

  /** The held buckets with a server due now: an idle holder's whole cost, one transaction. */
  private List<Integer> due() {
    long now = services.wallMillis();
    List<Integer> held = new ArrayList<>();
    for (int b = 0; b < tenant.buckets().count(); b++) {
      if (holds.test(b)) {
        held.add(b);
      }
    }
    if (held.isEmpty()) {
      return held;
    }
    try {
      return services
          .backend()
          .run(
              tx -> {
                List<CompletableFuture<List<KeyValue>>> firsts = new ArrayList<>(held.size());
                for (int b : held) {
                  Subspace index = tenant.expiring(kind, b);
                  byte[] end = index.pack(Tuple.from(now + 1));
                  firsts.add(tx.snapshot().getRangeAsync(index.range().begin, end, 1, false));
                }
                List<Integer> due = new ArrayList<>();
                for (int i = 0; i < held.size(); i++) {
                  if (!firsts.get(i).join().isEmpty()) {
                    due.add(held.get(i));
                  }
                }
                return due;
              });
    } catch (RuntimeException e) {
      log.warn(
          "looking for expired servers of kind {} failed; the next collection tries again: {}",
          kind,
          owner.path(),
          e);
      return List.of();
    }
  }

  private int collect(int bucket) {
    Subspace index = tenant.expiring(kind, bucket);
    Fence fence = fences.apply(bucket);
    int deleted = 0;
    while (holds.test(bucket)) {
      long now = services.wallMillis();
      byte[] end = index.pack(Tuple.from(now + 1));
      Chunk chunk;
      try {
        chunk = services.backend().run(tx -> collectChunk(tx, index, end, fence, bucket));
      } catch (RuntimeException e) {
        if (!(Futures.unwrap(e) instanceof Fence.Deposed)) {
          log.warn(
              "collecting expired servers of kind {} in bucket {} failed; the next collection"
                  + " tries again: {}",
              kind,
              bucket,
              owner.path(),
              e);
        }
        return deleted;
      }
      for (Tuple tuid : chunk.expired()) {
        services.serverExpired(owner, tuid);
      }
      deleted += chunk.expired().size();
      if (chunk.read() < CHUNK) {
        break;
      }
    }
    if (deleted > 0) {
      log.info(
          "collected {} expired server(s) of kind {} in bucket {}: {}",
          deleted,
          kind,
          bucket,
          owner.path());
    }
    return deleted;
  }

  /** What one collection transaction read and deleted. */
  private record Chunk(int read, List<Tuple> expired) {}

  /** One server's index entry and the reads that decide whether it is deleted. */
  private record Candidate(
      byte[] indexKey,
      long at,
      ServerKeys keys,
      CompletableFuture<byte @Nullable []> entry,
      CompletableFuture<List<KeyValue>> queue,
      CompletableFuture<byte @Nullable []> lock,
      CompletableFuture<List<KeyValue>> timers,
      CompletableFuture<List<KeyValue>> slots) {}

  private Chunk collectChunk(Transaction tx, Subspace index, byte[] end, Fence fence, int bucket) {
    CompletableFuture<@Nullable Void> fenced = fence.check(tx);
    // A snapshot read: an eviction indexing a server meanwhile must not abort the collection.
    List<KeyValue> due = tx.snapshot().getRange(index.range().begin, end, CHUNK, false);
    List<Candidate> candidates = new ArrayList<>(due.size());
    for (KeyValue kv : due) {
      Tuple t = index.unpack(kv.key());
      Tuple tuid = t.popFront();
      ServerKeys keys = new ServerKeys(owner.subspace(), tenant.buckets(), tuid);
      Subspace items = keys.items();
      Subspace timers = keys.timers();
      Subspace calls = keys.calls();
      candidates.add(
          new Candidate(
              kv.key(),
              t.getLong(0),
              keys,
              tx.getAsync(tenant.serverKey(tuid)),
              tx.getRangeAsync(items.range().begin, items.range().end, 1, false),
              tx.getAsync(keys.lockKey()),
              tx.getRangeAsync(timers.range().begin, timers.range().end, 1, false),
              tx.getRangeAsync(calls.range().begin, calls.range().end, 0, false)));
    }
    Futures.join(fenced);
    List<Tuple> expired = new ArrayList<>();
    for (Candidate c : candidates) {
      tx.clear(c.indexKey());
      byte[] entry = c.entry().join();
      if (!ServerEntry.isIdle(entry) || ServerEntry.expiresAt(entry) != c.at()) {
        continue; // activated, evicted again, or killed since it was indexed
      }
      if (!c.queue().join().isEmpty() || c.lock().join() != null || !c.timers().join().isEmpty()) {
        tx.set(
            tenant.serverKey(c.keys().tuid()),
            ServerEntry.hostedEntry(false, ServerEntry.NO_EXPIRY));
        continue; // not idle after all: kept, without an expiry until its next unload
      }
      delete(tx, c);
      expired.add(c.keys().tuid());
    }
    return new Chunk(due.size(), expired);
  }

  /**
   * Deletes an expired server as a kill does (its timers were found empty): its whole subspace and
   * its entry. A caller left waiting on a reply slot is rung, and finds its slot gone.
   */
  private void delete(Transaction tx, Candidate c) {
    ServerKeys keys = c.keys();
    keys.ringSlots(tx, tenant, c.slots().join());
    Subspace root = keys.root();
    tx.clearRange(root.range().begin, root.range().end);
    tx.clear(tenant.serverKey(keys.tuid()));
  }
}
