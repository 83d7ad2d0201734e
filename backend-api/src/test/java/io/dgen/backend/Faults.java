package io.dgen.backend;

import java.time.Duration;

/**
 * Fault injection a backend under test may offer to {@link BackendConformanceTest}: forced
 * conflicts, {@code commit_unknown_result}, and a clock that can be moved forward.
 *
 * <p>A real FoundationDB cluster cannot do this on demand, so its conformance subclass returns no
 * {@code Faults} and the tests that need them are skipped with a visible reason. The memory backend
 * offers all of them, and none of its conformance tests may be skipped.
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
