package io.dgen.backend;

import java.util.Map;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * The one exception type of the backend layer: a FoundationDB error code, its name, and whether the
 * retry loop of {@link Backend#run} retries it.
 *
 * <p>Codes and retryability follow FoundationDB 7.3 ({@code fdb_error_predicate}): an error is
 * retryable if the transaction certainly did not commit and may be tried again ({@code 1007, 1009,
 * 1020, ...}) or if it may have committed ({@code 1021 commit_unknown_result}, {@code 1039}). Both
 * backends raise the same codes for the same conditions; the FoundationDB backend maps {@code
 * FDBException} to this type in exactly one place.
 */
public class BackendException extends RuntimeException {

  private static final long serialVersionUID = 1L;

  /** {@code transaction_too_old}: the transaction ran longer than five seconds. Retryable. */
  public static final int TRANSACTION_TOO_OLD = 1007;

  /** {@code future_version}: the read version is ahead of storage. Retryable. */
  public static final int FUTURE_VERSION = 1009;

  /** {@code not_committed}: a conflict with a concurrently committed transaction. Retryable. */
  public static final int NOT_COMMITTED = 1020;

  /** {@code commit_unknown_result}: the commit may or may not have applied. Retryable. */
  public static final int COMMIT_UNKNOWN_RESULT = 1021;

  /** {@code transaction_cancelled}: the transaction was cancelled, closed or reset. */
  public static final int TRANSACTION_CANCELLED = 1025;

  /** {@code transaction_timed_out}: the transaction's timeout option elapsed. */
  public static final int TRANSACTION_TIMED_OUT = 1031;

  /** {@code too_many_watches}: the client's limit of outstanding watches is reached. */
  public static final int TOO_MANY_WATCHES = 1032;

  /** {@code accessed_unreadable}: a read touched a key whose value is not known yet. */
  public static final int ACCESSED_UNREADABLE = 1036;

  /** {@code operation_cancelled}: a future was cancelled. */
  public static final int OPERATION_CANCELLED = 1101;

  /** {@code client_invalid_operation}: an operation the client rejects, e.g. a bad offset. */
  public static final int CLIENT_INVALID_OPERATION = 2000;

  /** {@code key_outside_legal_range}: a key at or above {@code \xff} without system access. */
  public static final int KEY_OUTSIDE_LEGAL_RANGE = 2004;

  /** {@code inverted_range}: a range whose begin sorts after its end. */
  public static final int INVERTED_RANGE = 2005;

  /** {@code used_during_commit}: the transaction was used after its commit was issued. */
  public static final int USED_DURING_COMMIT = 2017;

  /** {@code transaction_invalid_version}: the transaction did not commit, so it has no stamp. */
  public static final int TRANSACTION_INVALID_VERSION = 2020;

  /** {@code no_commit_version}: a read-only transaction has no commit version or stamp. */
  public static final int NO_COMMIT_VERSION = 2021;

  /** {@code transaction_too_large}: more than 10,000,000 bytes of mutations and conflicts. */
  public static final int TRANSACTION_TOO_LARGE = 2101;

  /** {@code io_error}: a local disk operation failed (embedded durable backends); not retried. */
  public static final int IO_ERROR = 1510;

  /** {@code key_too_large}: a key longer than 10,000 bytes. */
  public static final int KEY_TOO_LARGE = 2102;

  /** {@code value_too_large}: a value longer than 100,000 bytes. */
  public static final int VALUE_TOO_LARGE = 2103;

  private static final Set<Integer> MAYBE_COMMITTED = Set.of(1021, 1039);

  private static final Set<Integer> RETRYABLE_NOT_COMMITTED =
      Set.of(1007, 1009, 1020, 1037, 1038, 1042, 1051, 1078, 1213, 1223);

  private static final Map<Integer, String> NAMES =
      Map.ofEntries(
          Map.entry(1007, "transaction_too_old"),
          Map.entry(1009, "future_version"),
          Map.entry(1020, "not_committed"),
          Map.entry(1021, "commit_unknown_result"),
          Map.entry(1025, "transaction_cancelled"),
          Map.entry(1031, "transaction_timed_out"),
          Map.entry(1032, "too_many_watches"),
          Map.entry(1034, "watches_disabled"),
          Map.entry(1036, "accessed_unreadable"),
          Map.entry(1037, "process_behind"),
          Map.entry(1038, "database_locked"),
          Map.entry(1039, "cluster_version_changed"),
          Map.entry(1101, "operation_cancelled"),
          Map.entry(1510, "io_error"),
          Map.entry(2000, "client_invalid_operation"),
          Map.entry(2004, "key_outside_legal_range"),
          Map.entry(2005, "inverted_range"),
          Map.entry(2017, "used_during_commit"),
          Map.entry(2020, "transaction_invalid_version"),
          Map.entry(2021, "no_commit_version"),
          Map.entry(2101, "transaction_too_large"),
          Map.entry(2102, "key_too_large"),
          Map.entry(2103, "value_too_large"));

  private final int code;

  /**
   * Creates an exception for {@code code} with a message naming the code and adding {@code detail}.
   *
   * @param code the FoundationDB error code
   * @param detail what happened, as {@code key=value} pairs where possible; may be null
   */
  public BackendException(int code, @Nullable String detail) {
    this(code, detail, null);
  }

  /**
   * Creates an exception for {@code code} with a cause (for example the FoundationDB client's own
   * exception).
   *
   * @param code the FoundationDB error code
   * @param detail what happened; may be null
   * @param cause the underlying exception; may be null
   */
  public BackendException(int code, @Nullable String detail, @Nullable Throwable cause) {
    super(message(code, detail), cause);
    this.code = code;
  }

  /** The FoundationDB error code, e.g. {@code 1020} for {@code not_committed}. */
  public int code() {
    return code;
  }

  /** FoundationDB's name of the code, e.g. {@code not_committed}, or {@code unknown_error}. */
  public String codeName() {
    return nameOf(code);
  }

  /** True if {@link Backend#run} retries this error. */
  public boolean isRetryable() {
    return isRetryable(code);
  }

  /** True if the transaction may have committed although this error was raised ({@code 1021}). */
  public boolean isMaybeCommitted() {
    return MAYBE_COMMITTED.contains(code);
  }

  /**
   * True if FoundationDB's retry loop retries {@code code} knowing that the attempt it ended did
   * not commit ({@code not_committed}, {@code transaction_too_old}, ...), as opposed to {@link
   * #isMaybeCommitted} codes, after which it may have.
   *
   * @param code an error code
   * @return whether a retry after it follows an attempt that certainly did not commit
   */
  public static boolean isRetryableNotCommitted(int code) {
    return RETRYABLE_NOT_COMMITTED.contains(code);
  }

  /** True if FoundationDB's retry loop retries {@code code}. */
  public static boolean isRetryable(int code) {
    return MAYBE_COMMITTED.contains(code) || RETRYABLE_NOT_COMMITTED.contains(code);
  }

  /** FoundationDB's name of {@code code}, or {@code unknown_error}. */
  public static String nameOf(int code) {
    return NAMES.getOrDefault(code, "unknown_error");
  }

  private static String message(int code, @Nullable String detail) {
    String head = nameOf(code) + " (" + code + ")";
    return detail == null || detail.isEmpty() ? head : head + ": " + detail;
  }
}
