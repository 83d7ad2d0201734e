package io.dgen.internal.commit;

import io.dgen.backend.Backend;
import io.dgen.backend.BackendException;
import io.dgen.backend.Futures;
import io.dgen.backend.Transaction;
import io.dgen.internal.base.Async;
import io.dgen.internal.base.OperationTimeouts;
import io.dgen.internal.codec.StoredState;
import io.dgen.internal.keys.ServerKeys;
import io.dgen.internal.keys.TrackingTransaction;
import java.time.Duration;
import java.util.Collection;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs one server's writing transactions exactly once in effect: owns the run's commit marker, the
 * replay of an attempt that turned out to commit after {@code commit_unknown_result (1021)}, the
 * sweep of old markers (from any writing transaction, at most once a minute per process), and the
 * {@link TrackingTransaction} every runtime body writes through. The markers' slots, the markers of
 * runs that ended unresolved, the sweep's pace and the markers' encoding are {@link
 * CommitMarkers}'.
 *
 * <p>Never decides what a transaction writes and never runs callbacks (bodies do); never caches
 * state (it tells its {@link Observer} what was committed).
 */
public final class CommitRunner {

  private static final Logger log = LoggerFactory.getLogger(CommitRunner.class);

  /** A transaction body; it may run more than once (one attempt per retry). */
  public interface Body<T> {
    @Nullable T apply(Transaction tx);
  }

  /**
   * A transaction body that starts its reads and completes once it has done its work; it may run
   * more than once (one attempt per retry).
   */
  public interface AsyncBody<T> {
    CompletableFuture<@Nullable T> apply(Transaction tx);
  }

  /** What a retried attempt returns when an earlier attempt of its run turned out to commit. */
  public interface Replay<T> {
    @Nullable T apply(Transaction tx, @Nullable T previous);
  }

  /**
   * A body's value that may carry the state it wrote: the commit's versionstamp is then waited for.
   */
  public interface WritesState {
    @Nullable StoredState written();
  }

  /** Learns what became of state writes (the state cache listens). */
  public interface Observer {
    /** A body wrote {@code written} and its commit's versionstamp is {@code stamp}. */
    void stateCommitted(StoredState written, byte[] stamp);

    /** A run replayed an earlier attempt: whatever it wrote, its stamp is not known here. */
    void replayed();
  }

  /**
   * One attempt's outcome: the body's value, its stamp future if it wrote the state, and whether it
   * replayed an earlier attempt that committed.
   */
  private record Attempt<T>(
      @Nullable T value,
      @Nullable StoredState written,
      @Nullable CompletableFuture<byte[]> stamp,
      boolean replayed) {}

  /**
   * How long a run may keep retrying: well under {@link CommitMarkers#MARKER_TTL}, so that every
   * attempt looks for its run's marker while the marker is certainly still there.
   */
  static final Duration RUN_LIMIT = Duration.ofMinutes(1);

  private final Backend backend;
  private final Observer observer;
  private final LongSupplier nanoTime;
  private final OperationTimeouts operations;
  private final String context;
  private final CommitMarkers markers;

  public CommitRunner(
      Backend backend,
      ServerKeys keys,
      Observer observer,
      LongSupplier nanoTime,
      OperationTimeouts operations,
      String context) {
    this.backend = backend;
    this.observer = observer;
    this.nanoTime = nanoTime;
    this.operations = operations;
    this.context = context;
    this.markers = new CommitMarkers(keys, nanoTime);
  }

  /**
   * Runs a writing body that does not block (it only writes, or starts its reads asynchronously)
   * exactly once in effect, bounded by the {@linkplain OperationTimeouts operation timeout}: a
   * user's push, or any operation of a {@code ServerRef}'s non-blocking forms. The first attempt
   * runs in this thread, retries (and steps whose reads were not ready) on {@code executor}, which
   * must not be the worker pool: the caller may be one of its threads (an action that casts), and
   * would wait for itself if it then blocks on the future.
   *
   * @return a future of the committing attempt's value, failed with {@link
   *     io.dgen.OperationTimeoutException} once the timeout passed (no further attempt starts)
   */
  public <T> CompletableFuture<@Nullable T> commitBounded(
      AsyncBody<T> body, String operation, Executor executor, ScheduledExecutorService scheduler) {
    return bounded(commitAsync(body, (tx, previous) -> previous, executor), scheduler, operation);
  }

