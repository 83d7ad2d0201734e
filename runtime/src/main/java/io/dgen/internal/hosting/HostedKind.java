package io.dgen.internal.hosting;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.DGenServer;
import io.dgen.HostOptions;
import io.dgen.UndecodableDataException;
import io.dgen.backend.Futures;
import io.dgen.backend.KeyValue;
import io.dgen.internal.base.Lifecycle;
import io.dgen.internal.base.RuntimeServices;
import io.dgen.internal.behaviour.Init;
import io.dgen.internal.codec.Serde;
import io.dgen.internal.codec.StateTag;
import io.dgen.internal.commit.Fence;
import io.dgen.internal.doorbell.TenantWatcher;
import io.dgen.internal.keys.ServerKeys;
import io.dgen.internal.keys.StuckRecord;
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
import java.util.concurrent.RejectedExecutionException;
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

  /** Ready index entries read per transaction by a rescan. */
  private static final int RESCAN_CHUNK = 1_000;

  /** The longest wait between two loads of a server whose state does not decode. */
  private static final long STUCK_BACKOFF_MAX_NANOS = TimeUnit.MINUTES.toNanos(5);

  /** A loaded server, and what its eviction learned meanwhile. */
  private static final class Loaded<S, M> {
    final ServerProcess<S, M> process;
    volatile boolean evicting;
    volatile boolean activatedWhileEvicting;

    /**
     * Set before this kind stops the process itself (a hand-off, a lost bucket, an eviction, the
     * runtime closing): any other stop is the server's own, a deactivation ({@link #deactivated}).
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

  /**
   * Servers whose state did not decode when last loaded, with how many loads failed so: they are
   * loaded again after a growing backoff, or at once by an activation (a repair rings one).
   */
  private final Map<Tuple, Integer> stuck = new ConcurrentHashMap<>();

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
    // A missing migration of the state type is refused here, not when a server first loads.
    new StateTag(stateType.getRawClass(), services.serde().migrations());
  }

  /**
   * The message type of a kind: {@code declared} for one hosted by {@code io.dgen.Kind} (the
   * behaviour's own, with its type arguments, if it is that class), else the behaviour's.
   *
   * @throws IllegalArgumentException if the behaviour's message type does not accept {@code
   *     declared}, or there is neither
   */
  public static JavaType messageType(
      Serde serde, String kind, DGenServer<?, ?> sample, @Nullable Class<?> declared) {
    if (declared == null) {
      return serde.type(Init.typeArgument(sample, 1));
    }
    java.lang.reflect.Type own = Init.resolvedTypeArgument(sample, 1);
    if (own == null) {
      return serde.type(declared); // a behaviour generic in its message type takes the kind's
    }
    JavaType behaviours = serde.type(own);
    Class<?> raw = behaviours.getRawClass();
    if (raw == declared) {
      return behaviours;
    }
    if (!raw.isAssignableFrom(declared)) {
      throw new IllegalArgumentException(
          "kind "
              + kind
              + " has message type "
              + declared.getName()
              + ", which its behaviour "
              + sample.getClass().getName()
              + " does not accept (its message type is "
              + behaviours
              + ")");
    }
    return serde.type(declared);
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
        && !stuck.containsKey(tuid)
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
    Integer failures = stuck.get(tuid);
    if (failures == null) {
      load(tuid);
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
                load(tuid);
              }
            });
  }

  // ---------------------------------------------------------------- loading

  /**
   * Loads server {@code tuid} (of this kind) if this runtime holds its bucket and it is not loaded
   * yet, unless it waits out the backoff of an undecodable state; one being evicted loads again
   * once it is dropped.
   */
  void activate(Tuple tuid) {
    if (!stuck.containsKey(tuid)) {
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
                if (deactivated && cause != null && looksAt(tuid, cause)) {
                  stuck.putIfAbsent(tuid, 0); // before a load may replace it: see deactivated
                }
                loaded.remove(tuid, l);
                if (deactivated) {
                  deactivated(tuid, p, cause);
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
  private void deactivated(Tuple tuid, ServerProcess<S, M> stopped, @Nullable Throwable why) {
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
                schedule(
                    () -> deactivated(tuid, stopped, why),
                    services.backoffNanos(Integer.MAX_VALUE));
              } else if (Boolean.TRUE.equals(idle)) {
                stuck.remove(tuid);
              } else if (why == null) {
                execute(() -> activate(tuid)); // it has work: its next process runs it
              } else {
                // the record first: until it is durable, a ring cannot tell a repair (which
                // clears it) from late news, and is ignored
                markStuck(stopped, why).whenComplete((done, e) -> reloadStuck(tuid));
              }
            });
  }

  /** Whether a server that stopped for {@code why} is looked at here ({@link #deactivated}). */
  private boolean looksAt(Tuple tuid, @Nullable Throwable why) {
    return !(why instanceof Fence.Deposed)
        && holds(tenantKeys.buckets().of(tuid))
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
    schedule(
        () -> {
          if (stuck.containsKey(tuid)) {
            load(tuid);
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
  private CompletableFuture<@Nullable Void> markStuck(ServerProcess<S, M> stopped, Throwable why) {
    byte[] record =
        StuckRecord.encode(
            services.wallMillis(),
            placement.memberId(),
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

  @SuppressWarnings("unchecked")
  private static <S, M> Loaded<S, M>[] newArray() {
    return (Loaded<S, M>[]) new Loaded<?, ?>[1];
  }

  /**
   * Loads every server of this kind in the ready index of {@code bucket} (a bucket just taken, or
   * one whose activations may have been missed): snapshot reads, {@value #RESCAN_CHUNK} entries a
   * transaction, from {@code resumeAt} (null: the start).
   *
   * @return null once done (or the bucket is no longer held); if a read failed, the key to go on
   *     from (the hosting tries again after a backoff)
   */
  byte @Nullable [] rescan(int bucket, byte @Nullable [] resumeAt) {
    var space = tenantKeys.ready(bucket);
    byte[] from = resumeAt != null ? resumeAt : space.range().begin;
    while (holds(bucket)) {
      byte[] begin = from;
      List<KeyValue> rows;
      try {
        rows =
            services
                .backend()
                .run(tx -> tx.snapshot().getRange(begin, space.range().end, RESCAN_CHUNK, false));
      } catch (RuntimeException e) {
        log.warn(
            "reading the ready index of bucket {} failed; it is read again from there after a"
                + " backoff: {}",
            bucket,
            context,
            e);
        return begin;
      }
      for (KeyValue kv : rows) {
        Tuple tuid = space.unpack(kv.key());
        if (tuid.size() > 0 && kind.equals(tuid.get(0))) {
          activate(tuid);
        }
      }
      if (rows.size() < RESCAN_CHUNK) {
        return null;
      }
      from = io.dgen.backend.ByteKeys.keyAfter(rows.get(rows.size() - 1).key());
    }
    return null;
  }

  // ---------------------------------------------------------------- losing buckets

  /**
   * Stops the servers of {@code bucket} (a hand-off): completes once none has a batch in flight.
   */
  CompletableFuture<@Nullable Void> release(int bucket) {
    // whoever holds the bucket next loads its stuck servers once, as any ready server
    stuck.keySet().removeIf(tuid -> tenantKeys.buckets().of(tuid) == bucket);
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
              stuck.remove(tuid);
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
    try {
      services.executor().execute(r);
    } catch (RejectedExecutionException closing) {
      // the runtime is closing
    }
  }

  private void schedule(Runnable r, long delayNanos) {
    try {
      services.scheduler().schedule(() -> execute(r), delayNanos, TimeUnit.NANOSECONDS);
    } catch (RejectedExecutionException closing) {
      // the runtime is closing
    }
  }

  /** How often {@link #sweep} should run: half the idle timeout, between 1 s and 1 min. */
  static long sweepPeriodNanos(Duration idleTimeout) {
    long half = idleTimeout.toNanos() / 2;
    return Math.max(TimeUnit.SECONDS.toNanos(1), Math.min(TimeUnit.MINUTES.toNanos(1), half));
  }
}
