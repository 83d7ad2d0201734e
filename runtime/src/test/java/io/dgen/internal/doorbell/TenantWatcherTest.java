package io.dgen.internal.doorbell;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.apple.foundationdb.subspace.Subspace;
import io.dgen.backend.KeyValue;
import io.dgen.backend.memory.MemoryBackend;
import io.dgen.internal.keys.Buckets;
import io.dgen.internal.keys.TenantKeys;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The doorbell watcher alone, on the memory backend: a ring reaches the listeners of its wake id in
 * its bucket with its commit version, and nothing in other buckets; a watcher stalled past the trim
 * of the entries it had not read finds out and rings every listener of the bucket, so that no
 * wake-up is lost; a bucket nobody uses is dropped with its watch; an activation reaches the
 * bucket's holder.
 */
class TenantWatcherTest {

  private final MemoryBackend backend = MemoryBackend.create();
  private final Subspace tenant = backend.directory("tenant-watcher");
  private final TenantKeys keys = new TenantKeys(tenant, Buckets.of(4));
  private static final int B = 1;
  private final ExecutorService executor = Executors.newSingleThreadExecutor();
  private final ScheduledExecutorService scheduler = Executors.newSingleThreadScheduledExecutor();
  private final AtomicLong clock = new AtomicLong();
  private final List<TenantWatcher> watchers = new CopyOnWriteArrayList<>();

  /** Records what it was rung with. */
  private static final class Recorder implements WakeListener {
    final List<Long> rings = new CopyOnWriteArrayList<>();
    final AtomicInteger ringAlls = new AtomicInteger();

    @Override
    public void ring(long version) {
      rings.add(version);
    }

    @Override
    public void ringAll() {
      ringAlls.incrementAndGet();
    }
  }

  /** An executor that runs its tasks only when told to: a watcher on it is stalled. */
  private static final class Stalled implements Executor {
    final Queue<Runnable> tasks = new ConcurrentLinkedQueue<>();

    @Override
    public void execute(Runnable r) {
      tasks.add(r);
    }

    void runAll() {
      Runnable r;
      while ((r = tasks.poll()) != null) {
        r.run();
      }
    }
  }

  private TenantWatcher watcher(Executor on) {
    TenantWatcher w = new TenantWatcher(keys, backend, on, scheduler, clock::get, "test");
    watchers.add(w);
    return w;
  }

  @AfterEach
  void close() {
    watchers.forEach(TenantWatcher::close);
    executor.shutdownNow();
    scheduler.shutdownNow();
    backend.close();
  }

  /** Rings {@code wakeId} in bucket B in a transaction of its own; returns its commit version. */
  private long ring(TenantWatcher through, long wakeId) {
    return ring(through, B, wakeId);
  }

  private long ring(TenantWatcher through, int bucket, long wakeId) {
    byte[] stamp =
        backend
            .run(
                tx -> {
                  through.ring(tx, bucket, wakeId);
                  return tx.getVersionstamp();
                })
            .join();
    return ByteBuffer.wrap(stamp).getLong();
  }

  private List<KeyValue> log(TenantWatcher w) {
    Subspace log = w.keys().log(B);
    return backend.run(tx -> tx.getRange(log.range().begin, log.range().end));
  }

  @Test
  void ring_reachesTheListenersOfItsWakeId_withItsCommitVersion() {
    TenantWatcher w = watcher(executor);
    Recorder seven = new Recorder();
    Recorder eight = new Recorder();
    w.register(B, 7, seven);
    w.register(B, 8, eight);
    w.parked(B);
    // the first read takes the log's end, then rings everyone once: they may have looked earlier
    await().atMost(Duration.ofSeconds(10)).until(() -> seven.ringAlls.get() == 1);

    long version = ring(w, 7);

    await().atMost(Duration.ofSeconds(10)).until(() -> seven.rings.contains(version));
    assertThat(eight.rings).isEmpty();
  }