  /**
   * Fails {@code op}, a future of {@link #commitAsync}, with {@link
   * io.dgen.OperationTimeoutException} once the operation timeout passed, which abandons its run.
   */
  public <T> CompletableFuture<T> bounded(
      CompletableFuture<T> op, ScheduledExecutorService scheduler, String operation) {
    return operations.bound(op, scheduler, operation, context);
  }

  /**
   * A transaction run by another runner (a {@linkplain ConsumeGroups group} that carried this
   * server's batch) wrote {@code written}, and committed with {@code stamp}: the state cache learns
   * it as from a run of its own.
   */
  public void committedElsewhere(StoredState written, byte[] stamp) {
    observer.stateCommitted(written, stamp);
  }

  /** A transaction run by another runner replayed an earlier attempt that wrote this state. */
  public void replayedElsewhere() {
    observer.replayed();
  }

  /** Runs a writing body exactly once in effect; see {@link #commit(Body, Replay)}. */
  public <T> @Nullable T commit(Body<T> body) {
    return commit(body, (tx, previous) -> previous);
  }

  /**
   * Runs {@code body} in a transaction, the one way the runtime writes.
   *
   * <p>Exactly-once across {@code commit_unknown_result (1021)}: an attempt that writes also writes
   * a commit marker keyed by its run's id. {@code run} re-executes the body after 1021 even when
   * the commit applied; a later attempt first looks for the marker and, if its earlier attempt
   * committed, returns {@code replay(previousOutcome)} instead of running callbacks, pushing or
   * popping again. So replies, actions and pushes happen once. Markers are swept by age.
   *
   * <p>If the body's value is a {@link WritesState} that wrote the state, the commit's versionstamp
   * is waited for and handed to the observer; only the committing attempt's stamp escapes.
   *
   * <p>A run retries for at most {@link #RUN_LIMIT}: markers are swept by age, and an attempt that
   * looked for its run's marker after the sweep could apply the run twice.
   *
   * <p>A run that ends with an error that may hide a commit ({@code 1021} or {@code 1039} once the
   * backend gave up, {@code transaction_timed_out}, {@code transaction_cancelled}, an interrupt)
   * after an attempt wrote looks for its marker in a fresh transaction first: if the attempt
   * committed, its outcome is returned (and an interrupt stays set) instead of the error.
   *
   * @throws BackendException {@code transaction_timed_out (1031)} once the run is older than {@link
   *     #RUN_LIMIT}; nothing was committed
   */
  public <T> @Nullable T commit(Body<T> body, Replay<T> replay) {
    return commit(new Run<>(replay, nanoTime.getAsLong()), body);
  }

  /**
   * Runs a read-only transaction whose reads are asynchronous, bounded by the operation timeout: no
   * thread of its own, none blocked while the cluster does not answer.
   *
   * @return a future of the read, failed with {@link io.dgen.OperationTimeoutException} once the
   *     timeout passed
   */
  public <T> CompletableFuture<T> readBounded(
      Function<? super Transaction, ? extends CompletableFuture<T>> read,
      String operation,
      ScheduledExecutorService scheduler) {
    return bounded(backend.runAsync(read), scheduler, operation);
  }

  /**
   * Which of {@code runs} — earlier runs of one operation whose outcome their caller did not learn
   * — committed: the first whose marker {@code tx} finds, or null. The markers are read
   * serializably, so a late commit of one of them conflicts with {@code tx}. A marker's slot is
   * kept for {@link CommitMarkers#MARKER_TTL} after it was first taken, at most {@link
   * CommitMarkers#SLOT_REUSE} before its run started: a run older than the difference may read as
   * not committed.
   */
  public @Nullable UUID committedEarlier(Transaction tx, Collection<UUID> runs) {
    return markers.committedEarlier(tx, runs);
  }

