package io.dgen.internal.hosting;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.internal.base.RuntimeServices;
import io.dgen.internal.doorbell.Activations;
import io.dgen.internal.keys.Buckets;
import io.dgen.internal.tenant.TenantRuntime;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * What this runtime hosts in one tenant ({@code DGen.host}): its {@link Placement} (membership and
 * leases), the {@link HostedKind}s, and for every bucket it holds a lease in, the bucket's doorbell
 * held with an {@link Activations} that loads the servers becoming ready there, and the bucket's
 * timer scheduler.
 *
 * <p>A bucket may be held for several kinds: it is held on the doorbell, and its timers fired,
 * while any of them holds it.
 *
 * <p>Threading: thread-safe. The placement calls the {@link Placement.Holder} methods on its own
 * thread; activations come from the doorbell's cycles on the executor. Rescans of ready indexes,
 * which wait for their reads, run on a few threads of the blocking pool, never on a worker.
 */
public final class Hosting implements Placement.Holder {

  /** A held bucket: which kinds hold it, and its activations on the doorbell. */
  private final class Held implements Activations {
    final int bucket;
    final Set<String> kinds = new HashSet<>();

    Held(int bucket) {
      this.bucket = bucket;
    }

    @Override
    public void activate(Tuple tuid, long version) {
      if (tuid.size() > 0 && tuid.get(0) instanceof String kind) {
        HostedKind<?, ?> k = hosted.get(kind);
        if (k != null) {
          k.activated(tuid);
        }
      }
    }

    @Override
    public void rescan() {
      List<String> now;
      synchronized (this) {
        now = new ArrayList<>(kinds);
      }
      for (String kind : now) {
        HostedKind<?, ?> k = hosted.get(kind);
        if (k != null) {
          queueRescan(k, bucket);
        }
      }
    }
  }

  private final RuntimeServices services;
  private final TenantRuntime runtime;
  private final Placement placement;
  private final Map<String, HostedKind<?, ?>> hosted = new ConcurrentHashMap<>();
  private final Map<Integer, Held> held = new ConcurrentHashMap<>();
  private final List<ScheduledFuture<?>> sweeps = new ArrayList<>();
  private final java.util.Queue<Rescan> rescans =
      new java.util.concurrent.ConcurrentLinkedQueue<>();
  private final Set<Rescan> pendingRescans = ConcurrentHashMap.newKeySet();
  private final Map<Rescan, Resume> resumes = new ConcurrentHashMap<>();
  private final java.util.concurrent.atomic.AtomicInteger rescanning =
      new java.util.concurrent.atomic.AtomicInteger();

  /** How many rescans may wait for their reads at once. */
  private static final int RESCAN_THREADS = 8;

  public Hosting(
      RuntimeServices services,
      TenantRuntime runtime,
      UUID memberId,
      Duration lease,
      Executor placementThread,
      ScheduledExecutorService scheduler) {
    this.services = services;
    this.runtime = runtime;
    this.placement =
        new Placement(
            services.backend(),
            runtime.keys(),
            runtime.keys().buckets(),
            memberId,
            lease,
            services::nanoTime,
            services.wallMillis(),
            this,
            runtime.context());
    placement.start(placementThread, scheduler);
  }

  TenantRuntime runtime() {
    return runtime;
  }

  public Placement placement() {
    return placement;
  }

  Buckets buckets() {
    return runtime.keys().buckets();
  }

  /**
   * Hosts {@code kind}: completes its type table, joins the placement for it, and sweeps its idle
   * servers. In a runtime without background consumers, returns once a placement round has run with
   * the kind (which takes every bucket when no other runtime hosts it).
   *
   * @throws IllegalStateException if this runtime hosts the kind in this tenant already
   */
  public void host(HostedKind<?, ?> kind) {
    if (hosted.putIfAbsent(kind.kind(), kind) != null) {
      throw new IllegalStateException(
          "this runtime hosts kind " + kind.kind() + " in " + runtime.context() + " already");
    }
    kind.completeTypes();
    if (!kind.options().holdsBuckets()) {
      return; // its refs run calls inline; it never takes a lease, so it never loads a server
    }
    placement.host(kind.kind());
    if (!services.hooks().backgroundConsumers()) {
      // The test kit drains hosted servers in its own thread, in the buckets this runtime holds:
      // a runtime alone in its tenant holds them all once this round has run.
      placement.roundNow().join();
    }
    services
        .hooks()
        .metrics()
        .hosted(
            runtime.tenantPath(),
            kind.kind(),
            () -> placement.held(kind.kind()),
            kind::loadedCount);
    long period = HostedKind.sweepPeriodNanos(kind.options().idleTimeout());
    synchronized (sweeps) {
      sweeps.add(
          services
              .scheduler()
              .scheduleWithFixedDelay(
                  () -> execute(kind::sweep), period, period, TimeUnit.NANOSECONDS));
      Expiry expiry = kind.expiry();
      if (expiry != null) {
        // Collections read and write in transactions of their own, waiting for each: off the
        // worker pool. One runs at a time (a slow one delays the next).
        long every = Expiry.collectPeriodNanos(expiry.idle());
        sweeps.add(
            services
                .scheduler()
                .scheduleWithFixedDelay(
                    () -> execute(services.blocking(), expiry::collect),
                    every,
                    every,
                    TimeUnit.NANOSECONDS));
      }
    }
  }

  /**
   * The clock may have jumped ahead (a test's manual clock): collects the expired servers of the
   * buckets held here, in the caller's thread.
   */
  public void clockAdvanced() {
    for (HostedKind<?, ?> k : hosted.values()) {
      Expiry expiry = k.expiry();
      if (expiry != null && k.options().holdsBuckets()) {
        expiry.collect();
      }
    }
  }

