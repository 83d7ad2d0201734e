package io.dgen.internal.hosting;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.DGenServer;
import io.dgen.HostOptions;
import io.dgen.backend.Futures;
import io.dgen.internal.base.Lifecycle;
import io.dgen.internal.base.RuntimeServices;
import io.dgen.internal.behaviour.Init;
import io.dgen.internal.codec.StateTag;
import io.dgen.internal.commit.Fence;
import io.dgen.internal.doorbell.TenantWatcher;
import io.dgen.internal.keys.TenantKeys;
import io.dgen.internal.lock.LockCoordinator;
import io.dgen.internal.process.ProcessContext;
import io.dgen.internal.process.ProcessKind;
import io.dgen.internal.process.ServerProcess;
import io.dgen.internal.queue.KindTypes;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import tools.jackson.databind.JavaType;

/**
 * One kind this runtime hosts in one tenant ({@code DGen.host}): its behaviour, its options, its
 * type table, and the servers of it this runtime runs now — loaded when they have work in a bucket
 * whose lease this runtime holds, dropped when the lease goes or they stay idle for {@link
 * HostOptions#idleTimeout()}.
 *
 * <ul>
 *   <li><b>Loading</b> ({@link #activate}): an activation rang in a held bucket, a rescan of a held
 *       bucket's ready index found the server, or a ref of this runtime calls it. Loading builds
 *       the server's process without a transaction; its first batch reads its state, and with none
 *       runs {@code init} in the batch's transaction.
 *   <li><b>Eviction</b> ({@link #sweep}): a loaded server parked on an empty queue for the idle
 *       timeout is marked idle and dropped in one transaction that reads its queue (serializably)
 *       and its lock: a push landing meanwhile conflicts with it, or sees the idle mark and
 *       activates the server again. An activation that arrives while an eviction is under way is
 *       kept, and loads the server again once it is dropped.
 *   <li><b>Losing a bucket</b> ({@link #release}, {@link #drop}): its servers stop starting
 *       batches; a hand-off waits for the batches in flight to end first.
 * </ul>
 *
 * <p>Never decides placement ({@link Placement} does) and never reads the wake logs ({@link
 * TenantWatcher} does). Threading: thread-safe; the loaded servers are a concurrent map changed
 * only through {@code compute}.
 *
 * @param <S> the state type
 * @param <M> the message type
 */
public final class HostedKind<S, M> implements ProcessKind<S, M> {

  private static final Logger log = LoggerFactory.getLogger(HostedKind.class);

  /** A loaded server, and what its eviction learned meanwhile. */
  private static final class Loaded<S, M> {
    final ServerProcess<S, M> process;
    volatile boolean evicting;
    volatile boolean activatedWhileEvicting;

    /**
     * Set before this kind stops the process itself (a hand-off, a lost bucket, an eviction, the
     * runtime closing): any other stop is the server's own, a deactivation ({@link
     * Deactivations#deactivated}).
     */
    volatile boolean unloaded;

    Loaded(ServerProcess<S, M> process) {
      this.process = process;
    }
  }

  private final ProcessContext wiring;
  private final RuntimeServices services;
  private final Placement placement;
  private final TenantKeys tenantKeys;
  private final String kind;
  private final boolean typed;
  private final Supplier<? extends DGenServer<S, M>> behaviour;
  private final HostOptions options;
  private final JavaType stateType;
  private final JavaType messageType;
  private final KindTypes types;
  private final String context;
  private final Map<Tuple, Loaded<S, M>> loaded = new ConcurrentHashMap<>();
  private final @Nullable Expiry expiry;

  private final Deactivations deactivations;
  private final ReadyRescan readyRescan;

