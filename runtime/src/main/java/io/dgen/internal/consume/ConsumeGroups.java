package io.dgen.internal.consume;

import io.dgen.ServerStoppedException;
import io.dgen.backend.BackendException;
import io.dgen.backend.Futures;
import io.dgen.backend.Transaction;
import io.dgen.internal.codec.StoredState;
import io.dgen.internal.commit.CommitRunner;
import io.dgen.internal.keys.TrackingTransaction;
import io.dgen.internal.observe.Metrics;
import io.dgen.internal.queue.PushGroups;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * Consumers batching across servers: the one-message batches ({@code consumeK} 1) of several
 * servers of one runtime that are ready while others commit share one transaction, as the
 * publishers' casts share pushes ({@link PushGroups}). Each server still applies one message per
 * batch, in its own order, with its own reads, conflicts and writes; what they share is the read
 * version, the commit and its commit marker. At K = 1 a message costs a share of a transaction, not
 * a whole one.
 *
 * <p>A batch that finds fewer than {@link #IN_FLIGHT} transactions of groups in flight runs at
 * once, alone, exactly as without groups (a lone server pays nothing); batches that arrive
 * meanwhile form the next group, which starts when a transaction in flight ends or as soon as it is
 * full ({@link #MAX_MEMBERS} servers), so that many servers ready at once keep as many batches in
 * flight as without groups. A group is also bounded by {@link #GROUP_BYTES} bytes of writes and
 * {@link #GROUP_NANOS} of callbacks (members past a bound run in the next group). The group runs in
 * its first member's {@link CommitRunner}: its commit marker makes the whole group exactly once
 * across {@code commit_unknown_result}, and a replay hands each member the batch the committed
 * attempt ran.
 *
 * <p>Members run one after another in the group's transaction: its bookkeeping (user versions,
 * rings, the written flag) is not thread-safe, so exactly one member touches it at a time. A
 * failure fails exactly the batches it covers:
 *
 * <ul>
 *   <li>a member whose batch fails (its callback failed or refused after writing, its lease is
 *       lost, its state cannot be decoded, its server was killed) gets its own failure, as it would
 *       alone, and handles it in its own loop; nothing of the attempt commits, and the others run
 *       again at once, without it;
 *   <li>a limit of FoundationDB met by the group as a whole runs each member again alone, where its
 *       own loop finds the message to blame;
 *   <li>an error of the transaction itself (a conflict, a lost commit outcome) retries the whole
 *       group; an error that outlives the retries fails every member, as it would have failed each
 *       alone.
 * </ul>
 */
public final class ConsumeGroups {

  /**
   * Transactions in flight per runtime below which a batch runs at once, alone; above it, batches
   * wait for the next group (a full one starts at once).
   */
  static final int IN_FLIGHT = 2;

  /** The most servers one group transaction carries. */
  static final int MAX_MEMBERS = 16;

  /**
   * The writes after which no further member joins the attempt: one batch's cap ({@link
   * ConsumerBatch#BATCH_BYTES}), far below FoundationDB's 10 MB.
   */
  static final long GROUP_BYTES = ConsumerBatch.BATCH_BYTES;

  /**
   * The callbacks' time after which no further member joins the attempt: half a batch's cap ({@link
   * ConsumerBatch#BATCH_NANOS}), far below FoundationDB's five seconds.
   */
  static final long GROUP_NANOS = ConsumerBatch.BATCH_NANOS / 2;

  /** One server's batch of one message, waiting for or running in a group. */
  private static final class Member<S, M> {
    final ConsumerBatch<S, M> batches;
    final Attempt attempt;
    final CommitRunner commits;
    final Supplier<CompletableFuture<Batch<S, M>>> alone;
    final CompletableFuture<Batch<S, M>> done = new CompletableFuture<>();

    /** The server's index key: a group carries one batch per server. */
    final ByteBuffer server;

    /** What this member's batch failed with in the latest attempt; reset by each attempt. */
    volatile @Nullable Throwable failed;

    Member(
        ConsumerBatch<S, M> batches,
        Attempt attempt,
        CommitRunner commits,
        Supplier<CompletableFuture<Batch<S, M>>> alone) {
      this.batches = batches;
      this.attempt = attempt;
      this.commits = commits;
      this.alone = alone;
      this.server = ByteBuffer.wrap(batches.serverKey());
    }

    /** Runs this member alone, as its loop would without groups, and settles it by the outcome. */
    void runAlone() {
      CompletableFuture<Batch<S, M>> f;
      try {
        f = alone.get();
      } catch (RuntimeException e) {
        f = CompletableFuture.failedFuture(e);
      }
      f.whenComplete(
          (b, err) -> {
            if (err != null) {
              done.completeExceptionally(Futures.unwrap(err));
            } else {
              done.complete(b);
            }
          });
    }

    /** Hands over the batch of a committed group, once the state cache learned of its write. */
    void committed(Batch<?, ?> batch, @Nullable CompletableFuture<byte[]> stamp, boolean replay) {
      @SuppressWarnings("unchecked") // ran by this member's batches
      Batch<S, M> b = (Batch<S, M>) batch;
      StoredState written = b.written();
      if (replay) {
        commits.replayedElsewhere();
      } else if (written != null && stamp != null) {
        stamp.whenComplete(
            (s, err) -> {
              if (s != null) {
                commits.committedElsewhere(written, s);
              } else {
                commits.replayedElsewhere(); // committed, its stamp unknown: no cache to trust
              }
              done.complete(b);
            });
        return;
      }
      done.complete(b);
    }
  }

  /**
   * What one group attempt ran: each member's batch by position (null for a member left for the
   * next group), and the commit's versionstamp if a member wrote its state.
   */
  private record Ran(
      List<@Nullable Batch<?, ?>> batches,
      @Nullable CompletableFuture<byte[]> stamp,
      boolean replayed) {

    Ran asReplayed() {
      return new Ran(batches, null, true);
    }
  }

  /** Aborts a group attempt: the member marked {@code failed} is to blame. */
  private static final class MemberFailed extends RuntimeException {
    private static final long serialVersionUID = 1L;

    MemberFailed(Throwable cause) {
      super(cause.getMessage(), cause, false, false);
    }
  }

  private final Executor executor;
  private final LongSupplier nanoTime;
  private final Metrics metrics;
  private final ArrayDeque<Member<?, ?>> waiting = new ArrayDeque<>();
  // The servers of the waiting batches: another consumer of one of them runs alone, at once.
  private final Set<ByteBuffer> waitingServers = new HashSet<>();
  private int inFlight;
  private boolean closed;

  /**
   * @param executor runs the members' callbacks and the continuations of the group transactions
   * @param nanoTime the runtime's clock, for {@link #GROUP_NANOS}
   * @param metrics counts the group transactions and the batches they carried
   */
  public ConsumeGroups(Executor executor, LongSupplier nanoTime, Metrics metrics) {
    this.executor = executor;
    this.nanoTime = nanoTime;
    this.metrics = metrics;
  }

  /**
   * Runs a batch of one message of a server, alone or in a group.
   *
   * @param alone runs it in a transaction of its own (when it finds fewer than {@link #IN_FLIGHT}
   *     groups in flight, or a group met a limit)
   * @return the batch the committed transaction ran for this server; fails as the batch would
   *     alone, or with {@link ServerStoppedException} if the runtime closed before it ran
   */
  <S, M> CompletableFuture<Batch<S, M>> run(
      ConsumerBatch<S, M> batches,
      Attempt attempt,
      CommitRunner commits,
      Supplier<CompletableFuture<Batch<S, M>>> alone) {
    Member<S, M> m = new Member<>(batches, attempt, commits, alone);
    List<Member<?, ?>> full = null;
    synchronized (this) {
      if (closed) {
        return CompletableFuture.failedFuture(closedBeforeRun());
      }
      if (inFlight >= IN_FLIGHT && !waitingServers.contains(m.server)) {
        waiting.add(m);
        waitingServers.add(m.server);
        if (waiting.size() < MAX_MEMBERS) {
          return m.done;
        }
        // A full group need not wait: with many servers ready (a slow cluster, a backlog) as many
        // batches stay in flight as without groups, a sixteenth of the transactions each.
        full = new ArrayList<>(MAX_MEMBERS);
        fill(full);
      }
      inFlight++;
    }
    if (full != null) {
      start(full);
      return m.done;
    }
    m.runAlone();
    m.done.whenComplete((b, err) -> next(List.of()));
    return m.done;
  }

  /** Fails the batches that wait for a group: the runtime closes, and nothing of them ran. */
  public void close() {
    List<Member<?, ?>> failed;
    synchronized (this) {
      closed = true;
      failed = new ArrayList<>(waiting);
      waiting.clear();
      waitingServers.clear();
    }
    failed.forEach(m -> m.done.completeExceptionally(closedBeforeRun()));
  }

  private static ServerStoppedException closedBeforeRun() {
    return new ServerStoppedException("the runtime closed before the batch ran");
  }

  /** Runs {@code group} in one transaction; settles its members and runs the next group. */
  private void runGroup(List<Member<?, ?>> group) {
    if (group.size() == 1) {
      Member<?, ?> m = group.get(0);
      m.runAlone();
      m.done.whenComplete((b, err) -> next(List.of()));
      return;
    }
    CompletableFuture<@Nullable Ran> committed;
    try {
      committed =
          group
              .get(0)
              .commits
              .commitAsync(
                  tx -> attempt(tx, group),
                  (tx, prior) -> prior == null ? null : prior.asReplayed(),
                  executor);
    } catch (RuntimeException e) {
      committed = CompletableFuture.failedFuture(e);
    }
    committed.whenComplete((ran, err) -> settle(group, ran, err));
  }

  /**
   * One group attempt: each member's batch in turn, each starting once the one before it is done,
   * until a bound is met (the rest wait for the next group). A member's failure ends the attempt.
   */
  private CompletableFuture<Ran> attempt(Transaction tx, List<Member<?, ?>> group) {
    long start = nanoTime.getAsLong();
    List<@Nullable Batch<?, ?>> ran = new ArrayList<>(Arrays.asList(new Batch<?, ?>[group.size()]));
    group.forEach(m -> m.failed = null);
    CompletableFuture<Boolean> chain = CompletableFuture.completedFuture(true);
    for (int i = 0; i < group.size(); i++) {
      int at = i;
      Member<?, ?> m = group.get(i);
      chain =
          at == 0
              ? member(tx, m, ran, at)
              : chain.thenComposeAsync(
                  more ->
                      more && !full(tx, start)
                          ? member(tx, m, ran, at)
                          : CompletableFuture.completedFuture(false),
                  executor);
    }
    return chain.thenApply(
        ignored -> {
          boolean wroteState = false;
          for (Batch<?, ?> b : ran) {
            wroteState |= b != null && b.written() != null;
          }
          return new Ran(ran, wroteState ? tx.getVersionstamp() : null, false);
        });
  }

  /** Whether the attempt has reached a bound: no further member joins it. */
  private boolean full(Transaction tx, long start) {
    long bytes =
        tx instanceof TrackingTransaction own ? own.mutationBytes() : tx.getApproximateSize();
    return bytes > GROUP_BYTES || nanoTime.getAsLong() - start > GROUP_NANOS;
  }

  /**
   * Runs member {@code m}'s batch in the group's transaction. A failure of the transaction itself
   * (a backend error) is the group's, and may be retried; any other is the member's.
   */
  private <S, M> CompletableFuture<Boolean> member(
      Transaction tx, Member<S, M> m, List<@Nullable Batch<?, ?>> ran, int at) {
    CompletableFuture<Batch<S, M>> batch;
    try {
      batch = m.batches.run(tx, 1, executor, m.attempt);
    } catch (RuntimeException e) {
      batch = CompletableFuture.failedFuture(e);
    }
    return batch.handle(
        (b, err) -> {
          if (err == null) {
            ran.set(at, b);
            return true;
          }
          Throwable cause = Futures.unwrap(err);
          if (cause instanceof BackendException) {
            throw new CompletionException(cause);
          }
          m.failed = cause;
          throw new MemberFailed(cause);
        });
  }

  /** Settles a group by its outcome, and runs again what it must. */
  private void settle(List<Member<?, ?>> group, @Nullable Ran ran, @Nullable Throwable err) {
    List<Member<?, ?>> again = new ArrayList<>();
    if (err == null) {
      int carried = 0;
      for (int i = 0; i < group.size(); i++) {
        Batch<?, ?> b = ran == null ? null : ran.batches().get(i);
        if (b == null) {
          again.add(group.get(i)); // past a bound: the next group runs it
        } else {
          carried++;
          group.get(i).committed(b, ran.stamp(), ran.replayed());
        }
      }
      metrics.consumedTogether(carried);
      next(again);
      return;
    }
    Throwable cause = Futures.unwrap(err);
    boolean attributed = false;
    for (Member<?, ?> m : group) {
      Throwable failed = m.failed;
      if (failed == null) {
        again.add(m);
      } else if (ConsumerBatch.isLimitError(failed)) {
        attributed = true;
        m.runAlone(); // what the others wrote may be what left it no room
      } else {
        attributed = true;
        m.done.completeExceptionally(failed);
      }
    }
    if (attributed) {
      next(again); // the others committed nothing: they run again, first, without it
    } else if (ConsumerBatch.isLimitError(cause)) {
      group.forEach(Member::runAlone);
      next(List.of());
    } else {
      group.forEach(m -> m.done.completeExceptionally(cause));
      next(List.of());
    }
  }

  /**
   * Runs the next group: {@code first} (members of a group that run again) and then the waiting
   * batches ({@link #fill}); or counts one group fewer in flight.
   */
  private void next(List<Member<?, ?>> first) {
    List<Member<?, ?>> group = new ArrayList<>(first);
    synchronized (this) {
      fill(group);
      if (group.isEmpty()) {
        inFlight--;
        return;
      }
    }
    start(group);
  }

  /**
   * Moves waiting batches into {@code group}, in their order, up to {@link #MAX_MEMBERS}, at most
   * one per server: two consumers of one server in one transaction would pop the same queue and
   * write the same version key (a versionstamped value it cannot read back). A second consumer of a
   * server with a batch waiting does not wait at all: it runs alone, as without groups ({@link
   * #run}). Called holding this object's lock.
   */
  private void fill(List<Member<?, ?>> group) {
    Set<ByteBuffer> servers = new HashSet<>();
    group.forEach(m -> servers.add(m.server));
    for (Iterator<Member<?, ?>> it = waiting.iterator();
        it.hasNext() && group.size() < MAX_MEMBERS; ) {
      Member<?, ?> m = it.next();
      if (servers.add(m.server)) {
        it.remove();
        waitingServers.remove(m.server);
        group.add(m);
      }
    }
  }

  /** Runs {@code group}, counted in flight already, on the executor. */
  private void start(List<Member<?, ?>> group) {
    try {
      // on the executor: a backend that completes at once must not nest group after group
      executor.execute(() -> runGroup(group));
    } catch (RejectedExecutionException shutDown) {
      group.forEach(m -> m.done.completeExceptionally(closedBeforeRun()));
      synchronized (this) {
        inFlight--;
      }
      close();
    }
  }
}
