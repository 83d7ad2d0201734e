package io.dgen.cli;

import io.dgen.backend.Backend;
import io.dgen.backend.CountingBackend;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * What the dashboard is given in the tests: the test's backend, counted ({@link CountingBackend}:
 * transactions, writes, reads), with directory creation and removal counted too (CountingBackend
 * does not count directory operations), and a close that leaves the test's backend open.
 */
final class WatchedBackend {

  final AtomicInteger directoryWrites = new AtomicInteger();
  final CountingBackend counting;

  WatchedBackend(Backend backend) {
    this.counting = CountingBackend.wrap(CliRun.unclosable(backend, directoryWrites));
  }

  /** Writing commits plus directories created or removed: what "no write" means. */
  long writes() {
    return counting.counters().transactionsCommitted() + directoryWrites.get();
  }
}