  public HostedKind(
      ProcessContext wiring,
      Placement placement,
      TenantKeys tenantKeys,
      String kind,
      boolean typed,
      JavaType messageType,
      Supplier<? extends DGenServer<S, M>> behaviour,
      DGenServer<S, M> sample,
      HostOptions options) {
    this.wiring = wiring;
    this.services = wiring.services();
    this.placement = placement;
    this.tenantKeys = tenantKeys;
    this.kind = kind;
    this.typed = typed;
    this.behaviour = behaviour;
    this.options = options;
    this.stateType = services.serde().type(Init.typeArgument(sample, 0));
    this.messageType = messageType;
    this.types =
        new KindTypes(
            services.backend(),
            tenantKeys,
            kind,
            services.types(messageType, stateType, options.allowedTypes()));
    this.context = "tenant=" + options.tenant().path() + " kind=" + kind;
    this.expiry =
        options
            .expireAfter()
            .map(
                idle ->
                    new Expiry(
                        services,
                        kind,
                        options.tenant(),
                        this::holds,
                        this::fence,
                        tenantKeys,
                        idle))
            .orElse(null);
    this.deactivations =
        new Deactivations(
            services, tenantKeys, options, context, this::holds, placement::memberId, this::load);
    this.readyRescan =
        new ReadyRescan(services, tenantKeys, kind, context, this::holds, this::activate);
    // A missing migration of the state type is refused here, not when a server first loads.
    new StateTag(stateType.getRawClass(), services.serde().migrations());
  }

  /**
   * A server's id, as its {@code init} and {@code TxContext.id()} get it: for a kind hosted by
   * {@code io.dgen.Kind}, the one string or integer after the kind as a {@code String} or {@code
   * Long}, any other id as a {@code Tuple}; for a kind hosted by name, the tuid without the kind.
   */
  @Override
  public Object idOf(Tuple tuid) {
    Tuple id = tuid.popFront();
    if (typed && id.size() == 1) {
      Object only = id.get(0);
      if (only instanceof String || only instanceof Long) {
        return only;
      }
    }
    return id;
  }

  /** Completes the kind's stored type table with every class the behaviour accepts. */
  void completeTypes() {
    if (types.registry().messagesTagged()) {
      types.complete(types.registry().messageTagNames());
    }
  }

  String kind() {
    return kind;
  }

  @Override
  public HostOptions options() {
    return options;
  }

  @Override
  public KindTypes types() {
    return types;
  }

  @Override
  public JavaType stateType() {
    return stateType;
  }

  @Override
  public JavaType messageType() {
    return messageType;
  }

  /** The expiry of the kind's servers, if its options set one. */
  @Nullable Expiry expiry() {
    return expiry;
  }

  /** A fresh behaviour instance, for one server. */
  @Override
  public DGenServer<S, M> newBehaviour() {
    DGenServer<S, M> b = behaviour.get();
    if (b == null) {
      throw new IllegalStateException("the behaviour supplier of kind " + kind + " returned null");
    }
    return b;
  }

  /** The fence of a batch of a server in {@code bucket}: the lease at the epoch held now. */
  @Override
  public Fence fence(int bucket) {
    return tx -> placement.fence(tx, kind, bucket, placement.epoch(kind, bucket));
  }

  /** Who may hold a lock of this kind's servers: the tenant's placement members. */
  @Override
  public LockCoordinator.Holders lockHolders() {
    return new LockCoordinator.Holders() {
      @Override
      public UUID self() {
        return placement.memberId();
      }

      @Override
      public boolean gone(UUID member) {
        return !placement.isLive(member);
      }

      @Override
      public long recheckMillis() {
        return placement.leaseMillis();
      }
    };
  }

  /** Whether this runtime holds the lease of the server's bucket for this kind. */
  boolean holds(int bucket) {
    return placement.epoch(kind, bucket) != 0;
  }

  /** How many servers of the kind are loaded here. */
  int loadedCount() {
    return loaded.size();
  }

  /**
   * The loaded process of {@code tuid}, if any (a ref of this runtime may run a call inline). In a
   * runtime without background consumers (the test kit) that holds the server's bucket, one is
   * loaded now if none is, without a consume loop: the test drains it, and a call finding its queue
   * empty runs inline, as for a started server.
   */
  @Override
  public @Nullable ServerProcess<S, M> loadedProcess(Tuple tuid) {
    Loaded<S, M> l = loaded.get(tuid);
    if (l != null && !l.evicting && l.process.isAlive()) {
      return l.process;
    }
    if (services.hooks().backgroundConsumers() || !holds(tenantKeys.buckets().of(tuid))) {
      return null;
    }
    Loaded<S, M>[] made = newArray();
    Loaded<S, M> now =
        loaded.compute(
            tuid,
            (t, cur) -> {
              if (cur != null && cur.process.isAlive()) {
                return cur;
              }
              made[0] = new Loaded<>(ServerProcess.hosted(wiring, this, tuid));
              return made[0];
            });
    Loaded<S, M> fresh = made[0];
    if (fresh != null) {
      fresh.process.onStop(() -> loaded.remove(tuid, fresh));
      if (expiry != null) {
        Futures.join(expiry.atLoad(fresh.process.keys(), fence(tenantKeys.buckets().of(tuid))));
      }
    }
    return java.util.Objects.requireNonNull(now).process;
  }

