package io.dgen.internal.hosting;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.HostOptions;
import io.dgen.UndecodableDataException;
import io.dgen.internal.base.RuntimeServices;
import io.dgen.internal.commit.Fence;
import io.dgen.internal.keys.ServerKeys;
import io.dgen.internal.keys.StuckRecord;
import io.dgen.internal.keys.TenantKeys;
import io.dgen.internal.process.ServerProcess;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.IntPredicate;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a hosted kind does when one of its loaded servers stops itself ({@code HostedKind}): the
 * look that marks it idle or loads it again, and the servers whose state did not decode (or that a
 * fatal error stopped), loaded again after a growing backoff with a durable stuck record for {@code
 * dgen inspect}. Owns the kind's stuck servers; loading itself is the kind's, handed in as {@code
 * load}. Threading: thread-safe; the stuck servers are a concurrent map.
 */
final class Deactivations {

  private static final Logger log = LoggerFactory.getLogger(Deactivations.class);

  /** The longest wait between two loads of a server whose state does not decode. */
  private static final long STUCK_BACKOFF_MAX_NANOS = TimeUnit.MINUTES.toNanos(5);

  private final RuntimeServices services;
  private final TenantKeys tenantKeys;
  private final HostOptions options;
  private final String context;
  private final IntPredicate holds;
  private final Supplier<UUID> memberId;
  private final Consumer<Tuple> load;

  /**
   * Servers whose state did not decode when last loaded, with how many loads failed so: they are
   * loaded again after a growing backoff, or at once by an activation (a repair rings one).
   */
  private final Map<Tuple, Integer> stuck = new ConcurrentHashMap<>();

  /**
   * @param holds whether this runtime holds a bucket's lease for the kind
   * @param memberId this runtime's placement member id, for the stuck record
   * @param load loads a server of the kind (if its bucket is held and it is not loaded)
   */
  Deactivations(
      RuntimeServices services,
      TenantKeys tenantKeys,
      HostOptions options,
      String context,
      IntPredicate holds,
      Supplier<UUID> memberId,
      Consumer<Tuple> load) {
    this.services = services;
    this.tenantKeys = tenantKeys;
    this.options = options;
    this.context = context;
    this.holds = holds;
    this.memberId = memberId;
    this.load = load;
  }

  /** Whether {@code tuid} waits out the backoff of an undecodable state (or is being looked at). */
  boolean isStuck(Tuple tuid) {
    return stuck.containsKey(tuid);
  }

  /**
   * Marks {@code tuid} as being looked at, before a load may replace its stopped process ({@link
   * #deactivated}).
   */
  void lookingAt(Tuple tuid) {
    stuck.putIfAbsent(tuid, 0);
  }

  /** Forgets {@code tuid} (it was evicted). */
  void forget(Tuple tuid) {
    stuck.remove(tuid);
  }

  /** Forgets the servers of {@code bucket}: whoever holds it next loads them once, as any other. */
  void forgetBucket(int bucket) {
    stuck.keySet().removeIf(tuid -> tenantKeys.buckets().of(tuid) == bucket);
  }

  /**
   * An activation rang in a held bucket: the server became ready, or a repair of its state asks for
   * it to be loaded again. A server waiting out the backoff of an undecodable state is loaded at
   * once.
   */
  void activated(Tuple tuid) {
    Integer failures = stuck.get(tuid);
    if (failures == null) {
      load.accept(tuid);
      return;
    }
    if (failures == 0) {
      return; // its failure is being looked at: the look decides when it loads again
    }
    // A repair clears the stuck record in the transaction that rings; any other ring is late news
    // of the push that made it ready, and loading it again would only fail again.
    byte[] record =
        new ServerKeys(options.tenant().subspace(), tenantKeys.buckets(), tuid).stuckKey();
    services
        .backend()
        .runAsync(tx -> tx.snapshot().getAsync(record))
        .whenComplete(
            (stillStuck, err) -> {
              if (err == null && stillStuck == null && stuck.remove(tuid, failures)) {
                load.accept(tuid);
              }
            });
  }

