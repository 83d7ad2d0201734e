package io.dgen.internal.consume;

import io.dgen.backend.Futures;
import io.dgen.internal.base.BatchPermits;
import io.dgen.internal.base.Lifecycle;
import io.dgen.internal.base.RuntimeServices;
import io.dgen.internal.behaviour.CallbackInvoker;
import io.dgen.internal.commit.CommitRunner;
import io.dgen.internal.doorbell.TenantWatcher;
import io.dgen.internal.doorbell.WakeListener;
import io.dgen.internal.limits.ConcurrencyGate;
import io.dgen.internal.limits.RateLimiter;
import io.dgen.internal.lock.LockCoordinator;
import io.dgen.internal.lock.LockRuns;
import io.dgen.internal.observe.LogContext;
import io.dgen.internal.state.StateStore;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The consume loop of one process: running batches back to back (one at a time per process, each
 * holding one of the runtime's {@linkplain BatchPermits permits to be in flight}, none holding a
 * thread while it waits for the database), parking when the queue is drained or locked (no thread,
 * no watch: its bucket's doorbell rings it), backing off after failures and repeated cache misses,
 * retrying a failed batch up to its failing item, and handing a taken lock to {@code
 * handleLocked}'s threads. What a failure means is {@link ConsumeLoopFailures}'s to decide; the
 * permits of a rate or concurrency limit are {@link ConsumeLoopPermits}'s to take and give back.
 *
 * <p>Never touches keys itself: batches, dead letters and the lock coordinator do, through the
 * commit runner. Never runs two batches of its process at once.
 *
 * <p>No lost wake-up: a parked loop remembers the read version of its last batch, which saw every
 * push committed up to it; a later push rings the doorbell with its commit version, which wakes the
 * loop (a ring while a batch runs is kept, and looked at before parking).
 *
 * <p>Threading: {@link #running} says who owns the loop: false exactly while it is parked; whoever
 * sets it to true (a ring, a timer, the start) runs the next step, so the loop never runs
 * concurrently with itself. The failure count and the batch limit are touched only by the owner;
 * hand-offs between threads go through the executor, which orders them.
 *
 * <p>No step dies silently: every task the loop hands to a thread is {@linkplain #guarded guarded},
 * so that whatever it throws either retries the loop with backoff or, for a {@linkplain
 * Lifecycle#isFatal fatal} error, stops the process, whose termination then fails with it.
 *
 * @param <S> the state type
 * @param <M> the message type
 */
public final class ConsumeLoop<S, M> implements WakeListener {

  private static final Logger log = LoggerFactory.getLogger(ConsumeLoop.class);

  private static final int CACHE_MISS_BACKOFF_CAP_MS = 50;
  private static final long BATCH_SLICE_NANOS = TimeUnit.MILLISECONDS.toNanos(20);

  private final RuntimeServices services;
  private final ConsumeGroups groups;
  private final ConsumerParts<S, M> parts;
  private final CommitRunner commits;
  private final ConsumerBatch<S, M> batches;
  private final StateStore<S> states;
  private final LockCoordinator<S, M> locks;
  private final CallbackInvoker<S, M> invoker;
  private final Lifecycle lifecycle;
  private final TenantWatcher doorbell;
  private final int bucket;
  private final int consumeK;
  private final String context;

  private final AtomicBoolean running = new AtomicBoolean(true);
  private final CompletableFuture<@Nullable Void> quiet = new CompletableFuture<>();
  // When the loop parked on an empty queue (nanos), or Long.MIN_VALUE while it is not so parked.
  private volatile long idleSince = Long.MIN_VALUE;
  private final AtomicLong rungAt = new AtomicLong(Long.MIN_VALUE);
  private final AtomicBoolean rungAll = new AtomicBoolean();
  private volatile long seen = Long.MIN_VALUE;

  /** The expiry of the lock a pending timer unparks the loop at, or -1 with no timer pending. */
  private volatile long lockTimerFor = -1;

  private final Attempt attempt = new Attempt();
  private final ConsumeLoopPermits permits;
  private final ConsumeLoopFailures failures;
  // Whether the last batch ran right after a backoff for cache misses; touched by the owner.
  private boolean missBackoffJustEnded;
  // Whether the stopped process looked for a lock of its own left behind; touched by the owner.
  private boolean orphansLooked;
  // A hosted server's last batch that processed messages left it without state: each was refused
  // (its init declined), so the server was not created. Touched by the owner.
  private boolean uncreated;

  public ConsumeLoop(
      RuntimeServices services,
      ConsumeGroups groups,
      ConsumerParts<S, M> parts,
      TenantWatcher doorbell,
      int bucket,
      @Nullable RateLimiter rate,
      @Nullable ConcurrencyGate gate,
      String context) {
    this.services = services;
    this.groups = groups;
    this.parts = parts;
    this.commits = parts.commits();
    this.batches = parts.batches();
    this.states = parts.states();
    this.locks = parts.locks();
    this.invoker = parts.invoker();
    this.lifecycle = parts.lifecycle();
    this.doorbell = doorbell;
    this.bucket = bucket;
    this.consumeK = parts.consumeK();
    this.context = context;
    this.permits = new ConsumeLoopPermits(rate, gate, consumeK);
    this.failures =
        new ConsumeLoopFailures(
            services,
            parts,
            permits,
            attempt,
            context,
            this::drain,
            () -> execute(this::drain),
            nanos -> scheduleAfter(nanos, this::drain),
            this::guarded);
  }

  /** Starts consuming: the first batch looks at the queue as it is now. */
  public void start() {
    execute(this::drain);
  }

  /** Runs the queue to empty in the caller instead: for processes without this loop running. */
  public int drainInCaller(int maxFailures) {
    if (services.hooks().backgroundConsumers()) {
      throw new IllegalStateException(
          "drainInCaller needs DGen.Builder.backgroundConsumers(false)");
    }
    return new CallerDrain<>(parts, services::nanoTime).run(maxFailures);
  }

  /** The process stopped: a parked loop stays parked for good. */
  public void stopped() {
    if (running.compareAndSet(false, true)) {
      doorbell.unparked(bucket);
      quiet.complete(null);
    }
    // A loop waiting for a permit is owned, but runs nothing: it is quiet once it stops waiting.
    if (permits.cancel()) {
      quiet.complete(null);
    }
  }

  /**
   * Completes once the process stopped and no batch of it is in flight any more (a hosted server's
   * bucket is handed off only then, so that its last batch is not wasted).
   */
  public CompletableFuture<@Nullable Void> quiet() {
    return quiet;
  }

  /**
   * Since when (on the runtime's nano clock) the loop has been parked on an empty queue, or {@link
   * Long#MIN_VALUE} if it is not (it runs, waits for a lock, or backs off).
   */
  public long idleSince() {
    return idleSince;
  }

  @Override
  public void ring(long version) {
    rungAt.accumulateAndGet(version, Math::max);
    if (version > seen) {
      unpark();
    }
  }

  @Override
  public void ringAll() {
    rungAll.set(true);
    unpark();
  }

  private void unpark() {
    if (lifecycle.isAlive() && running.compareAndSet(false, true)) {
      idleSince = Long.MIN_VALUE;
      doorbell.unparked(bucket);
      execute(this::drain);
    }
  }

  /**
   * Parks after a batch that read the queue at {@code readVersion}: a ring of a later commit, or
   * (with a lock that expires) a timer, unparks it.
   */
  private void park(long readVersion, long lockExpiresAt) {
    seen = readVersion;
    if (lockExpiresAt >= 0 && lockExpiresAt != lockTimerFor) {
      // One timer per lock met, however many pushes wake the loop while the lock is held.
      long delayMs = Math.max(0, lockExpiresAt - services.wallMillis()) + 1;
      lockTimerFor = lockExpiresAt;
      scheduleAfter(
          TimeUnit.MILLISECONDS.toNanos(delayMs),
          () -> {
            lockTimerFor = -1;
            unpark();
          });
    }
    doorbell.parked(bucket);
    running.set(false);
    // A ring that came while the batch ran, or while parking, is looked at now.
    if (rungAll.get() || rungAt.get() > readVersion) {
      unpark();
    }
    if (!lifecycle.isAlive()) {
      stopped();
    }
  }

  private void execute(Runnable step) {
    try {
      services.executor().execute(guarded(step));
    } catch (RejectedExecutionException e) {
      // the runtime is closing
    }
  }

  /**
   * {@code step} as a task that cannot end the loop silently: a throwable it lets escape (a bug, or
   * an error met outside user code) retries the loop with backoff, and a fatal one stops the
   * process.
   */
  private Runnable guarded(Runnable step) {
    return () -> {
      try {
        step.run();
      } catch (Throwable t) {
        if (Lifecycle.isFatal(t)) {
          failures.stopFatally(t);
        } else {
          failures.retryLater("a step of the consume loop failed unexpectedly", t);
        }
      }
    };
  }

  private void scheduleAfter(long nanos, Runnable step) {
    try {
      services.scheduler().schedule(() -> execute(step), nanos, TimeUnit.NANOSECONDS);
    } catch (RejectedExecutionException e) {
      // the runtime is closing
    }
  }

  private void drain() {
    run(services.nanoTime() + BATCH_SLICE_NANOS, false);
  }

  /**
   * Runs batches back to back in this thread while each completes at once; returns when one is in
   * flight (its completion continues the loop on the executor), or the loop parked, backs off, or
   * stopped. After a time slice it yields the thread to other processes' loops.
   */
  private void run(long sliceEnd, boolean holdsPermit) {
    while (lifecycle.isAlive()) {
      if (!holdsPermit && !permits.takeRatePermits(this::drain)) {
        return; // the limiter runs the loop again with permits
      }
      if (!holdsPermit && !services.permits().tryAcquire()) {
        services
            .permits()
            .enqueue(guarded(() -> run(services.nanoTime() + BATCH_SLICE_NANOS, true)));
        return;
      }
      holdsPermit = false;
      CompletableFuture<@Nullable Batch<S, M>> batch = startBatch();
      if (!batch.isDone()) {
        batch.whenComplete(
            (b, err) -> {
              services.permits().release();
              execute(
                  () -> {
                    if (afterBatch(b, err)) {
                      drain();
                    }
                  });
            });
        return;
      }
      services.permits().release();
      Batch<S, M> b = null;
      Throwable err = null;
      try {
        b = batch.join();
      } catch (RuntimeException e) {
        err = e;
      }
      if (!afterBatch(b, err)) {
        return;
      }
      if (services.nanoTime() - sliceEnd > 0) {
        execute(this::drain); // let other servers' batches run, then continue
        return;
      }
    }
    if (holdsPermit) {
      services.permits().release();
    }
    permits.giveBackRatePermits(0);
    // woken for a free permit of the concurrency limit, but stopped before its batch: the next
    // waiter of this runtime may take it (with nothing armed, none would be woken for it)
    permits.passGate();
    if (!orphansLooked && locks.tookAny()) {
      handOver(this::lookForOrphan);
      return; // its end runs this again
    }
    quiet.complete(null); // stopped, with no batch in flight
  }

  /**
   * The process stopped with no batch in flight, after some of its batches took the lock: a lock
   * one of them committed without learning so (an outcome left unknown, its retry cut short by the
   * stop) is this process's to run, as its next batch would have. Left alone it would block the
   * server for as long as this runtime lives: no batch of another process recognises it as its own,
   * and a hosted server's new holder busts only the locks of runtimes that are gone.
   */
  private LockRuns.Run lookForOrphan() {
    LockRuns.Held<M> orphan = locks.orphan();
    orphansLooked = true;
    return orphan == null ? LockRuns.Run.NOTHING : locks.runLocked(orphan, null);
  }

  private CompletableFuture<@Nullable Batch<S, M>> startBatch() {
    rungAll.set(false); // a ring-all before this batch is answered by it
    int limit = Math.min(failures.limit(consumeK), permits.rateCap());
    long start = services.nanoTime();
    try {
      // At K = 1 the batch may share its transaction with other servers' (ConsumeGroups).
      return (consumeK == 1 && limit == 1
              ? groups.run(batches, attempt, commits, () -> alone(limit))
              : alone(limit))
          .whenComplete((b, err) -> Meters.batch(invoker.meters(), b, services.nanoTime() - start));
    } catch (Throwable e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /** The next batch in a transaction of its own. */
  private CompletableFuture<Batch<S, M>> alone(int limit) {
    return commits.commitAsync(
        tx -> batches.run(tx, limit, services.executor(), attempt),
        (tx, prior) -> prior,
        services.executor());
  }

  /**
   * Acts on a batch's outcome. Returns true if the next batch should run at once; otherwise the
   * loop parked, waits for a timer, hands over to another thread, or stopped.
   */
  private boolean afterBatch(@Nullable Batch<S, M> batch, @Nullable Throwable err) {
    permits.giveBackRatePermits(err == null && batch != null ? batch.processed() : 0);
    permits.passGate(); // if it took no permit, the next waiter may
    if (err != null || batch == null) {
      failures.onFailure(Futures.unwrap(Objects.requireNonNull(err)));
      return false;
    }
    if (batch.busted()) {
      return true;
    }
    if (batch.lockWait()) {
      park(batch.readVersion(), batch.lockExpiresAt());
      return false;
    }
    if (batch.idle()) {
      failures.idle();
      if (uncreated) {
        return deactivateUncreated();
      }
      idleSince = services.nanoTime();
      park(batch.readVersion(), -1);
      return false;
    }
    failures.succeeded(batch.processed());
    if (!batch.deliver(invoker, lifecycle)) {
      return false; // the batch stopped the process
    }
    if (batch.processed() > 0) {
      uncreated = batch.state() == null; // only a hosted server's messages may all be refused
    }
    LockRuns.Held<M> lock = batch.lock();
    if (lock != null) {
      // the loop stays owned (not parked) until handleLocked's run has ended
      S state = batch.state(); // null for a lock of this process found by a later batch
      handOver(() -> locks.runLocked(lock, state));
      return false;
    }
    // Several consumers of one server: each batch that finds the cache stale (another consumer
    // wrote since) backs off, so that one consumer runs hot on its cache. Right after a backoff the
    // next batch runs at once, whatever it found: the backoff let others write, so the first batch
    // after it misses, and the second tells whether another consumer is active now. Backing off
    // after every miss let consumers that took turns miss forever, each after the others' writes:
    // four consumers of one server at K = 1 then applied 80 messages a second, 50 ms apiece.
    int misses = states.missStreak();
    if (misses >= 3 && !missBackoffJustEnded) {
      missBackoffJustEnded = true;
      scheduleAfter(
          TimeUnit.MILLISECONDS.toNanos(
              Math.min(CACHE_MISS_BACKOFF_CAP_MS, 1L << Math.min(misses - 3, 6))),
          this::drain);
      return false;
    }
    missBackoffJustEnded = false;
    if (batch.drained()) {
      if (uncreated) {
        return deactivateUncreated();
      }
      // Nothing was left as of the batch's read: a later push rings; no empty batch to find out.
      idleSince = services.nanoTime();
      park(batch.readVersion(), -1);
      return false;
    }
    return true;
  }

  /**
   * A hosted server refused every message it got until its queue was empty ({@code init} declined
   * to create it): nothing of it is stored, and no process of it stays loaded. It is deactivated as
   * after a {@code Result.stop}; its next message loads it again, and runs {@code init} again.
   */
  private boolean deactivateUncreated() {
    lifecycle.stopIfAsked("no message created the server: each was refused");
    execute(this::drain); // ends the loop: quiet
    return false;
  }

  /**
   * Hands a step of a lock this process holds ({@code handleLocked} and its commit, or a try of a
   * commit whose outcome was not learned) to a thread of its own; with no thread to be had now,
   * tries again after a backoff. The lock is this process's until the run has ended, so it keeps
   * trying for as long as the runtime lives: also when the process was stopped since its batch
   * committed the lock (a hand-off, an eviction racing a push, a lost bucket), as nobody else runs
   * or releases it while this runtime lives. The loop stays owned until the run has ended, so a
   * hand-off waiting for this process to be quiet waits for it.
   */
  private void handOver(Supplier<LockRuns.Run> step) {
    try {
      services.blocking().execute(guarded(() -> afterLocked(step.get())));
    } catch (RejectedExecutionException e) {
      long delay = failures.countFailure();
      log.warn("no thread for handleLocked; trying again in a moment: {}", context, e);
      scheduleAfter(delay, () -> handOver(step));
    }
  }

  private void afterLocked(LockRuns.Run run) {
    switch (run.ending()) {
      case RELEASED, FENCED -> {
        // A fenced holder's result was refused and reported; one slow job must not take this
        // consumer out of service.
        failures.reset();
        execute(this::drain);
      }
      case FAILED -> {
        if (run.deadLettered()) {
          failures.reset();
          execute(this::drain);
        } else {
          failures.retryLater(
              "handleLocked failed; the lock is released and its message re-queued, its failure"
                  + " counted",
              Objects.requireNonNull(run.cause()));
        }
      }
      case STOPPED -> execute(this::drain); // the process stopped itself: the loop ends, quiet
      case UNKNOWN -> {
        // The lock may still be held by this process: nothing else of this server can run
        // before its holder has learned how its commit or release ended.
        long delay = failures.countFailure();
        try (LogContext.Scope mdc = invoker.logs().open(null)) {
          log.warn(
              "handleLocked's commit or release did not learn its outcome; the lock stays with"
                  + " this process, which tries again in {} ms: {} failures={}",
              TimeUnit.NANOSECONDS.toMillis(delay),
              context,
              failures.count(),
              run.cause());
        }
        LockRuns.Pending<?, ?> pending = Objects.requireNonNull(run.pending());
        scheduleAfter(delay, () -> handOver(() -> locks.resume(pending)));
      }
    }
  }
}