  /**
   * After a push from this runtime committed: loads {@code tuid} if this runtime holds its bucket
   * and has not loaded it, so that a server the push made ready does not wait for its bucket's
   * watch to fire and the doorbell to read the wake log. The doorbell's own activation then finds
   * it loaded. Costs one map lookup when the server is loaded already.
   */
  @Override
  public void activateAfterPush(Tuple tuid) {
    Loaded<S, M> l = loaded.get(tuid);
    if ((l == null || !l.process.isAlive())
        && !deactivations.isStuck(tuid)
        && holds(tenantKeys.buckets().of(tuid))) {
      execute(() -> activate(tuid));
    }
  }

  /**
   * An activation rang in a held bucket: the server became ready, or a repair of its state asks for
   * it to be loaded again. A server waiting out the backoff of an undecodable state is loaded at
   * once.
   */
  void activated(Tuple tuid) {
    deactivations.activated(tuid);
  }

  // ---------------------------------------------------------------- loading

  /**
   * Loads server {@code tuid} (of this kind) if this runtime holds its bucket and it is not loaded
   * yet, unless it waits out the backoff of an undecodable state; one being evicted loads again
   * once it is dropped.
   */
  void activate(Tuple tuid) {
    if (!deactivations.isStuck(tuid)) {
      load(tuid);
    }
  }

  private void load(Tuple tuid) {
    int bucket = tenantKeys.buckets().of(tuid);
    if (!holds(bucket) || !services.hooks().backgroundConsumers()) {
      return;
    }
    Loaded<S, M>[] made = newArray();
    Throwable[] failed = new Throwable[1];
    loaded.compute(
        tuid,
        (t, l) -> {
          // A process that stopped itself stays until its termination was looked at (just
          // after its stop hooks ran): a load in between would run a state that failed again.
          if (l != null && (l.process.isAlive() || !l.unloaded)) {
            if (l.evicting) {
              l.activatedWhileEvicting = true;
            }
            return l;
          }
          try {
            made[0] = new Loaded<>(ServerProcess.hosted(wiring, this, tuid));
          } catch (Throwable e) { // the behaviour's supplier is user code
            if (Lifecycle.isFatal(e)) {
              throw e;
            }
            failed[0] = e;
            return l;
          }
          return made[0];
        });
    if (failed[0] != null) {
      // Not on the caller's thread (a doorbell cycle, a rescan): the server's messages wait, and
      // the load is tried again after the longest backoff.
      log.error(
          "the behaviour supplier of kind {} failed; server {} is not loaded, its messages wait,"
              + " and the load is retried: {}",
          kind,
          tuid,
          context,
          failed[0]);
      schedule(() -> activate(tuid), services.backoffNanos(Integer.MAX_VALUE));
      return;
    }
    Loaded<S, M> l = made[0];
    if (l != null) {
      ServerProcess<S, M> p = l.process;
      p.onStop(
          () -> {
            if (l.unloaded) {
              loaded.remove(tuid, l);
            }
          });
      p.termination()
          .whenComplete(
              (done, why) -> {
                Throwable cause = why == null ? null : Futures.unwrap(why);
                boolean deactivated = !l.unloaded;
                if (deactivated && cause != null && deactivations.looksAt(tuid, cause)) {
                  deactivations.lookingAt(tuid); // before a load may replace it
                }
                loaded.remove(tuid, l);
                if (deactivated) {
                  deactivations.deactivated(tuid, p, cause);
                }
              });
      if (expiry == null) {
        p.startConsuming();
      } else { // a judgement that fails unloads it; it is loaded again after a backoff
        expiry.startJudged(
            p,
            fence(bucket),
            () -> {
              l.unloaded = true;
              p.stop();
              schedule(() -> activate(tuid), services.backoffNanos(Integer.MAX_VALUE));
            });
      }
    }
  }