  /** The hosted kind {@code kind}, if this runtime hosts it in this tenant. */
  public @Nullable HostedKind<?, ?> kind(String kind) {
    return hosted.get(kind);
  }

  // ---------------------------------------------------------------- the placement's holder

  @Override
  public void acquired(String kind, int bucket, long epoch) {
    HostedKind<?, ?> k = hosted.get(kind);
    Held h = held.computeIfAbsent(bucket, Held::new);
    boolean first;
    synchronized (h) {
      first = h.kinds.isEmpty();
      h.kinds.add(kind);
    }
    if (first) {
      runtime.retainTimers(bucket);
      runtime.doorbell().hold(bucket, h); // its first cycle rescans
    }
    if (k != null) {
      queueRescan(k, bucket); // the bucket may have been watched already
    }
  }

  @Override
  public CompletableFuture<@Nullable Void> releasing(String kind, int bucket) {
    HostedKind<?, ?> k = hosted.get(kind);
    return k == null ? CompletableFuture.completedFuture(null) : k.release(bucket);
  }

  @Override
  public void lost(String kind, int bucket) {
    HostedKind<?, ?> k = hosted.get(kind);
    if (k != null) {
      k.drop(bucket);
    }
    Held h = held.get(bucket);
    if (h == null) {
      return;
    }
    boolean last;
    synchronized (h) {
      last = h.kinds.remove(kind) && h.kinds.isEmpty();
    }
    if (last) {
      held.remove(bucket, h);
      runtime.doorbell().unhold(bucket, h);
      runtime.releaseTimers(bucket);
    }
  }

  private void execute(Runnable r) {
    execute(services.executor(), r);
  }

  /**
   * Queues a rescan of a bucket's ready index (once, however often asked before it runs), from the
   * start. Rescans run on at most {@value #RESCAN_THREADS} threads of the pool for blocking work:
   * each waits for its reads, and taking the buckets of a tenant starts one per bucket (1,024 by
   * default). On the worker pool (as many threads as cores) they held every worker for minutes at a
   * start or a failover, longer when a cluster recovery stalled their reads, and every batch, reply
   * and call of this runtime waited, started servers' too. Several threads, not one: a server with
   * work in a bucket just taken waits for its bucket's rescan.
   */
  private void queueRescan(HostedKind<?, ?> kind, int bucket) {
    Rescan r = new Rescan(kind, bucket);
    synchronized (rescans) {
      resumes.remove(r); // from the start: activations may have been missed anywhere
      if (!pendingRescans.add(r)) {
        return;
      }
      rescans.add(r);
    }
    drainRescans();
  }

  /**
   * A rescan's read failed (a cluster recovery, a transaction timeout, an I/O error): it goes on
   * from the chunk that failed after a backoff, for as long as the bucket is held. Without it the
   * servers that were ready when the bucket was taken, and get no activation later, would wait
   * until the bucket moves again.
   */
  private void retryRescan(Rescan r, byte[] from, int failures) {
    long delay = services.backoffNanos(failures);
    try {
      services
          .scheduler()
          .schedule(
              () -> {
                if (!r.kind().holds(r.bucket())) {
                  return; // the next holder rescans it
                }
                synchronized (rescans) {
                  if (!pendingRescans.add(r)) {
                    return; // one from the start is queued already
                  }
                  resumes.put(r, new Resume(from, failures));
                  rescans.add(r);
                }
                drainRescans();
              },
              delay,
              TimeUnit.NANOSECONDS);
    } catch (RejectedExecutionException closing) {
      // the runtime is closing
    }
  }

  private void drainRescans() {
    if (rescanning.incrementAndGet() > RESCAN_THREADS) {
      rescanning.decrementAndGet();
      return;
    }
    try {
      services.blocking().execute(this::runRescans);
    } catch (RejectedExecutionException saturated) {
      // The pool is full (a cluster that stopped answering holds its threads) or the runtime
      // closes: the rescans stay queued and are tried again after a backoff. The slot is given
      // back, or eight refusals would end rescans in this tenant for good.
      rescanning.decrementAndGet();
      try {
        services
            .scheduler()
            .schedule(
                this::drainRescans, services.backoffNanos(Integer.MAX_VALUE), TimeUnit.NANOSECONDS);
      } catch (RejectedExecutionException closing) {
        // the runtime is closing
      }
    }
  }

  private void runRescans() {
    try {
      for (Rescan r = rescans.poll(); r != null; r = rescans.poll()) {
        Resume resume;
        synchronized (rescans) {
          pendingRescans.remove(r); // a ring from now on queues it again
          resume = resumes.remove(r);
        }
        byte[] failedAt = r.kind().rescan(r.bucket(), resume == null ? null : resume.from());
        if (failedAt != null) {
          retryRescan(r, failedAt, resume == null ? 1 : resume.failures() + 1);
        }
      }
    } finally {
      rescanning.decrementAndGet();
      if (!rescans.isEmpty()) {
        drainRescans();
      }
    }
  }

  private record Rescan(HostedKind<?, ?> kind, int bucket) {}

  /** Where a failed rescan goes on, and how often it failed in a row. */
  private record Resume(byte[] from, int failures) {}

  private static void execute(Executor executor, Runnable r) {
    try {
      executor.execute(r);
    } catch (RejectedExecutionException closing) {
      // the runtime is closing
    }
  }

  /** Leaves the placement (leases released, member record deleted) and stops the servers. */
  public void close() {
    synchronized (sweeps) {
      sweeps.forEach(s -> s.cancel(false));
    }
    placement.close();
    hosted.values().forEach(HostedKind::close);
  }
}
