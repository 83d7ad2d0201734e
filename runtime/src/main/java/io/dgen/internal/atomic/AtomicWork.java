package io.dgen.internal.atomic;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.Atomic;
import io.dgen.AtomicBody;
import io.dgen.DGenException;
import io.dgen.ServerBusyException;
import io.dgen.Tenant;
import io.dgen.backend.BackendException;
import io.dgen.internal.base.CallerFailures;
import io.dgen.internal.base.RuntimeServices;
import io.dgen.internal.codec.StoredState;
import io.dgen.internal.commit.CommitRunner;
import io.dgen.internal.keys.Buckets;
import io.dgen.internal.keys.ServerKeys;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;

/**
 * Runs atomic transactions across the servers of one tenant ({@code DGen.transact}): each body in a
 * {@link CommitRunner} run of its own, so that conflicts retry the whole body and {@code
 * commit_unknown_result} replays the committed attempt's outcome rather than applying it twice. The
 * runs' commit markers are kept under a key range of their own in the tenant, as a server's are.
 *
 * <p>A server that is not free (messages queued, paused, locked) fails the attempt with a retryable
 * {@code not_committed}, so that the same run is retried with the backend's backoff (its marker
 * checked first, as after any retry), until {@link Atomic#BUSY_WAIT} since the first such attempt
 * has passed; then the run ends with {@link ServerBusyException}.
 *
 * <p>Thread-safe; one per tenant and runtime, made by the runtime on first use.
 */
public final class AtomicWork {

  /** The tuid under which the tenant's atomic runs keep their commit markers. */
  static final Tuple MARKERS = Tuple.from("dgen_atomic");

  private final RuntimeServices services;
  private final Tenant tenant;
  private final CommitRunner commits;

  /** The atomic work of {@code tenant} in the runtime of {@code services}. */
  public AtomicWork(RuntimeServices services, Tenant tenant) {
    this.services = services;
    this.tenant = tenant;
    String context = "tenant=" + tenant.path() + " atomic";
    this.commits =
        new CommitRunner(
            services.backend(),
            new ServerKeys(tenant.subspace(), Buckets.of(tenant.bucketCount()), MARKERS),
            new CommitRunner.Observer() {
              @Override
              public void stateCommitted(StoredState written, byte[] stamp) {}

              @Override
              public void replayed() {}
            },
            services::nanoTime,
            services.operations(),
            context);
  }

  /**
   * Runs {@code body} as one atomic transaction in the tenant; see {@link Atomic}.
   *
   * @return the body's value, once the transaction committed and its actions ran
   */
  public <T> T transact(AtomicBody<T> body) {
    Objects.requireNonNull(body, "body must not be null");
    return run(body);
  }

  /**
   * {@link #transact} on one of the runtime's threads for work that waits (the body blocks on its
   * reads; the pool is bounded, and shared with {@code handleLocked}): the future completes with
   * what {@code transact} returns or fails with what it throws.
   */
  public <T> CompletableFuture<T> transactAsync(AtomicBody<T> body) {
    Objects.requireNonNull(body, "body must not be null");
    try {
      return CompletableFuture.supplyAsync(() -> run(body), services.blocking());
    } catch (java.util.concurrent.RejectedExecutionException full) {
      return CompletableFuture.failedFuture(
          new DGenException(
              "transactAsync refused: the runtime's threads for blocking work are all busy and"
                  + " their queue is full; nothing ran",
              full));
    }
  }

  /** A body's checked exception, carried out of the transaction to its caller. */
  private static final class BodyThrew extends RuntimeException {
    private static final long serialVersionUID = 1L;

    BodyThrew(Exception cause) {
      super(cause.getMessage(), cause, false, false);
    }
  }

  /** The waiting of one run for busy servers: since when, and until when. */
  private final class Turns implements AtomicAttempt.Turns {
    private long since = -1;

    @Override
    public RuntimeException busy(Tuple server, ServerBusyException.Reason reason, String context) {
      long now = services.nanoTime();
      if (since < 0) {
        since = now;
      }
      String what =
          switch (reason) {
            case QUEUED -> "has messages queued";
            case PAUSED -> "is paused";
            case LOCKED -> "is locked";
          };
      if (now - since >= Atomic.BUSY_WAIT.toNanos()) {
        return new ServerBusyException(
            "server "
                + server
                + " "
                + what
                + " and did not come free within "
                + Atomic.BUSY_WAIT.toMillis()
                + " ms: its call in an atomic transaction must wait its turn (FIFO with its"
                + " queue); nothing was committed, retry later: "
                + context,
            server,
            reason);
      }
      return new BackendException(
          BackendException.NOT_COMMITTED,
          "server " + server + " " + what + "; the atomic transaction waits its turn: " + context);
    }
  }

  private <T> T run(AtomicBody<T> body) {
    Turns turns = new Turns();
    AtomicAttempt.Done<T> done;
    try {
      done =
          commits.commit(
              tx -> {
                AtomicAttempt attempt = new AtomicAttempt(services, tenant, tx, turns);
                T value;
                try {
                  value = body.run(attempt);
                } catch (BackendException e) {
                  throw attempt.failure(e); // a retryable one runs the body again
                } catch (Exception e) {
                  throw attempt.failure(new BodyThrew(e));
                }
                return attempt.finish(value);
              },
              (tx, previous) -> previous == null ? null : previous.asReplayed());
    } catch (BodyThrew e) {
      if (e.getCause() instanceof RuntimeException own) {
        throw own;
      }
      throw new DGenException(
          "the body of an atomic transaction threw; nothing was committed: " + e.getCause(),
          e.getCause());
    } catch (RuntimeException e) {
      throw CallerFailures.toThrow(e, "transact", "tenant=" + tenant.path());
    }
    Objects.requireNonNull(done).afterCommit();
    return done.value();
  }
}
