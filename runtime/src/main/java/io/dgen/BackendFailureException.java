package io.dgen;

import io.dgen.backend.BackendException;

/**
 * The backend failed an operation of a {@link ServerRef} (the cluster's trouble, not the
 * message's): its cause is the backend's {@link BackendException}, with FoundationDB's error code
 * ({@link #code()}). The runtime retried what it may retry before giving up; what the operation did
 * is as its message says: a push that failed with {@code transaction_timed_out} (1031) before it
 * was sent committed nothing, while one whose commit was under way may have applied (the runtime
 * looks for its commit marker and reports it applied if found; see {@code docs/failure-model.md}).
 */
public final class BackendFailureException extends DGenException {

  private static final long serialVersionUID = 1L;

  private final int code;

  /**
   * Creates the exception.
   *
   * @param message what failed, with {@code key=value} context
   * @param cause the backend's exception
   */
  public BackendFailureException(String message, BackendException cause) {
    super(message, cause);
    this.code = cause.code();
  }

  /** FoundationDB's error code, as in {@link BackendException#code()}. */
  public int code() {
    return code;
  }

  /**
   * The backend's exception, with its code, name and retryability.
   *
   * @return the cause
   */
  public BackendException backendCause() {
    return (BackendException) java.util.Objects.requireNonNull(getCause());
  }
}