  @Test
  void watcherStalledPastATrim_ringsEveryListener() {
    Stalled stalled = new Stalled();
    TenantWatcher behind = watcher(stalled);
    Recorder slow = new Recorder();
    long first = ring(behind, 9); // the stalled watcher positions itself on this entry
    behind.register(B, 1, slow);
    stalled.runAll();
    assertThat(slow.ringAlls).hasValue(1);

    TenantWatcher ahead = watcher(executor);
    Recorder fast = new Recorder();
    ahead.register(B, 2, fast);
    ahead.parked(B); // it reads every ring at once
    await().atMost(Duration.ofSeconds(10)).until(() -> fast.ringAlls.get() == 1);
    for (int i = 0; i < 3; i++) {
      ring(ahead, 1);
    }
    long third = ring(ahead, 2);
    await().atMost(Duration.ofSeconds(10)).until(() -> fast.rings.contains(third));
    // A second later it samples its position (past the stalled watcher's): whether its first
    // sample was taken before or after it read the rings above depends on thread timing.
    clock.addAndGet(TenantWatcher.SAMPLE_INTERVAL_NANOS);
    long sampled = ring(ahead, 2);
    await().atMost(Duration.ofSeconds(10)).until(() -> fast.rings.contains(sampled));
    // Thirty seconds later (by the watchers' clock) the entries it had read then are trimmed.
    clock.addAndGet(TenantWatcher.TRIM_AGE_NANOS + TimeUnit.SECONDS.toNanos(1));
    long fourth = ring(ahead, 2);
    await().atMost(Duration.ofSeconds(10)).until(() -> fast.rings.contains(fourth));
    await()
        .atMost(Duration.ofSeconds(10))
        .until(() -> TenantKeys.isTrimmedHere(log(ahead).get(0).value()));
    assertThat(log(ahead))
        .as("entries left")
        .allSatisfy(kv -> assertThat(ahead.keys().commitVersion(B, kv.key())).isGreaterThan(first));

    // The stalled watcher wakes: the entry it had read last is gone, and with it what followed.
    behind.parked(B);
    stalled.runAll();

    assertThat(slow.ringAlls).hasValue(2);
    assertThat(fast.ringAlls).hasValue(1);
  }

  @Test
  void ring_staysInItsBucket() {
    TenantWatcher w = watcher(executor);
    Recorder here = new Recorder();
    Recorder there = new Recorder();
    w.register(B, 7, here);
    w.register(B + 1, 7, there); // the same wake id, another bucket
    w.parked(B);
    w.parked(B + 1);
    await().atMost(Duration.ofSeconds(10)).until(() -> there.ringAlls.get() == 1);

    long version = ring(w, B, 7);

    await().atMost(Duration.ofSeconds(10)).until(() -> here.rings.contains(version));
    assertThat(there.rings).isEmpty();
    assertThat(w.watches()).isEqualTo(2);
  }

  @Test
  void aBucketNobodyUses_isDroppedWithItsWatch_andMadeAgainOnUse() {
    TenantWatcher w = watcher(executor);
    Recorder r = new Recorder();
    w.register(B, 7, r);
    w.parked(B);
    await().atMost(Duration.ofSeconds(10)).until(() -> w.watches() == 1);

    w.unparked(B);
    w.unregister(B, 7, r);

    assertThat(w.bucketsInUse()).isZero();
    assertThat(w.watches()).isZero();
    Recorder again = new Recorder();
    w.register(B, 7, again);
    w.parked(B);
    await().atMost(Duration.ofSeconds(10)).until(() -> again.ringAlls.get() == 1);
    long version = ring(w, 7);
    await().atMost(Duration.ofSeconds(10)).until(() -> again.rings.contains(version));
  }

  @Test
  void anActivation_reachesTheBucketsHolder_andAPlainRingDoesNot() {
    TenantWatcher w = watcher(executor);
    List<com.apple.foundationdb.tuple.Tuple> activated = new CopyOnWriteArrayList<>();
    AtomicInteger rescans = new AtomicInteger();
    Activations holder =
        new Activations() {
          @Override
          public void activate(com.apple.foundationdb.tuple.Tuple tuid, long version) {
            activated.add(tuid);
          }

          @Override
          public void rescan() {
            rescans.incrementAndGet();
          }
        };
    w.hold(B, holder);
    await().atMost(Duration.ofSeconds(10)).until(() -> rescans.get() == 1); // positioned

    ring(w, 5); // a plain ring: nobody listens, nothing to activate
    com.apple.foundationdb.tuple.Tuple tuid = com.apple.foundationdb.tuple.Tuple.from("acct", 42L);
    backend.run(
        tx -> {
          keys.ringActivating(tx, B, 6, tuid.pack());
          return null;
        });

    await().atMost(Duration.ofSeconds(10)).until(() -> activated.contains(tuid));
    assertThat(activated).containsExactly(tuid);
    w.unhold(B, holder);
    assertThat(w.bucketsInUse()).isZero();
  }
}
