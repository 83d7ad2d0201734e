package io.dgen.internal.consume;

import io.dgen.Action;
import io.dgen.TerminalException;
import io.dgen.internal.base.Lifecycle;
import io.dgen.internal.behaviour.CallbackInvoker;
import io.dgen.internal.calls.ReplySlots;
import io.dgen.internal.codec.StoredState;
import io.dgen.internal.commit.CommitRunner;
import io.dgen.internal.lock.LockCoordinator;
import io.dgen.internal.lock.LockRuns;
import java.util.List;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * What one consumer transaction ({@code ConsumerBatch.run}) found or did: the consume loop acts on
 * it once the transaction committed.
 *
 * @param readVersion the version the batch read the queue at: it saw every push committed up to it,
 *     so a ring of an older commit need not wake its loop
 * @param lockWait the server is locked: wait for a ring (the release) or, with {@code lockExpiresAt
 *     >= 0}, until then
 * @param busted the batch busted an expired lock (and re-queued its message)
 * @param processed items popped (applied, refused, or moved to the dead letters)
 * @param drained the batch saw the whole queue and processed all of it: nothing was left as of
 *     {@code readVersion}
 * @param localReplies replies for callers in this runtime, to hand over after the commit
 * @param refusedCasts casts the batch refused (their handlers threw {@code TerminalException}), to
 *     report after the commit
 */
record Batch<S, M>(
    long readVersion,
    boolean lockWait,
    long lockExpiresAt,
    boolean busted,
    int processed,
    boolean drained,
    @Nullable S state,
    List<List<Action<S>>> actions,
    @Nullable Object stopReason,
    LockRuns.@Nullable Held<M> lock,
    @Nullable StoredState written,
    List<ReplySlots.LocalReply> localReplies,
    List<Refusal> refusedCasts)
    implements CommitRunner.WritesState {

  /** A cast a batch refused: the message, and what its handler threw. */
  record Refusal(Object message, TerminalException reason) {}

  static <S, M> Batch<S, M> idle(long readVersion) {
    return empty(readVersion, false, true);
  }

  /** Paused by an operator: wait for a ring (the resume), as for a lock without expiry. */
  static <S, M> Batch<S, M> paused(long readVersion) {
    return empty(readVersion, true, false);
  }

  private static <S, M> Batch<S, M> empty(long readVersion, boolean wait, boolean drained) {
    return new Batch<>(
        readVersion,
        wait,
        -1,
        false,
        0,
        drained,
        null,
        List.of(),
        null,
        null,
        null,
        List.of(),
        List.of());
  }

  static <S, M> Batch<S, M> locked(LockCoordinator.Meeting<M> meeting, long readVersion) {
    return new Batch<>(
        readVersion,
        !meeting.busted() && meeting.ours() == null,
        meeting.expiresAt(),
        meeting.busted(),
        0,
        false,
        null,
        List.of(),
        null,
        meeting.ours(),
        null,
        List.of(),
        List.of());
  }

  /** The queue was empty. */
  boolean idle() {
    return drained && processed == 0;
  }

  /**
   * Hands out what the committed batch produced: replies to callers in this runtime, post-commit
   * actions, and a stop it asked for. Returns false if that stopped the process.
   */
  boolean deliver(CallbackInvoker<S, M> invoker, Lifecycle lifecycle) {
    localReplies.forEach(ReplySlots.LocalReply::deliver);
    for (Refusal r : refusedCasts) {
      invoker.castRefused(r.message(), r.reason());
    }
    for (List<Action<S>> a : actions) {
      invoker.runActions(a, Objects.requireNonNull(state));
    }
    if (written != null) {
      written.lend(state);
    }
    if (stopReason != null) {
      lifecycle.stopIfAsked(stopReason);
      return false;
    }
    return true;
  }
}
