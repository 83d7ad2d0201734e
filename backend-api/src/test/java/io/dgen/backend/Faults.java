package io.dgen.backend;

import java.time.Duration;

/**
 * Fault injection for {@link BackendConformanceTest}: forced conflicts, {@code
 * commit_unknown_result}, and a clock that can be moved forward.
 *
 * <p>A backend may offer its own (the memory backend does); for any other, such as a real
 * FoundationDB cluster, which cannot fail on demand, the suite injects the faults through a {@link
 * FaultInjectingBackend} around it. Either way no conformance test is skipped for want of faults.
 */
public interface Faults {

  /**
   * Makes the next {@code n} commits that are not read-only fail with {@link
   * BackendException#NOT_COMMITTED not_committed (1020)} without applying anything, as a conflict
   * would.
   *
   * @param n how many commits fail; read-only commits are not counted
   */
  void failNextCommits(int n);

  /**
   * Makes the next {@code n} commits that are not read-only raise {@link
   * BackendException#COMMIT_UNKNOWN_RESULT commit_unknown_result (1021)}.
   *
   * @param n how many commits raise 1021; read-only commits are not counted
   * @param applied whether each of those commits applies its writes before raising
   */
  void commitUnknownResult(int n, boolean applied);

  /**
   * Moves the backend's clock forward by {@code d} without waiting, so that a transaction attempt
   * already open becomes older by {@code d} (older than five seconds means {@link
   * BackendException#TRANSACTION_TOO_OLD 1007} at commit).
   *
   * @param d how far to move the clock; positive
   */
  void advanceClock(Duration d);
}
