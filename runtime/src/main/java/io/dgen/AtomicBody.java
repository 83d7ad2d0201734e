package io.dgen;

/**
 * The work of one atomic transaction across servers ({@link DGen#transact}): calls, casts and reads
 * of several servers, and writes of your own keys, that commit together or not at all.
 *
 * <p><b>It may run more than once</b>: after a conflict (with a server's consumers, another atomic
 * transaction, a push it read), while a server it calls waits its turn, or after {@code
 * commit_unknown_result}. Keep side effects out of it (no HTTP calls, no counters of yours): do
 * them in the callbacks' post-commit actions ({@link Action}), which run once, after the commit, or
 * after {@link DGen#transact} returns.
 *
 * @param <T> what the transaction returns
 */
@FunctionalInterface
public interface AtomicBody<T> {

  /**
   * Does the work.
   *
   * @param tx the transaction's view of the servers; valid only while this runs
   * @return the value {@link DGen#transact} returns once the transaction commits
   * @throws Exception anything: it aborts the transaction, nothing is committed, and {@link
   *     DGen#transact} throws it (a checked one wrapped in a {@link DGenException})
   */
  T run(Atomic tx) throws Exception;
}
