package io.dgen.benchmarks;

import io.dgen.backend.CountingBackend;
import io.dgen.backend.memory.MemoryBackend;

/**
 * The counters a row reports, from the memory backend's own counters or, on FoundationDB, from a
 * {@link CountingBackend} around it.
 *
 * @param transactionsCommitted writing commits
 * @param readOnlyCommits commits of attempts that wrote nothing
 * @param transactionsRetried attempts retried
 * @param conflicts retries caused by conflicts, or -1 where the counters cannot tell
 * @param keysRead single-key reads (watches included)
 * @param rangesRead range reads
 * @param bytesWritten key and value bytes written
 * @param watchesArmed watches armed by commits
 * @param watchesFired watches completed by a change
 */
record Cost(
    long transactionsCommitted,
    long readOnlyCommits,
    long transactionsRetried,
    long conflicts,
    long keysRead,
    long rangesRead,
    long bytesWritten,
    long watchesArmed,
    long watchesFired) {

  static Cost of(MemoryBackend.Counters c) {
    return new Cost(
        c.transactionsCommitted(),
        c.readOnlyCommits(),
        c.transactionsRetried(),
        c.conflicts(),
        c.keysRead(),
        c.rangesRead(),
        c.bytesWritten(),
        c.watchesArmed(),
        c.watchesFired());
  }

  static Cost of(CountingBackend.Counters c) {
    return new Cost(
        c.transactionsCommitted(),
        c.readOnlyCommits(),
        c.transactionsRetried(),
        -1,
        c.keysRead(),
        c.rangesRead(),
        c.bytesWritten(),
        c.watchesArmed(),
        c.watchesFired());
  }

  Cost minus(Cost earlier) {
    return new Cost(
        transactionsCommitted - earlier.transactionsCommitted,
        readOnlyCommits - earlier.readOnlyCommits,
        transactionsRetried - earlier.transactionsRetried,
        conflicts < 0 ? -1 : conflicts - earlier.conflicts,
        keysRead - earlier.keysRead,
        rangesRead - earlier.rangesRead,
        bytesWritten - earlier.bytesWritten,
        watchesArmed - earlier.watchesArmed,
        watchesFired - earlier.watchesFired);
  }

  long outstandingWatches() {
    return watchesArmed - watchesFired;
  }
}