  /**
   * The run ended: its marker's slot is free again if the run knows its outcome ({@code known}, or
   * it never wrote); else the marker is kept for {@link #committedEarlier}.
   */
  private void finish(Run<?> run, boolean known) {
    markers.finish(run.marker, known || !run.mayHaveWritten(), run.runId);
  }

  private <T> @Nullable T commit(Run<T> run, Body<T> body) {
    Attempt<T> done;
    try {
      done =
          backend.run(
              raw -> {
                if (run.abandoned) {
                  throw new CancellationException(
                      "abandoned after the operation timeout: " + context);
                }
                run.begin(raw);
                if (run.mayHaveCommitted(raw)) {
                  byte[] committed = raw.get(run.marker().key());
                  if (run.committed(committed)) {
                    return run.replayed(raw, committed);
                  }
                }
                // Measured after the marker read: it was answered while the marker was still kept.
                checkAge(run, raw.attempt());
                TrackingTransaction tx = new TrackingTransaction(raw);
                return ran(run, raw, tx, body.apply(tx));
              });
    } catch (RuntimeException e) {
      try {
        done = resolveWaiting(run, e);
      } catch (RuntimeException unresolvedFailure) {
        finish(run, false);
        throw unresolvedFailure;
      }
    }
    finish(run, true);
    if (done.replayed()) {
      observer.replayed();
    } else if (done.written() != null && done.stamp() != null) {
      observer.stateCommitted(done.written(), Futures.join(done.stamp()));
    }
    return done.value();
  }

  /**
   * The body ran to its end: marks the attempt if it wrote, and sweeps the server's old markers in
   * it, at most once a minute per process. Every path that writes a marker sweeps, so a server used
   * only through inline calls, priority messages or pushes keeps about ten minutes of them.
   */
  private <T> Attempt<T> ran(
      Run<T> run, Transaction raw, TrackingTransaction tx, @Nullable T value) {
    if (tx.wrote() && run.marker == null) {
      run.marker = markers.take(raw.runId());
    }
    Attempt<T> attempt = run.ran(raw, tx, value);
    if (tx.wrote()) {
      markers.sweepIfDue(raw);
    }
    return attempt;
  }

  private void checkAge(Run<?> run, int attempt) {
    long age = nanoTime.getAsLong() - run.began;
    if (age > RUN_LIMIT.toNanos()) {
      throw new BackendException(
          BackendException.TRANSACTION_TIMED_OUT,
          "gave up after "
              + TimeUnit.NANOSECONDS.toMillis(age)
              + " ms and "
              + (attempt - 1)
              + " attempts, past the "
              + RUN_LIMIT.toMillis()
              + " ms a run may retry (commit markers are kept "
              + CommitMarkers.MARKER_TTL.toMillis()
              + " ms); nothing was committed");
    }
  }

  /**
   * The asynchronous twin of {@link #commit(Body, Replay)}, with the same exactly-once rule: no
   * thread waits for the reads the body starts, nor for the commit. The first attempt's body starts
   * in the calling thread; a retry's starts on {@code executor} (never on the backend's threads),
   * and so does each step of the body whose input was not ready ({@link Async#then}).
   *
   * @return a future of the committing attempt's value (or of the replay), completed once the
   *     commit and, for a state write, its versionstamp are known
   */
  public <T> CompletableFuture<@Nullable T> commitAsync(
      AsyncBody<T> body, Replay<T> replay, Executor executor) {
    Run<T> run = new Run<>(replay, nanoTime.getAsLong());
    CompletableFuture<@Nullable T> out =
        backend
            .<Attempt<T>>runAsync(
                raw ->
                    raw.attempt() == 1
                        ? attemptAsync(run, raw, body, executor)
                        : CompletableFuture.supplyAsync(
                                () -> attemptAsync(run, raw, body, executor), executor)
                            .thenCompose(f -> f))
            .handle((done, failure) -> done != null ? completed(done) : resolve(run, failure))
            .thenCompose(f -> f)
            .whenComplete((done, failure) -> finish(run, failure == null))
            .thenCompose(
                done -> {
                  if (done.replayed()) {
                    observer.replayed();
                  } else if (done.written() != null && done.stamp() != null) {
                    StoredState written = done.written();
                    return done.stamp()
                        .thenApply(
                            stamp -> {
                              observer.stateCommitted(written, stamp);
                              return done.value();
                            });
                  }
                  return CompletableFuture.completedFuture(done.value());
                });
    // Completed from outside (an operation timeout): start no further attempt.
    out.whenComplete((value, failure) -> run.abandoned = true);
    return out;
  }

