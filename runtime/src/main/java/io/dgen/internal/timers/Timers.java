package io.dgen.internal.timers;

import com.apple.foundationdb.tuple.Tuple;
import com.google.common.collect.MapMaker;
import io.dgen.backend.Transaction;
import io.dgen.internal.base.RuntimeServices;
import io.dgen.internal.codec.Chunks;
import io.dgen.internal.codec.Envelope;
import io.dgen.internal.commit.CommitRunner;
import io.dgen.internal.keys.ServerKeys;
import io.dgen.internal.keys.TenantKeys;
import io.dgen.internal.keys.TimerEntry;
import io.dgen.internal.keys.TimerSchedule;
import io.dgen.internal.queue.ServerQueue;
import java.nio.ByteBuffer;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;

/**
 * One server's durable timers: scheduling (from a {@code ServerRef}, an outbox or a callback),
 * cancelling, and deleting them all when the server is killed. Firing is the {@link
 * TimerScheduler}'s of the server's bucket, in every runtime that holds a lease in the bucket or
 * runs a started process in it.
 *
 * <p>A timer is two keys written together: its bucket's due-ordered index entry {@code FF (7, b,
 * dueMicros, uuid) -> (tuid, envelope)} (with its {@link TimerSchedule} first if it recurs: see
 * {@link TimerEntry}), read by the schedulers, and the server's own {@code (tuid.., "m", uuid) ->
 * dueMicros}, through which a cancel finds the index entry and a kill finds every timer of the
 * server. Scheduling also rings the bucket's doorbell under the bucket's timer wake id, which wakes
 * the schedulers of the bucket (no watch of their own). The timer id a user sees is the uuid in
 * base64url: opaque, and valid in every runtime.
 *
 * <p>A recurring timer ({@code castEvery}, {@code castCron}) keeps its id: the transaction that
 * fires it also moves its index entry to its next due time and updates its own key, so a cancel
 * finds it wherever it is.
 *
 * <p>The message is encoded once, when scheduled (type checked against the server's allow-list,
 * type index from its type table), and pushed as-is when the timer fires.
 *
 * <p>Threading: thread-safe (stateless but for a weak map of per-transaction counters).
 *
 * @param <M> the message type
 */
public final class Timers<M> {

  /** Per transaction attempt: how many timers it scheduled, for ids that a re-run repeats. */
  private static final ConcurrentMap<Transaction, AtomicInteger> SEQUENCES =
      new MapMaker().weakKeys().makeMap();

  private final ServerKeys keys;
  private final TenantKeys tenantKeys;
  private final ServerQueue<M> queue;
  private final CommitRunner commits;
  private final Clock clock;
  private final Runnable scheduled;
  private final Executor executor;
  private final ScheduledExecutorService scheduler;
  private final byte[] tuid;

  /**
   * The timers of server {@code tuid}, wired to its queue.
   *
   * @param scheduled tells this runtime's scheduler of the server's bucket, if it runs one, that a
   *     timer was just committed here
   */
  public static <M> Timers<M> create(
      RuntimeServices services,
      TenantKeys tenant,
      Tuple tuid,
      ServerKeys keys,
      ServerQueue<M> queue,
      CommitRunner commits,
      Runnable scheduled) {
    return new Timers<>(
        tuid,
        keys,
        tenant,
        queue,
        commits,
        services.clock(),
        scheduled,
        services.blocking(),
        services.scheduler());
  }

  /**
   * @param scheduled tells this runtime's scheduler that a timer was just committed here
   * @param executor runs the retries of a scheduling push: not the worker pool, which its waiting
   *     caller may occupy
   * @param scheduler bounds the scheduling and cancelling pushes by the operation timeout
   */
  private Timers(
      Tuple tuid,
      ServerKeys keys,
      TenantKeys tenantKeys,
      ServerQueue<M> queue,
      CommitRunner commits,
      Clock clock,
      Runnable scheduled,
      Executor executor,
      ScheduledExecutorService scheduler) {
    this.executor = executor;
    this.scheduler = scheduler;
    this.keys = keys;
    this.tenantKeys = tenantKeys;
    this.queue = queue;
    this.commits = commits;
    this.clock = clock;
    this.scheduled = scheduled;
    this.tuid = tuid.pack();
  }

  // ---------------------------------------------------------------- scheduling

  /** {@code ServerRef.castAfterAsync}: its own transaction. */
  public CompletableFuture<String> castAfter(M message, Duration delay) {
    Objects.requireNonNull(delay, "delay must not be null");
    return schedule("castAfter", message, TimerSchedule.micros(dueAfter(delay)), null);
  }

  /** {@code ServerRef.castAtAsync}: its own transaction. */
  public CompletableFuture<String> castAt(M message, Instant when) {
    Objects.requireNonNull(when, "when must not be null");
    return schedule("castAt", message, TimerSchedule.micros(when), null);
  }

  /** {@code ServerRef.castEveryAsync}: its own transaction. */
  public CompletableFuture<String> castEvery(M message, Duration period) {
    TimerSchedule every = TimerSchedule.every(period);
    return schedule("castEvery", message, every.first(nowMicros()), every);
  }

  /** {@code ServerRef.castCronAsync}: its own transaction. */
  public CompletableFuture<String> castCron(M message, String cron, ZoneId zone) {
    TimerSchedule schedule = TimerSchedule.cron(cron, zone);
    return schedule("castCron", message, schedule.first(nowMicros()), schedule);
  }

