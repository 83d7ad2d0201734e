package io.dgen;

import org.jspecify.annotations.Nullable;

/**
 * An operation did not complete within the runtime's operation timeout ({@link
 * DGen.Builder#operationTimeout}, or the admin's): the cluster did not answer in time. The message
 * names the operation, the server (or tenant) and the timeout.
 *
 * <p><b>The outcome is unknown.</b> A push under way when the timeout passed may still commit: a
 * {@code cast} that failed this way may have been queued, and a {@code kill} may have happened. The
 * runtime starts no further attempt of it, but one already sent to the cluster may apply. Retry
 * with an idempotency key ({@link ServerRef#cast(Object, String)}, {@link ServerRef#call(Call,
 * String, java.time.Duration)}) where a duplicate would hurt; {@code kill} and the admin's reads
 * may simply be retried.
 */
public final class OperationTimeoutException extends DGenException {

  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message what timed out, with the timeout and {@code key=value} context
   * @param cause the failure seen when giving up, if any
   */
  public OperationTimeoutException(String message, @Nullable Throwable cause) {
    super(message, cause);
  }
}