  /**
   * The test kit's drain of server {@code tuid}: loads it here if it is not ({@link
   * #loadedProcess}) and runs its queue to empty in the caller's thread.
   *
   * @throws IllegalStateException if the runtime has background consumers, or does not hold the
   *     server's bucket
   */
  @Override
  public int drainInCaller(Tuple tuid, int maxFailures) {
    if (services.hooks().backgroundConsumers()) {
      throw new IllegalStateException(
          "drainInCaller needs DGen.Builder.backgroundConsumers(false)");
    }
    ServerProcess<S, M> p = loadedProcess(tuid);
    if (p == null) {
      throw new IllegalStateException(
          "this runtime does not hold the bucket of server "
              + tuid
              + ", so it cannot drain it (another runtime hosting kind "
              + kind
              + " holds it): "
              + context);
    }
    return p.drainInCaller(maxFailures);
  }

  // ---------------------------------------------------------------- deactivation

  @SuppressWarnings("unchecked")
  private static <S, M> Loaded<S, M>[] newArray() {
    return (Loaded<S, M>[]) new Loaded<?, ?>[1];
  }

  /**
   * Loads every server of this kind in the ready index of {@code bucket}: see {@link
   * ReadyRescan#rescan}.
   *
   * @return null once done (or the bucket is no longer held); if a read failed, the key to go on
   *     from (the hosting tries again after a backoff)
   */
  byte @Nullable [] rescan(int bucket, byte @Nullable [] resumeAt) {
    return readyRescan.rescan(bucket, resumeAt);
  }

  // ---------------------------------------------------------------- losing buckets

  /**
   * Stops the servers of {@code bucket} (a hand-off): completes once none has a batch in flight.
   */
  CompletableFuture<@Nullable Void> release(int bucket) {
    // whoever holds the bucket next loads its stuck servers once, as any ready server
    deactivations.forgetBucket(bucket);
    List<CompletableFuture<?>> quiet = new ArrayList<>();
    for (Map.Entry<Tuple, Loaded<S, M>> e : loaded.entrySet()) {
      if (tenantKeys.buckets().of(e.getKey()) == bucket) {
        Loaded<S, M> l = e.getValue();
        l.unloaded = true;
        l.process.stop();
        if (services.hooks().backgroundConsumers()) {
          quiet.add(l.process.quiet()); // the test kit's have no loop: nothing in flight
        }
      }
    }
    return CompletableFuture.allOf(quiet.toArray(CompletableFuture[]::new));
  }

  /** Stops the servers of {@code bucket} at once (the lease is gone). */
  void drop(int bucket) {
    release(bucket);
  }

  /** Stops every loaded server (the runtime closes). */
  void close() {
    for (Loaded<S, M> l : loaded.values()) {
      l.unloaded = true;
      l.process.stop();
    }
  }

  // ---------------------------------------------------------------- eviction

  /**
   * Evicts the loaded servers parked on an empty queue for longer than the idle timeout. Each
   * eviction is one transaction of its own, asynchronous.
   */
  void sweep() {
    long now = services.nanoTime();
    long idle = options.idleTimeout().toNanos();
    for (Map.Entry<Tuple, Loaded<S, M>> e : loaded.entrySet()) {
      Loaded<S, M> l = e.getValue();
      long since = l.process.idleSince();
      if (!l.evicting && since != Long.MIN_VALUE && now - since >= idle) {
        evict(e.getKey(), l);
      }
    }
  }

  private void evict(Tuple tuid, Loaded<S, M> l) {
    l.evicting = true;
    l.activatedWhileEvicting = false;
    l.process
        .evict()
        .whenComplete(
            (gone, err) -> {
              if (err != null || !Boolean.TRUE.equals(gone)) {
                l.evicting = false; // it has work, or the look failed: it stays
                return;
              }
              l.unloaded = true;
              l.process.stop();
              deactivations.forget(tuid);
              boolean again =
                  loaded.compute(
                              tuid,
                              (t, cur) -> {
                                if (cur != l) {
                                  return cur;
                                }
                                return null;
                              })
                          == null
                      && l.activatedWhileEvicting;
              if (again) {
                execute(() -> activate(tuid));
              }
            });
  }

  private void execute(Runnable r) {
    KindTasks.execute(services, r);
  }

  private void schedule(Runnable r, long delayNanos) {
    KindTasks.schedule(services, r, delayNanos);
  }

  /** How often {@link #sweep} should run: half the idle timeout, between 1 s and 1 min. */
  static long sweepPeriodNanos(Duration idleTimeout) {
    long half = idleTimeout.toNanos() / 2;
    return Math.max(TimeUnit.SECONDS.toNanos(1), Math.min(TimeUnit.MINUTES.toNanos(1), half));
  }
}