  private static <V> CompletableFuture<V> completed(V value) {
    return CompletableFuture.completedFuture(value);
  }

  /**
   * A run failed with {@code failure}: if an attempt of it wrote that no later attempt ruled out
   * (its commit was under way, or ended in 1021 and the failure came before the marker was looked
   * for) and the failure does not say whether a commit applied ({@link #mayHaveApplied}), looks for
   * the run's marker in a fresh transaction, bounded by the operation timeout. Found: the attempt
   * committed, and its outcome is replayed. Not found, or the look did not answer in time: the
   * failure stands (with what the look met attached as suppressed).
   */
  private <T> CompletableFuture<Attempt<T>> resolve(Run<T> run, Throwable failure) {
    Throwable cause = Futures.unwrap(failure);
    UUID runId = run.runId;
    CommitMarkers.Marker marker = run.marker;
    if (run.abandoned
        || !run.mayHaveWritten()
        || runId == null
        || marker == null
        || !mayHaveApplied(cause)) {
      return CompletableFuture.failedFuture(cause);
    }
    CompletableFuture<@Nullable Attempt<T>> looked;
    try {
      looked =
          backend.runAsync(
              tx ->
                  tx.getAsync(marker.key())
                      .thenApply(m -> run.committed(m) ? run.replayed(tx, m) : null));
    } catch (RuntimeException e) {
      looked = CompletableFuture.failedFuture(e);
    }
    return looked
        .orTimeout(operations.timeout().toNanos(), TimeUnit.NANOSECONDS)
        .handle(
            (found, lookFailed) -> {
              if (found != null) {
                log.info(
                    "commit applied although it failed with {}: its outcome stands, {} runId={}",
                    cause.toString(),
                    context,
                    runId);
                return completed(found);
              }
              if (lookFailed != null) {
                cause.addSuppressed(Futures.unwrap(lookFailed));
              }
              return CompletableFuture.<Attempt<T>>failedFuture(cause);
            })
        .thenCompose(f -> f);
  }

