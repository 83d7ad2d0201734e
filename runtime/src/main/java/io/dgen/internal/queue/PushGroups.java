package io.dgen.internal.queue;

import io.dgen.ServerStoppedException;
import io.dgen.backend.BackendException;
import io.dgen.backend.Futures;
import io.dgen.backend.Transaction;
import io.dgen.internal.commit.CommitRunner;
import io.dgen.internal.observe.Metrics;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * Publisher group commit: the plain casts ({@code cast}, {@code castAll}) of one runtime's threads
 * that wait while a push transaction is in flight share the next one, as RocksDB's writers share a
 * write-ahead-log sync. Pushes to different servers never conflict (versionstamped keys, atomic
 * adds, and a read of each server's entry that only a kill writes), so one transaction carries them
 * all; each cast is still acknowledged only after the commit that carries it.
 *
 * <p>At most one group transaction is in flight per runtime: a cast that finds none in flight runs
 * at once, alone, exactly as it would without groups (a lone publisher pays nothing), and casts
 * that arrive meanwhile form the next group, bounded by {@link #MAX_PUSHES} pushes and {@link
 * #MAX_BYTES} bytes of envelopes. The group runs in the first member's {@link CommitRunner}: its
 * commit marker makes the whole group exactly once across {@code commit_unknown_result}, as it does
 * a single push.
 *
 * <p>A failure fails exactly the casts it covers:
 *
 * <ul>
 *   <li>a server that was killed fails its own cast ({@link ServerStoppedException}); the rest of
 *       the group runs again without it;
 *   <li>a group too large for one transaction ({@code transaction_too_large}) runs again as one
 *       transaction per cast, so that only a cast too large on its own is refused;
 *   <li>anything else (a backend failure, the operation timeout) covers the whole group, and fails
 *       every cast in it, as it would have failed each alone.
 * </ul>
 *
 * <p>Keyed casts, calls, outbox pushes and timers keep their own transactions.
 */
public final class PushGroups {

  /** The most pushes ({@code cast} or {@code castAll} calls) one group transaction carries. */
  static final int MAX_PUSHES = 128;

  /**
   * The most envelope bytes one group carries: far below FoundationDB's 10 MB transaction limit,
   * and at its recommended 1 MB, so that a group commits about as fast as its largest member would.
   */
  static final int MAX_BYTES = 1 << 20;

  /**
   * The most envelopes one group carries: each takes one of a transaction's 65,536 versionstamp
   * user versions.
   */
  static final int MAX_ENVELOPES = 8_192;

  /** One waiting push: a server's envelopes and the future its caller holds. */
  private static final class Pending {
    final ServerQueue<?> queue;
    final CommitRunner commits;
    final List<byte[]> envelopes;
    final String operation;
    final int bytes;
    final CompletableFuture<@Nullable Void> done = new CompletableFuture<>();

    /** Set by a group attempt in which this server's entry read failed (it was killed). */
    volatile @Nullable Throwable refused;

    Pending(ServerQueue<?> queue, CommitRunner commits, List<byte[]> envelopes, String operation) {
      this.queue = queue;
      this.commits = commits;
      this.envelopes = envelopes;
      this.operation = operation;
      int b = 0;
      for (byte[] e : envelopes) {
        b += e.length;
      }
      this.bytes = b;
    }
  }

  private final Executor executor;
  private final ScheduledExecutorService scheduler;
  private final Metrics metrics;
  private final ArrayDeque<Pending> waiting = new ArrayDeque<>();
  private boolean inFlight;
  private boolean closed;

  /**
   * @param executor runs the continuations of the group transactions
   * @param scheduler times the operation timeout
   * @param metrics counts the push transactions and the casts they carried
   */
  public PushGroups(Executor executor, ScheduledExecutorService scheduler, Metrics metrics) {
    this.executor = executor;
    this.scheduler = scheduler;
    this.metrics = metrics;
  }

  /**
   * Pushes {@code envelopes} to the server of {@code queue}, alone or in a group.
   *
   * @return completes once a transaction that carries them committed; fails with what failed that
   *     transaction for them, or with {@link ServerStoppedException} if the runtime closed before
   *     they were sent
   */
  public CompletableFuture<@Nullable Void> push(
      ServerQueue<?> queue, CommitRunner commits, List<byte[]> envelopes, String operation) {
    Pending p = new Pending(queue, commits, envelopes, operation);
    List<Pending> group;
    synchronized (this) {
      if (closed) {
        return CompletableFuture.failedFuture(closedBeforeSent());
      }
      if (inFlight) {
        waiting.add(p);
        return p.done;
      }
      inFlight = true;
      group = List.of(p);
    }
    run(group);
    return p.done;
  }

  /**
   * Fails the casts that wait for a group with {@link ServerStoppedException}; nothing of them was
   * sent. Then waits, at most {@code within}, for the group in flight to complete as its
   * transaction does, so that its casts learn their outcome before the runtime's threads stop.
   */
  public void close(Duration within) {
    List<Pending> failed;
    synchronized (this) {
      closed = true;
      failed = new ArrayList<>(waiting);
      waiting.clear();
    }
    for (Pending p : failed) {
      p.done.completeExceptionally(closedBeforeSent());
    }
    long deadline = System.nanoTime() + within.toNanos();
    boolean interrupted = false;
    synchronized (this) {
      for (long left = within.toNanos(); inFlight && left > 0; ) {
        try {
          TimeUnit.NANOSECONDS.timedWait(this, left);
        } catch (InterruptedException e) {
          interrupted = true;
        }
        left = deadline - System.nanoTime();
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }

  private static ServerStoppedException closedBeforeSent() {
    return new ServerStoppedException(
        "the runtime closed before the cast was sent: it was not queued");
  }

  /** Runs {@code group} in one transaction, then the next group if casts are waiting. */
  private void run(List<Pending> group) {
    try {
      start(group);
    } catch (RuntimeException e) { // nothing was sent: the group fails, the next one may run
      group.forEach(p -> p.done.completeExceptionally(e));
      next(List.of());
    }
  }

  private void start(List<Pending> group) {
    if (group.size() == 1) {
      Pending p = group.get(0);
      commit(p.commits, tx -> p.queue.publish(tx, p.envelopes), p.operation)
          .whenComplete(
              (v, err) -> {
                settle(p, err);
                next(List.of());
              });
      return;
    }
    commit(group.get(0).commits, tx -> publishAll(tx, group), group.get(0).operation)
        .whenComplete((v, err) -> settleGroup(group, err));
  }

  /**
   * One group attempt: every member's pushes, then every member's entry read, then, once all are
   * in, every ring. A transaction's own bookkeeping (user versions, rings) is not thread-safe, and
   * reads complete on the backend's threads: so nothing is written from a read's completion but
   * from the one that joins them all, in order. A member whose server was killed is marked, and
   * fails the attempt.
   */
  private static CompletableFuture<@Nullable Void> publishAll(Transaction tx, List<Pending> group) {
    for (Pending p : group) {
      p.queue.pushCasts(tx, p.envelopes);
    }
    List<CompletableFuture<byte @Nullable []>> entries = new ArrayList<>(group.size());
    for (Pending p : group) {
      p.refused = null;
      entries.add(p.queue.entry().read(tx, true));
    }
    return CompletableFuture.allOf(entries.toArray(CompletableFuture<?>[]::new))
        .handle(
            (all, err) -> {
              Throwable first = null;
              for (int i = 0; i < group.size(); i++) {
                CompletableFuture<byte @Nullable []> read = entries.get(i);
                if (read.isCompletedExceptionally()) {
                  Throwable t = Futures.unwrap(read.handle((v, e) -> e).join());
                  group.get(i).refused = t;
                  first = first == null ? t : first;
                }
              }
              if (first != null) {
                throw new CompletionException(first);
              }
              for (int i = 0; i < group.size(); i++) {
                group.get(i).queue.entry().ring(tx, entries.get(i).join());
              }
              return null;
            });
  }

  private CompletableFuture<@Nullable Void> commit(
      CommitRunner commits, CommitRunner.AsyncBody<@Nullable Void> body, String operation) {
    return commits.commitBounded(body, operation, executor, scheduler);
  }

  /** Completes the casts of a group by its outcome, and runs again what it must. */
  private void settleGroup(List<Pending> group, @Nullable Throwable err) {
    if (err == null) {
      metrics.pushed(group.size());
      group.forEach(p -> p.done.complete(null));
      next(List.of());
      return;
    }
    Throwable cause = Futures.unwrap(err);
    List<Pending> again = new ArrayList<>();
    boolean attributed = false;
    for (Pending p : group) {
      Throwable refused = p.refused;
      if (refused instanceof ServerStoppedException) {
        p.done.completeExceptionally(refused);
        attributed = true;
      } else {
        again.add(p);
      }
    }
    if (attributed) {
      next(again); // the others committed nothing: they run again, first, without the refused
    } else if (cause instanceof BackendException be
        && be.code() == BackendException.TRANSACTION_TOO_LARGE) {
      oneByOne(group);
    } else {
      group.forEach(p -> p.done.completeExceptionally(cause));
      next(List.of());
    }
  }

  /** Runs each cast of a group that was too large in a transaction of its own, in order. */
  private void oneByOne(List<Pending> group) {
    CompletableFuture<@Nullable Void> chain = CompletableFuture.completedFuture(null);
    for (Pending p : group) {
      chain =
          chain.thenCompose(
              ignored ->
                  commit(p.commits, tx -> p.queue.publish(tx, p.envelopes), p.operation)
                      .handle(
                          (v, err) -> {
                            settle(p, err);
                            return null;
                          }));
    }
    chain.whenComplete((v, err) -> next(List.of()));
  }

  private void settle(Pending p, @Nullable Throwable err) {
    if (err == null) {
      metrics.pushed(1);
      p.done.complete(null);
    } else {
      p.done.completeExceptionally(Futures.unwrap(err));
    }
  }

  /**
   * Runs the next group: {@code first} (casts of a failed group that run again) and then the
   * waiting casts, up to the bounds; or marks no group in flight.
   */
  private void next(List<Pending> first) {
    List<Pending> group = new ArrayList<>(first);
    synchronized (this) {
      int bytes = 0;
      int envelopes = 0;
      for (Pending p : group) {
        bytes += p.bytes;
        envelopes += p.envelopes.size();
      }
      while (!waiting.isEmpty() && group.size() < MAX_PUSHES) {
        Pending p = waiting.peek();
        if (!group.isEmpty()
            && (bytes + p.bytes > MAX_BYTES || envelopes + p.envelopes.size() > MAX_ENVELOPES)) {
          break;
        }
        waiting.poll();
        group.add(p);
        bytes += p.bytes;
        envelopes += p.envelopes.size();
      }
      if (group.isEmpty()) {
        inFlight = false;
        notifyAll(); // a close waits for the group in flight
        return;
      }
    }
    try {
      // on the executor: a backend that completes at once must not nest group after group
      executor.execute(() -> run(group));
    } catch (java.util.concurrent.RejectedExecutionException shutDown) {
      group.forEach(p -> p.done.completeExceptionally(closedBeforeSent()));
      synchronized (this) {
        inFlight = false;
      }
      close(Duration.ZERO);
    }
  }
}
