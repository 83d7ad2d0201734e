package io.dgen.internal.tenant;

import com.apple.foundationdb.subspace.Subspace;
import io.dgen.backend.Backend;
import io.dgen.internal.doorbell.TenantWatcher;
import io.dgen.internal.keys.Buckets;
import io.dgen.internal.keys.TenantKeys;
import io.dgen.internal.queue.KindTypes;
import io.dgen.internal.timers.TimerScheduler;
import java.time.Clock;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.LongSupplier;

/**
 * What one runtime runs for one tenant: the tenant's doorbells ({@link TenantWatcher}, one watch
 * per bucket in use) and a {@link TimerScheduler} per bucket this runtime fires timers in, each
 * kept while something here uses it (a started process in the bucket, a lease on it) and dropped
 * with its last user.
 *
 * <p>Never runs servers. Threading: thread-safe.
 */
public final class TenantRuntime {

  /** A timer scheduler and how many users it has. */
  private static final class Counted {
    final TimerScheduler scheduler;
    int users;

    Counted(TimerScheduler scheduler) {
      this.scheduler = scheduler;
    }
  }

  private final Subspace subspace;
  private final TenantKeys keys;
  private final TenantWatcher doorbell;
  private final Backend backend;
  private final Executor executor;
  private final ScheduledExecutorService scheduler;
  private final Clock clock;
  private final String context;
  private final String tenantPath;
  private final Map<Integer, Counted> timers = new ConcurrentHashMap<>();
  private final Map<String, KindTypes> kindTypes = new ConcurrentHashMap<>();
  private final AtomicBoolean migrated = new AtomicBoolean();

  public TenantRuntime(
      Subspace subspace,
      Buckets buckets,
      Backend backend,
      Executor executor,
      ScheduledExecutorService scheduler,
      LongSupplier nanoTime,
      Clock clock,
      String tenantPath) {
    this.subspace = subspace;
    this.tenantPath = tenantPath;
    String context = "tenant=" + tenantPath;
    this.keys = new TenantKeys(subspace, buckets);
    this.backend = backend;
    this.executor = executor;
    this.scheduler = scheduler;
    this.clock = clock;
    this.context = context;
    this.doorbell = new TenantWatcher(keys, backend, executor, scheduler, nanoTime, context);
  }

  public TenantKeys keys() {
    return keys;
  }

  Subspace subspace() {
    return subspace;
  }

  /** The tenant, for messages. */
  public String context() {
    return context;
  }

  /** The tenant's path, as the metrics tag it. */
  public String tenantPath() {
    return tenantPath;
  }

  /**
   * The type table of {@code kind} as a runtime that does not host it knows it (an open registry),
   * made on first use; one that hosts it uses the hosted kind's.
   */
  public KindTypes kindTypes(String kind, java.util.function.Supplier<KindTypes> make) {
    return kindTypes.computeIfAbsent(kind, k -> make.get());
  }

  /** Wakes the timer scheduler of {@code bucket}, if this runtime runs one. */
  public void wakeTimers(int bucket) {
    Counted c = timers.get(bucket);
    if (c != null) {
      c.scheduler.wake();
    }
  }

  /** The tenant's doorbells in this runtime. */
  public TenantWatcher doorbell() {
    return doorbell;
  }

  /**
   * The timer scheduler of {@code bucket}, made and started for its first user; the caller releases
   * it with {@link #releaseTimers}. The first one of the tenant first moves the timers of earlier
   * versions into their buckets.
   */
  public TimerScheduler retainTimers(int bucket) {
    if (migrated.compareAndSet(false, true)) {
      TimerScheduler.migrateLegacy(backend, subspace, keys);
    }
    Counted c =
        timers.compute(
            bucket,
            (b, old) -> {
              Counted n =
                  old != null
                      ? old
                      : new Counted(
                          new TimerScheduler(
                              subspace, b, doorbell, backend, executor, scheduler, clock, context));
              n.users++;
              if (old == null) {
                n.scheduler.start();
              }
              return n;
            });
    return c.scheduler;
  }

  /** One user of {@code bucket}'s timer scheduler left; the last one stops it. */
  public void releaseTimers(int bucket) {
    timers.computeIfPresent(
        bucket,
        (b, c) -> {
          if (--c.users > 0) {
            return c;
          }
          c.scheduler.close();
          return null;
        });
  }

  /**
   * The clock may have jumped ahead (a test's manual clock): the timers now due in this runtime's
   * buckets fire in the caller's thread, and every scheduler re-arms its sleep.
   */
  public void clockAdvanced() {
    for (Counted c : timers.values()) {
      c.scheduler.fireDue();
      c.scheduler.wake(); // re-arms its sleep for the next due time
    }
  }

  /** The watches this runtime holds for the tenant (for the metrics). */
  public int watches() {
    return doorbell.watches();
  }

  /**
   * Stops the schedulers and the doorbells (after the hosting left the placement): waiting calls
   * fail, nothing rings any more.
   */
  public void close() {
    for (Counted c : timers.values()) {
      c.scheduler.close();
    }
    timers.clear();
    doorbell.close();
  }
}