  /**
   * The server stopped itself while loaded: a {@code Result.stop}, a state that does not decode, a
   * fatal error, a kill, or a fence that found the bucket gone. A hosted server is never gone for
   * good (a kill aside, whose next message creates it anew): it is deactivated, and loaded again by
   * its next message from any runtime. So its entry may not stay ready with no process loaded,
   * where a push would only ring a bucket nobody listens on for it: one eviction transaction marks
   * it idle if its queue is empty and it is unlocked (a push then activates it), and if it has work
   * it is loaded again — at once after a stop, after a growing backoff ({@link #stuck}) when its
   * state did not decode or a fatal error stopped it. A look that fails is tried again after the
   * longest backoff while the bucket is held.
   *
   * @param why what stopped it: null for a stop it asked for (or a kill); a {@link Fence.Deposed}
   *     fence is no deactivation (the bucket's new holder runs the server)
   */
  void deactivated(Tuple tuid, ServerProcess<?, ?> stopped, @Nullable Throwable why) {
    if (!looksAt(tuid, why)) {
      return; // a holder that takes the bucket rescans its ready index
    }
    if (why != null) {
      // Not loaded again while the look below is under way (a push or a rescan would load a state
      // that fails again): it decides when.
      stuck.putIfAbsent(tuid, 0);
    }
    stopped
        .evict()
        .whenComplete(
            (idle, err) -> {
              if (err != null) {
                log.warn(
                    "a deactivated server could not be marked idle; trying again: {} tuid={}",
                    context,
                    tuid,
                    err);
                KindTasks.schedule(
                    services,
                    () -> deactivated(tuid, stopped, why),
                    services.backoffNanos(Integer.MAX_VALUE));
              } else if (Boolean.TRUE.equals(idle)) {
                stuck.remove(tuid);
              } else if (why == null) {
                // it has work: its next process runs it
                KindTasks.execute(services, () -> activate(tuid));
              } else {
                // the record first: until it is durable, a ring cannot tell a repair (which
                // clears it) from late news, and is ignored
                markStuck(stopped, why).whenComplete((done, e) -> reloadStuck(tuid));
              }
            });
  }

  /** Whether a server that stopped for {@code why} is looked at here ({@link #deactivated}). */
  boolean looksAt(Tuple tuid, @Nullable Throwable why) {
    return !(why instanceof Fence.Deposed)
        && holds.test(tenantKeys.buckets().of(tuid))
        && services.hooks().backgroundConsumers();
  }

  /**
   * A server that stopped on an undecodable state (or a fatal error) and still has work: loaded
   * again after a backoff that doubles up to {@value #STUCK_BACKOFF_MAX_NANOS} ns, not by every
   * message it gets; each load that fails again logs again.
   */
  private void reloadStuck(Tuple tuid) {
    int n = stuck.merge(tuid, 1, Integer::sum);
    long delay = services.backoffNanos(Integer.MAX_VALUE) << Math.min(n - 1, 20);
    delay = delay <= 0 ? STUCK_BACKOFF_MAX_NANOS : Math.min(delay, STUCK_BACKOFF_MAX_NANOS);
    log.warn(
        "server {} stopped again ({} time(s)) and has work; it is loaded again in {} s, or at once"
            + " when its state is replaced: {}",
        tuid,
        n,
        TimeUnit.NANOSECONDS.toSeconds(delay),
        context);
    KindTasks.schedule(
        services,
        () -> {
          if (stuck.containsKey(tuid)) {
            load.accept(tuid);
          }
        },
        delay);
  }

  /**
   * Records durably why the server stopped (its state does not decode, or a fatal error), for
   * {@code dgen inspect} and the dashboard; a state repair, an eviction or a kill clears it. Best
   * effort: a failure is logged.
   *
   * @return a future that completes (never exceptionally) once the write committed or failed
   */
  private CompletableFuture<@Nullable Void> markStuck(ServerProcess<?, ?> stopped, Throwable why) {
    byte[] record =
        StuckRecord.encode(
            services.wallMillis(),
            memberId.get(),
            why instanceof UndecodableDataException ? why.getMessage() : why.toString());
    return services
        .backend()
        .runAsync(
            tx -> {
              tx.set(stopped.keys().stuckKey(), record);
              return CompletableFuture.completedFuture(null);
            })
        .whenComplete(
            (done, err) -> {
              if (err != null) {
                log.warn(
                    "could not record that server {} is stuck: {}", stopped.tuid(), context, err);
              }
            })
        .<@Nullable Void>handle((done, err) -> null);
  }

  /** Loads {@code tuid} unless it waits out the backoff of an undecodable state. */
  private void activate(Tuple tuid) {
    if (!stuck.containsKey(tuid)) {
      load.accept(tuid);
    }
  }
}
