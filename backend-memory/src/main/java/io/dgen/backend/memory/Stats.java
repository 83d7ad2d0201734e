package io.dgen.backend.memory;

import java.util.concurrent.atomic.LongAdder;

/** The live cost counters behind {@link MemoryBackend#counters()}: one {@link LongAdder} each. */
final class Stats {
  final LongAdder runs = new LongAdder();
  final LongAdder transactionsStarted = new LongAdder();
  final LongAdder transactionsCommitted = new LongAdder();
  final LongAdder readOnlyCommits = new LongAdder();
  final LongAdder transactionsRetried = new LongAdder();
  final LongAdder conflicts = new LongAdder();
  final LongAdder keysRead = new LongAdder();
  final LongAdder rangesRead = new LongAdder();
  final LongAdder rowsRead = new LongAdder();
  final LongAdder bytesRead = new LongAdder();
  final LongAdder bytesWritten = new LongAdder();
  final LongAdder watchesArmed = new LongAdder();
  final LongAdder watchesFired = new LongAdder();

  MemoryBackend.Counters snapshot() {
    return new MemoryBackend.Counters(
        runs.sum(),
        transactionsStarted.sum(),
        transactionsCommitted.sum(),
        readOnlyCommits.sum(),
        transactionsRetried.sum(),
        conflicts.sum(),
        keysRead.sum(),
        rangesRead.sum(),
        rowsRead.sum(),
        bytesRead.sum(),
        bytesWritten.sum(),
        watchesArmed.sum(),
        watchesFired.sum());
  }

  void reset() {
    for (LongAdder a :
        new LongAdder[] {
          runs,
          transactionsStarted,
          transactionsCommitted,
          readOnlyCommits,
          transactionsRetried,
          conflicts,
          keysRead,
          rangesRead,
          rowsRead,
          bytesRead,
          bytesWritten,
          watchesArmed,
          watchesFired
        }) {
      a.reset();
    }
  }
}
