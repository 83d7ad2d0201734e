package io.dgen.internal;

import io.dgen.backend.Backend;
import io.dgen.backend.BackendException;
import io.dgen.backend.Futures;
import io.dgen.backend.Transaction;
import io.dgen.internal.codec.StoredState;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;

/**
 * Runs one server's writing transactions exactly once in effect: owns the run's commit marker, the
 * replay of an attempt that turned out to commit after {@code commit_unknown_result (1021)}, and
 * the {@link TrackingTransaction} every runtime body writes through.
 *
 * <p>Never decides what a transaction writes and never runs callbacks (bodies do); never caches
 * state (it tells its {@link Observer} what was committed).
 */
final class CommitRunner {

  private static final byte[] EMPTY = new byte[0];

  /** A transaction body; it may run more than once (one attempt per retry). */
  interface Body<T> {
    @Nullable T apply(Transaction tx);
  }

  /** What a retried attempt returns when an earlier attempt of its run turned out to commit. */
  interface Replay<T> {
    @Nullable T apply(Transaction tx, @Nullable T previous);
  }

  /**
   * A body's value that may carry the state it wrote: the commit's versionstamp is then waited for.
   */
  interface WritesState {
    @Nullable StoredState written();
  }

  /** Learns what became of state writes (the state cache listens). */
  interface Observer {
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
   * How long a run may keep retrying: well under {@link Sweeper#MARKER_TTL}, so that every attempt
   * looks for its run's marker while the marker is certainly still there.
   */
  static final Duration RUN_LIMIT = Duration.ofMinutes(1);

  private final Backend backend;
  private final ServerKeys keys;
  private final Observer observer;
  private final LongSupplier nanoTime;

  CommitRunner(Backend backend, ServerKeys keys, Observer observer, LongSupplier nanoTime) {
    this.backend = backend;
    this.keys = keys;
    this.observer = observer;
    this.nanoTime = nanoTime;
  }

  /** Runs a writing body exactly once in effect; see {@link #commit(Body, Replay)}. */
  <T> @Nullable T commit(Body<T> body) {
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
   * @throws BackendException {@code transaction_timed_out (1031)} once the run is older than {@link
   *     #RUN_LIMIT}; nothing was committed
   */
  <T> @Nullable T commit(Body<T> body, Replay<T> replay) {
    // The outcome of the last attempt that wrote: what a replay returns if that attempt committed.
    List<Attempt<T>> previous = new ArrayList<>(1);
    long began = nanoTime.getAsLong();
    Attempt<T> done =
        backend.run(
            raw -> {
              byte[] marker = keys.marker(raw.runId());
              if (!previous.isEmpty() && raw.attempt() > 1 && raw.get(marker) != null) {
                return new Attempt<>(replay.apply(raw, previous.get(0).value()), null, null, true);
              }
              // Measured after the marker read: it was answered while the marker was still kept.
              checkAge(began, raw.attempt());
              TrackingTransaction tx = new TrackingTransaction(raw);
              T value = body.apply(tx);
              previous.clear();
              StoredState written = value instanceof WritesState w ? w.written() : null;
              Attempt<T> attempt =
                  new Attempt<>(
                      value, written, written == null ? null : raw.getVersionstamp(), false);
              if (tx.wrote()) {
                raw.set(marker, EMPTY);
                previous.add(attempt);
              }
              return attempt;
            });
    if (done.replayed()) {
      observer.replayed();
    } else if (done.written() != null && done.stamp() != null) {
      observer.stateCommitted(done.written(), Futures.join(done.stamp()));
    }
    return done.value();
  }

  private void checkAge(long began, int attempt) {
    long age = nanoTime.getAsLong() - began;
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
              + Sweeper.MARKER_TTL.toMillis()
              + " ms); nothing was committed");
    }
  }
}