  private CompletableFuture<String> schedule(
      String operation, M message, long due, @Nullable TimerSchedule schedule) {
    byte[] value = value(message, schedule);
    UUID id = UUID.randomUUID();
    // Through the commit runner: a re-run after commit_unknown_result must not write the timer
    // again, since it may have fired in between.
    return commits
        .commitBounded( // bounded by the operation timeout, as a cast
            tx -> {
              var live = queue.requireServer(tx); // a timer of a killed server would never fire
              write(tx, due, id, value);
              return live;
            },
            operation,
            executor,
            scheduler)
        .thenApply(
            done -> {
              scheduled.run();
              return TimerEntry.format(id);
            });
  }

  /**
   * {@code Outbox.castAfter}: in the user's transaction. The id is derived from the run and the
   * timer's rank in the attempt, so a body re-run after its commit succeeded returns the same id
   * and, seeing the run's commit marker, writes nothing.
   */
  public String castAfter(Transaction tx, M message, Duration delay) {
    Objects.requireNonNull(tx, "transaction must not be null");
    Objects.requireNonNull(delay, "delay must not be null");
    long due = TimerSchedule.micros(dueAfter(delay));
    byte[] value = value(message, null);
    UUID id = idFor(tx);
    if (!queue.entry().alreadyCommitted(tx, keys)) {
      write(tx, due, id, value);
    }
    return TimerEntry.format(id);
  }

  /**
   * {@code TxContext.castAfter}: in a runtime transaction, whose commit runner replays rather than
   * re-runs a committed attempt.
   */
  public @SuppressWarnings("unchecked") String inCallback(
      Transaction tx, Object message, Duration delay) {
    Objects.requireNonNull(delay, "delay must not be null");
    return inCallback(tx, (M) message, TimerSchedule.micros(dueAfter(delay)), null);
  }

  /** {@code TxContext.castEvery}: in a runtime transaction, as {@link #inCallback}. */
  public @SuppressWarnings("unchecked") String inCallbackEvery(
      Transaction tx, Object message, Duration period) {
    TimerSchedule every = TimerSchedule.every(period);
    return inCallback(tx, (M) message, every.first(nowMicros()), every);
  }

  /** {@code TxContext.castCron}: in a runtime transaction, as {@link #inCallback}. */
  public @SuppressWarnings("unchecked") String inCallbackCron(
      Transaction tx, Object message, String cron, ZoneId zone) {
    TimerSchedule schedule = TimerSchedule.cron(cron, zone);
    return inCallback(tx, (M) message, schedule.first(nowMicros()), schedule);
  }

  private String inCallback(Transaction tx, M message, long due, @Nullable TimerSchedule schedule) {
    byte[] value = value(message, schedule); // the allow-list check refuses a foreign type
    UUID id = idFor(tx);
    write(tx, due, id, value);
    return TimerEntry.format(id);
  }

  private long nowMicros() {
    return TimerSchedule.micros(clock.instant());
  }

  private Instant dueAfter(Duration delay) {
    try {
      return clock.instant().plus(delay);
    } catch (ArithmeticException | java.time.DateTimeException e) {
      throw new IllegalArgumentException("delay out of range: " + delay, e);
    }
  }

  private byte[] value(M message, @Nullable TimerSchedule schedule) {
    byte[] value =
        new TimerEntry(schedule, tuid, queue.encode(Envelope.CAST, message, null)).encode();
    if (value.length > Chunks.MAX_VALUE) {
      throw new IllegalArgumentException(
          "a timer's message, schedule and server identity must fit in "
              + Chunks.MAX_VALUE
              + " bytes, were "
              + value.length);
    }
    return value;
  }

  private void write(Transaction tx, long due, UUID id, byte[] value) {
    int bucket = keys.bucket();
    tx.set(tenantKeys.timers(bucket).pack(Tuple.from(due, id)), value);
    tx.set(keys.timers().pack(Tuple.from(id)), Tuple.from(due).pack());
    tenantKeys.ring(tx, bucket, tenantKeys.timersWakeId(bucket)); // the bucket's schedulers look
  }

  private static UUID idFor(Transaction tx) {
    int n = SEQUENCES.computeIfAbsent(tx, k -> new AtomicInteger()).getAndIncrement();
    UUID run = tx.runId();
    return UUID.nameUUIDFromBytes(
        ByteBuffer.allocate(20)
            .putLong(run.getMostSignificantBits())
            .putLong(run.getLeastSignificantBits())
            .putInt(n)
            .array());
  }

  // ---------------------------------------------------------------- cancelling

  /** {@code ServerRef.cancelTimerAsync}: its own transaction, exactly once in effect. */
  public CompletableFuture<Boolean> cancel(String timerId) {
    TimerEntry.parse(timerId); // a malformed id is refused before any transaction
    return commits
        .commitBounded(
            tx -> keys.cancelTimerAsync(tx, tenantKeys, timerId, executor),
            "cancelTimer",
            executor,
            scheduler)
        .thenApply(Boolean.TRUE::equals);
  }

  /** {@code TxContext.cancelTimer}: in the callback's transaction. */
  public boolean inCallbackCancel(Transaction tx, String timerId) {
    return keys.cancelTimer(tx, tenantKeys, timerId);
  }
}
