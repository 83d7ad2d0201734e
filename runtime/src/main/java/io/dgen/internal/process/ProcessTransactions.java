package io.dgen.internal.process;

import io.dgen.StartOptions;
import io.dgen.backend.Futures;
import io.dgen.internal.codec.StoredState;
import io.dgen.internal.commit.CommitRunner;
import io.dgen.internal.keys.ServerEntry;
import io.dgen.internal.keys.ServerKeys;
import io.dgen.internal.state.StateStore;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The transactions a process runs across several of its parts, rather than through one component: a
 * started server's start ({@link #initialize}), a hosted server's eviction ({@link #evict}), and a
 * kill ({@link #kill}), the only place a process clears keys itself.
 *
 * <p>Threading: thread-safe; holds nothing but the process's parts.
 *
 * @param <S> the state type
 * @param <M> the message type
 */
final class ProcessTransactions<S, M> {

  private static final Logger log = LoggerFactory.getLogger(ProcessTransactions.class);

  private final ProcessParts<S, M> p;

  ProcessTransactions(ProcessParts<S, M> parts) {
    this.p = parts;
  }

  /**
   * Loads (and completes) the type table, writes the initial state and the server's entry in the
   * tenant's server index, in one transaction; the table is learned once that has committed.
   */
  void initialize(S initial, String behaviour) {
    Started started =
        p.commits.commit(
            tx -> {
              var table = p.queue.readTypes(tx); // both overlap the state store's read
              var index = p.queue.entry().readForIndex(tx);
              StateStore.Written written =
                  p.states.initialize(
                      tx, initial, p.options instanceof StartOptions s && s.reset());
              long incarnation = p.queue.entry().index(tx, index, behaviour);
              return new Started(p.queue.completeTypes(tx, table), written, incarnation);
            });
    Objects.requireNonNull(started);
    p.types.learn(started.types());
    p.queue.entry().startedIn(started.incarnation());
  }

  /**
   * What the start transaction did: the type table it saw or wrote, the state it wrote, and the
   * incarnation of the server it started in.
   */
  private record Started(
      Map<Integer, String> types, StateStore.@Nullable Written state, long incarnation)
      implements CommitRunner.WritesState {
    @Override
    public @Nullable StoredState written() {
      return state == null ? null : state.written();
    }
  }

  /**
   * A hosted server's eviction: one transaction that reads its queue (serializably: a push landing
   * meanwhile conflicts with it) and its lock, and if the queue is empty and the server unlocked,
   * marks its entry idle and clears its ready index entry; with an expiry, records when it expires
   * unless a timer of it is pending ({@code Expiry}).
   *
   * @return true if it was evicted, or is gone (killed); false if it has work or a lock
   */
  CompletableFuture<Boolean> evict() {
    return p.services
        .backend()
        .runAsync(
            tx -> {
              var head =
                  tx.getRangeAsync(
                      p.keys.items().range().begin, p.keys.items().range().end, 1, false);
              var lock = tx.getAsync(p.keys.lockKey());
              var entry =
                  p.queue
                      .entry()
                      .evict(
                          tx,
                          ServerEntry.expiresAtEviction(
                              p.services.wallMillis(),
                              Objects.requireNonNull(p.kind).options(),
                              p.keys,
                              tx));
              tx.clear(p.keys.stuckKey()); // a server that could be evicted is stuck no more
              // The entry's idle mark is written whatever the queue holds: a busy server throws,
              // and the transaction commits nothing.
              return head.thenCombine(lock, (h, l) -> h.isEmpty() && l == null)
                  .thenCombine(entry, (empty, marked) -> empty)
                  .thenApply(
                      empty -> {
                        if (!empty) {
                          throw new Busy();
                        }
                        return true;
                      });
            })
        .exceptionally(
            e -> {
              if (Futures.unwrap(e) instanceof Busy) {
                return false;
              }
              throw e instanceof RuntimeException r ? r : new CompletionException(e);
            });
  }

  /** An eviction found work or a lock: nothing it wrote may commit. */
  private static final class Busy extends RuntimeException {
    private static final long serialVersionUID = 1L;

    Busy() {
      super("busy", null, false, false);
    }
  }

  /**
   * Kills the server: clears its whole subspace (its keys, the only ones a process clears itself)
   * in one transaction, then stops its processes in this runtime.
   */
  CompletableFuture<Void> kill(Object reason) {
    // Idempotent by the incarnation its first attempt found (a commit marker would outlive
    // the server): a retry after an applied commit_unknown_result spares a server started
    // meanwhile.
    ServerKeys.KillTarget target = new ServerKeys.KillTarget();
    return p.services
        .operations()
        .runAsync(
            p.services.backend(),
            tx -> p.keys.killAsync(tx, p.doorbell.keys(), target, p.services.blocking()),
            p.services.scheduler(),
            "kill",
            p.context)
        .thenRun(
            () -> {
              log.info("server killed: {} reason={}", p.context, reason);
              p.runtime.processes().stopLocal(p.keys, target.incarnation());
            });
  }
}