  /**
   * {@link #resolve} for a thread that waits: an interrupt that ended the run is set aside while
   * the marker is looked for (the look is bounded), and set again afterwards.
   */
  private <T> Attempt<T> resolveWaiting(Run<T> run, RuntimeException failure) {
    boolean interrupted = Thread.interrupted();
    try {
      CompletableFuture<Attempt<T>> resolved = resolve(run, failure);
      while (true) {
        try {
          return resolved.get();
        } catch (InterruptedException e) {
          interrupted = true;
        } catch (ExecutionException e) {
          throw failure;
        }
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /**
   * Whether a run that failed with {@code failure} during its commit may have committed: {@code
   * commit_unknown_result} or {@code cluster_version_changed} once retries ran out, {@code
   * transaction_timed_out} and {@code transaction_cancelled} (a timeout or a cancel while the
   * commit was under way), {@code io_error} (an embedded backend's disk failed while it made the
   * commit durable), or an interrupt of the thread that waited for the commit.
   */
  private static boolean mayHaveApplied(Throwable failure) {
    if (failure instanceof BackendException e) {
      return e.isMaybeCommitted()
          || e.code() == BackendException.TRANSACTION_TIMED_OUT
          || e.code() == BackendException.TRANSACTION_CANCELLED
          || e.code() == BackendException.IO_ERROR; // an embedded store's disk failed mid-commit
    }
    return failure instanceof CancellationException;
  }

  private <T> CompletableFuture<Attempt<T>> attemptAsync(
      Run<T> run, Transaction raw, AsyncBody<T> body, Executor executor) {
    if (run.abandoned) {
      return CompletableFuture.failedFuture(
          new CancellationException("abandoned after the operation timeout: " + context));
    }
    run.begin(raw);
    CompletableFuture<byte @Nullable []> committed =
        run.mayHaveCommitted(raw)
            ? raw.getAsync(run.marker().key())
            : CompletableFuture.completedFuture(null);
    return Async.then(
        committed,
        executor,
        earlier -> {
          if (run.committed(earlier)) {
            return CompletableFuture.completedFuture(run.replayed(raw, earlier));
          }
          // Measured after the marker read: it was answered while the marker was still kept.
          checkAge(run, raw.attempt());
          TrackingTransaction tx = new TrackingTransaction(raw);
          return body.apply(tx).thenApply(value -> ran(run, raw, tx, value));
        });
  }

  /**
   * One run's memory across its attempts: the outcome of each attempt that wrote and may have
   * committed, by attempt number. At most one attempt of a run commits, and its marker says which
   * ({@link CommitMarkers#markerValue}): a replay returns exactly that attempt's outcome, never a
   * later attempt's (which may differ: a batch cut short by its time cap, a lock token). An attempt
   * that the next one's {@link Transaction#retriedAfter} shows did not commit is forgotten.
   * Attempts of a run never overlap; the fields are safe to read from the thread of the next
   * attempt.
   */
  private static final class Run<T> {
    private final Replay<T> replay;
    private final long began;
    private final Map<Integer, Attempt<T>> candidates = new ConcurrentHashMap<>();

    /** The number of the latest attempt that wrote, or 0. */
    private volatile int lastWritten;

    /** The run's id, known from its first attempt on. */
    private volatile @Nullable UUID runId;

    /** The caller gave up on the run (an operation timeout): no further attempt may start. */
    private volatile boolean abandoned;

    /** The run's marker, taken when an attempt first wrote (with its slot, to free when done). */
    private volatile CommitMarkers.@Nullable Marker marker;

    Run(Replay<T> replay, long began) {
      this.replay = replay;
      this.began = began;
    }

    /** An attempt starts. */
    void begin(Transaction raw) {
      runId = raw.runId();
      int before = lastWritten;
      if (before != 0
          && before == raw.attempt() - 1
          && BackendException.isRetryableNotCommitted(raw.retriedAfter())) {
        candidates.remove(before); // it ended with an error that says it did not commit
      }
    }

    /** The run's marker; only once an attempt wrote. */
    CommitMarkers.Marker marker() {
      return Objects.requireNonNull(marker, "no attempt wrote");
    }

    /** Whether {@code found}, the value of the run's marker key, says that the run committed. */
    boolean committed(byte @Nullable [] found) {
      CommitMarkers.Marker m = marker;
      return found != null && m != null && CommitMarkers.useOf(found) == m.use();
    }

    /** Whether an attempt of this run wrote and may have committed. */
    boolean mayHaveWritten() {
      return !candidates.isEmpty();
    }

    /** Whether an earlier attempt of this run may have committed: its marker must be checked. */
    boolean mayHaveCommitted(Transaction raw) {
      return !candidates.isEmpty() && raw.attempt() > 1;
    }

    /** An earlier attempt committed; {@code marker} (its marker's value) says which. */
    Attempt<T> replayed(Transaction raw, byte[] marker) {
      Attempt<T> prior = candidates.get(CommitMarkers.attemptOf(marker));
      if (prior == null) {
        prior = candidates.get(lastWritten); // a marker without an attempt's number
      }
      if (prior == null) {
        prior = candidates.values().iterator().next();
      }
      return new Attempt<>(replay.apply(raw, prior.value()), null, null, true);
    }

    /** The body ran to its end in this attempt: stamp, mark and remember what it wrote. */
    Attempt<T> ran(Transaction raw, TrackingTransaction tx, @Nullable T value) {
      StoredState written = value instanceof WritesState w ? w.written() : null;
      Attempt<T> attempt =
          new Attempt<>(value, written, written == null ? null : raw.getVersionstamp(), false);
      if (tx.wrote()) {
        CommitMarkers.Marker m = marker();
        raw.set(m.key(), CommitMarkers.markerValue(m.use(), raw.attempt()));
        candidates.put(raw.attempt(), attempt);
        lastWritten = raw.attempt();
      }
      return attempt;
    }
  }
}
