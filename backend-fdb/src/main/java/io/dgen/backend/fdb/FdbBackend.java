package io.dgen.backend.fdb;

import com.apple.foundationdb.Database;
import com.apple.foundationdb.FDBException;
import com.apple.foundationdb.directory.DirectoryLayer;
import com.apple.foundationdb.directory.DirectorySubspace;
import com.apple.foundationdb.directory.NoSuchDirectoryException;
import com.apple.foundationdb.subspace.Subspace;
import io.dgen.backend.Backend;
import io.dgen.backend.BackendException;
import io.dgen.backend.Futures;
import io.dgen.backend.RunIds;
import io.dgen.backend.Transaction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * The FoundationDB {@link Backend}: DGen's transactions, tenants and watches on a FoundationDB 7.3
 * cluster, through fdb-java.
 *
 * <pre>{@code
 * try (FdbBackend backend = FdbBackend.open()) {              // the default cluster file
 *   Subspace tenant = backend.directory("demo", "app");
 *   byte[] key = tenant.pack(Tuple.from("greeting"));
 *   backend.run(tx -> { tx.set(key, "hello".getBytes(UTF_8)); return null; });
 * }
 *
 * FdbBackend tuned = FdbBackend.builder()
 *     .clusterFile(Path.of("/etc/foundationdb/fdb.cluster"))
 *     .transactionTimeout(Duration.ofSeconds(10))
 *     .maxWatches(50_000)
 *     .open();
 * }</pre>
 *
 * <h2>Mapping</h2>
 *
 * <ul>
 *   <li>{@link #run} and {@link #runAsync} are FoundationDB's retry loop ({@code Database.run}):
 *       one fdb-java transaction per call, {@code onError} deciding whether and when to retry, with
 *       FoundationDB's backoff, the configured {@linkplain Builder#retryLimit retry limit} and
 *       {@linkplain Builder#transactionTimeout timeout}. Unlike fdb-java they throw the {@link
 *       BackendException} or the body's own exception unwrapped, never a {@code
 *       CompletionException}.
 *   <li>Tenants are directories of FoundationDB's default directory layer ({@code
 *       DirectoryLayer.getDefault()}): {@link #directory} is {@code createOrOpen}, {@link
 *       #openDirectory} is {@code open}, {@link #removeDirectory} is {@code removeIfExists}. {@code
 *       fdbcli} and other layers see them as ordinary directories.
 *   <li>Every {@link Transaction} operation is one fdb-java call; {@code add} is {@code
 *       MutationType.ADD} with an 8-byte little-endian operand, versionstamps use {@code
 *       SET_VERSIONSTAMPED_KEY}/{@code _VALUE}. Key and value limits ({@code 2102}/{@code 2103})
 *       are checked by the write call itself, as the SPI specifies (fdb-java would report them at
 *       the next read or commit).
 *   <li>{@code FDBException} becomes {@link BackendException} with the same code.
 * </ul>
 *
 * <h2>Native client</h2>
 *
 * FoundationDB's client library {@code libfdb_c} (version 7.3) must be installed; it is loaded when
 * the first backend is opened, not when this class is loaded. Without it, {@code open} fails with
 * an {@link IllegalStateException} that says what to install (see {@code docs/operations.md}). The
 * FoundationDB API version is selected once per JVM; every backend of a JVM must use the same one.
 * The client's network thread starts with the first backend and runs until the JVM exits:
 * FoundationDB allows stopping it only once per JVM, so {@link #close} closes the database but not
 * the network.
 *
 * <h2>Threading</h2>
 *
 * A backend is thread-safe. Callbacks of the futures it returns run on the {@linkplain
 * Builder#executor executor} given to the builder (by default fdb-java's shared daemon pool).
 */
public final class FdbBackend implements Backend {

  /** The API version used unless the builder says otherwise: 730, FoundationDB 7.3. */
  public static final int DEFAULT_API_VERSION = 730;

  /** The lowest API version accepted: 620, where {@code getApproximateSize} appeared. */
  public static final int MIN_API_VERSION = 620;

  /** The highest API version fdb-java 7.3 supports: 730. */
  public static final int MAX_API_VERSION = 730;

  /** FoundationDB's default limit of outstanding watches per database handle: 10,000. */
  public static final int DEFAULT_MAX_WATCHES = 10_000;

  /** FoundationDB's ceiling for the {@code max_watches} option: 1,000,000. */
  public static final int MAX_WATCHES_LIMIT = 1_000_000;

  private static final byte[] PARTITION_LAYER = "partition".getBytes(StandardCharsets.UTF_8);

  private final Database db;
  private final String description;
  private final FdbWatches watches = new FdbWatches();
  private final AtomicBoolean closed = new AtomicBoolean();

  FdbBackend(Database db, String description) {
    this.db = db;
    this.description = description;
  }

  /**
   * Opens the cluster named by FoundationDB's default cluster file: the {@code FDB_CLUSTER_FILE}
   * environment variable, else {@code fdb.cluster} in the working directory, else the system
   * default ({@code /etc/foundationdb/fdb.cluster} on Linux, {@code
   * /usr/local/etc/foundationdb/fdb.cluster} on macOS), with default options.
   *
   * <p>Connecting is lazy: an unreachable cluster makes transactions wait (up to the {@linkplain
   * Builder#transactionTimeout timeout}, if one is set), not {@code open} fail.
   *
   * @return the backend; close it when done
   * @throws IllegalStateException if the FoundationDB client library is not installed, or another
   *     API version was selected in this JVM
   */
  public static FdbBackend open() {
    return builder().open();
  }

  /**
   * Opens the cluster named by {@code clusterFile}, with default options.
   *
   * @param clusterFile a FoundationDB cluster file
   * @return the backend; close it when done
   * @throws IllegalArgumentException if the file does not exist
   * @throws IllegalStateException as {@link #open()}
   */
  public static FdbBackend open(Path clusterFile) {
    return builder().clusterFile(clusterFile).open();
  }

  /**
   * Returns a builder for a backend with non-default options.
   *
   * @return a new builder
   */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * {@inheritDoc}
   *
   * <p>Implemented as FoundationDB's retry loop: the body runs in an fdb-java transaction that is
   * then committed; on a {@link BackendException} (from the body or the commit), {@code onError}
   * either resets the transaction after FoundationDB's backoff and the body runs again, or rejects
   * the error, which is then thrown. Non-FoundationDB exceptions thrown by the body end the loop at
   * once and are thrown unchanged. <b>The body may execute more than once.</b>
   *
   * @throws IllegalStateException if the backend is closed
   */
  @Override
  public <T> T run(Function<? super Transaction, ? extends T> body) {
    Objects.requireNonNull(body, "body");
    com.apple.foundationdb.Transaction tr = newTransaction();
    UUID runId = RunIds.next();
    int attempts = 0;
    int lastCode = 0;
    try {
      while (true) {
        FdbTransaction attempt = new FdbTransaction(tr, watches, runId, ++attempts, lastCode);
        try {
          T result = body.apply(attempt);
          Futures.join(tr.commit());
          awaitSettled(attempt.versionstampsSettled());
          return result;
        } catch (RuntimeException e) {
          Retry retry = classify(e);
          lastCode = retry.error.code();
          com.apple.foundationdb.Transaction next;
          try {
            next = Futures.join(tr.onError(retry.fdbError));
          } catch (RuntimeException rejected) {
            throw retry.failureAfterOnError(rejected);
          }
          tr = next;
        }
      }
    } finally {
      tr.close();
    }
  }

  /**
   * {@inheritDoc}
   *
   * <p>The same loop as {@link #run}, without blocking: retries run on the backend's executor after
   * FoundationDB's backoff. <b>The body may execute more than once.</b> A closed backend returns a
   * future failed with {@link IllegalStateException}.
   */
  @Override
  public <T> CompletableFuture<T> runAsync(
      Function<? super Transaction, ? extends CompletableFuture<? extends T>> body) {
    Objects.requireNonNull(body, "body");
    com.apple.foundationdb.Transaction tr;
    try {
      tr = newTransaction();
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
    CompletableFuture<T> result = new CompletableFuture<>();
    attempt(tr, body, result, RunIds.next(), 1, 0);
    return result;
  }

  private <T> void attempt(
      com.apple.foundationdb.Transaction tr,
      Function<? super Transaction, ? extends CompletableFuture<? extends T>> body,
      CompletableFuture<T> result,
      UUID runId,
      int number,
      int retriedAfter) {
    FdbTransaction attempt = new FdbTransaction(tr, watches, runId, number, retriedAfter);
    CompletableFuture<? extends T> work;
    try {
      work = Objects.requireNonNull(body.apply(attempt), "runAsync body returned null");
    } catch (RuntimeException | Error e) {
      retryAsync(tr, e, body, result, runId, number);
      return;
    }
    work.thenCompose(value -> tr.commit().thenApply(ignored -> value))
        .whenComplete(
            (value, failure) -> {
              if (failure == null) {
                attempt
                    .versionstampsSettled()
                    .whenComplete(
                        (settled, never) -> {
                          tr.close();
                          result.complete(value);
                        });
              } else {
                retryAsync(tr, failure, body, result, runId, number);
              }
            });
  }

  private <T> void retryAsync(
      com.apple.foundationdb.Transaction tr,
      Throwable failure,
      Function<? super Transaction, ? extends CompletableFuture<? extends T>> body,
      CompletableFuture<T> result,
      UUID runId,
      int number) {
    Throwable cause = Futures.unwrap(failure);
    if (!(cause instanceof RuntimeException)) {
      tr.close();
      result.completeExceptionally(cause);
      return;
    }
    Retry retry;
    try {
      retry = classify((RuntimeException) cause);
    } catch (RuntimeException notRetried) {
      tr.close();
      result.completeExceptionally(notRetried);
      return;
    }
    CompletableFuture<com.apple.foundationdb.Transaction> next;
    try {
      next = tr.onError(retry.fdbError);
    } catch (RuntimeException e) {
      tr.close();
      result.completeExceptionally(retry.failureAfterOnError(e));
      return;
    }
    int code = retry.error.code();
    next.whenComplete(
        (nextTr, rejected) -> {
          if (rejected == null) {
            attempt(nextTr, body, result, runId, number + 1, code);
          } else {
            tr.close();
            result.completeExceptionally(retry.failureAfterOnError(rejected));
          }
        });
  }

  /**
   * Waits for a future that cannot fail, after a successful commit. An interrupt ends the wait
   * early (and stays set) rather than turning a committed transaction into an exception.
   */
  private static void awaitSettled(CompletableFuture<Void> settled) {
    try {
      settled.get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (ExecutionException e) {
      throw new AssertionError("a settled future failed", e);
    }
  }

  /**
   * Decides what the retry loop does with a failure of an attempt: a {@link BackendException} (or a
   * raw {@link FDBException}) goes to {@code onError}; anything else is the body's own exception
   * and is rethrown here, unwrapped, without a retry.
   */
  private static Retry classify(RuntimeException e) {
    Throwable cause = Futures.unwrap(e);
    if (cause instanceof FDBException fdb) {
      cause = FdbErrors.map(fdb);
    }
    if (cause instanceof BackendException backend) {
      return new Retry(backend, FdbErrors.toFdbException(backend));
    }
    throw cause instanceof RuntimeException unchecked ? unchecked : e;
  }

  /** A failure on its way to {@code onError}, in the SPI's form and in fdb-java's. */
  private static final class Retry {
    final BackendException error;
    final FDBException fdbError;

    Retry(BackendException error, FDBException fdbError) {
      this.error = error;
      this.fdbError = fdbError;
    }

    /**
     * What the loop throws once {@code onError} refused to retry: the original error when {@code
     * onError} rethrew it (a non-retryable code, or the retry limit reached), otherwise what {@code
     * onError} raised instead (for example {@code transaction_timed_out} once the timeout elapsed),
     * with the original attached as suppressed.
     */
    RuntimeException failureAfterOnError(Throwable rejected) {
      RuntimeException mapped = FdbErrors.map(rejected);
      if (mapped instanceof BackendException backend && backend.code() == error.code()) {
        return error;
      }
      if (mapped != error) {
        mapped.addSuppressed(error);
      }
      return mapped;
    }
  }

  /**
   * {@inheritDoc}
   *
   * <p>Runs {@code DirectoryLayer.getDefault().createOrOpen} in its own transaction. The returned
   * subspace is a plain {@link Subspace} over the directory's prefix.
   *
   * @throws IllegalArgumentException also if the path names a directory partition
   * @throws BackendException if FoundationDB fails
   * @throws IllegalStateException if the backend is closed
   */
  @Override
  public Subspace directory(String... path) {
    List<String> p = FdbEncoding.directoryPath(path);
    ensureOpen();
    return toSubspace(p, FdbErrors.join(DirectoryLayer.getDefault().createOrOpen(db, p)));
  }

  /**
   * {@inheritDoc}
   *
   * @throws BackendException if FoundationDB fails
   * @throws IllegalStateException if the backend is closed
   */
  @Override
  public Optional<Subspace> openDirectory(String... path) {
    List<String> p = FdbEncoding.directoryPath(path);
    ensureOpen();
    CompletableFuture<Optional<Subspace>> opened =
        DirectoryLayer.getDefault()
            .open(db, p)
            .handle(
                (dir, failure) -> {
                  if (failure == null) {
                    return Optional.of(toSubspace(p, dir));
                  }
                  if (Futures.unwrap(failure) instanceof NoSuchDirectoryException) {
                    return Optional.empty();
                  }
                  throw FdbErrors.map(failure);
                });
    return FdbErrors.join(opened);
  }

  /**
   * {@inheritDoc}
   *
   * <p>Runs {@code DirectoryLayer.getDefault().removeIfExists}, which clears the directory's whole
   * prefix and its metadata in one transaction.
   *
   * @throws BackendException if FoundationDB fails
   * @throws IllegalStateException if the backend is closed
   */
  @Override
  public boolean removeDirectory(String... path) {
    List<String> p = FdbEncoding.directoryPath(path);
    ensureOpen();
    return FdbErrors.join(DirectoryLayer.getDefault().removeIfExists(db, p));
  }

  /**
   * {@inheritDoc}
   *
   * <p>Runs {@code DirectoryLayer.getDefault().list}; a parent that does not exist lists nothing.
   *
   * @throws BackendException if FoundationDB fails
   * @throws IllegalStateException if the backend is closed
   */
  @Override
  public List<String> listDirectories(String... parent) {
    List<String> p = parent.length == 0 ? List.of() : FdbEncoding.directoryPath(parent);
    ensureOpen();
    CompletableFuture<List<String>> listed =
        DirectoryLayer.getDefault()
            .list(db, p)
            .handle(
                (names, failure) -> {
                  if (failure == null) {
                    List<String> sorted = new java.util.ArrayList<>(names);
                    java.util.Collections.sort(sorted);
                    return sorted;
                  }
                  if (Futures.unwrap(failure) instanceof NoSuchDirectoryException) {
                    return List.<String>of();
                  }
                  throw FdbErrors.map(failure);
                });
    return FdbErrors.join(listed);
  }

  private static Subspace toSubspace(List<String> path, DirectorySubspace dir) {
    if (Arrays.equals(dir.getLayer(), PARTITION_LAYER)) {
      throw new IllegalArgumentException(
          "path=" + path + " is a directory partition, which has no key prefix of its own");
    }
    return new Subspace(dir.getKey());
  }

  /** The special key of FoundationDB's status document. */
  private static final byte[] STATUS_JSON =
      "\u00ff\u00ff/status/json".getBytes(java.nio.charset.StandardCharsets.ISO_8859_1);

  private static final java.util.regex.Pattern CONTROLLER_TIME =
      java.util.regex.Pattern.compile("\"cluster_controller_timestamp\"\\s*:\\s*(\\d+)");

  /**
   * {@inheritDoc}
   *
   * <p>The cluster's time: {@code cluster.cluster_controller_timestamp} of the status document
   * (seconds; read through the special key {@code \xff\xff/status/json}, one read of a few
   * kilobytes to a few hundred). Fails if the document has no such field.
   */
  @Override
  public CompletableFuture<Long> clockMillisAsync() {
    try {
      return FdbErrors.adapt(db.readAsync(tr -> tr.get(STATUS_JSON)))
          .thenApply(
              json -> {
                java.util.regex.Matcher m =
                    CONTROLLER_TIME.matcher(
                        new String(
                            json == null ? new byte[0] : json,
                            java.nio.charset.StandardCharsets.UTF_8));
                if (!m.find()) {
                  throw new IllegalStateException(
                      "the cluster's status has no cluster_controller_timestamp: " + description);
                }
                return Long.parseLong(m.group(1)) * 1000;
              });
    } catch (RuntimeException e) {
      return FdbErrors.failed(e);
    }
  }

  /**
   * The number of watches this backend handed out that have not fired, failed or been cancelled
   * yet. FoundationDB limits them per client to {@linkplain Builder#maxWatches max watches} (10,000
   * by default); a watch beyond the limit fails with {@code too_many_watches (1032)}.
   *
   * @return the number of pending watches
   */
  public int pendingWatches() {
    return watches.size();
  }

  /**
   * Closes the database handle. Pending watches fail with {@code transaction_cancelled (1025)};
   * later calls fail with {@link IllegalStateException}. Transactions still running may fail.
   * FoundationDB's network thread keeps running (see the class documentation). Idempotent.
   */
  @Override
  public void close() {
    if (closed.compareAndSet(false, true)) {
      watches.closeAll();
      db.close();
    }
  }

  @Override
  public String toString() {
    return "FdbBackend{" + description + (closed.get() ? ", closed" : "") + "}";
  }

  private com.apple.foundationdb.Transaction newTransaction() {
    ensureOpen();
    try {
      return db.createTransaction();
    } catch (RuntimeException e) {
      throw FdbErrors.map(e);
    }
  }

  private void ensureOpen() {
    if (closed.get()) {
      throw new IllegalStateException("backend closed: " + this);
    }
  }

  /**
   * Options of an {@link FdbBackend}. Setters validate their argument and fail fast with {@link
   * IllegalArgumentException}; {@link #open()} connects. Not thread-safe; a builder may open any
   * number of backends.
   */
  public static final class Builder {

    private @Nullable Path clusterFile;
    private int apiVersion = DEFAULT_API_VERSION;
    private long transactionTimeoutMillis;
    private int retryLimit = -1;
    private int maxWatches = DEFAULT_MAX_WATCHES;
    private boolean automaticIdempotency;
    private @Nullable Executor executor;

    private Builder() {}

    /**
     * The cluster file naming the cluster to connect to. Default: FoundationDB's default cluster
     * file (see {@link FdbBackend#open()}).
     *
     * @param clusterFile an existing cluster file
     * @return this builder
     */
    public Builder clusterFile(Path clusterFile) {
      this.clusterFile = Objects.requireNonNull(clusterFile, "clusterFile");
      return this;
    }

    /**
     * The FoundationDB API version, selected once per JVM. Default {@value
     * FdbBackend#DEFAULT_API_VERSION}. Lower versions keep older client behaviour (for example,
     * below 730 a use of the transaction after its commit was issued also fails that commit).
     *
     * @param apiVersion between {@value FdbBackend#MIN_API_VERSION} and {@value
     *     FdbBackend#MAX_API_VERSION}
     * @return this builder
     */
    public Builder apiVersion(int apiVersion) {
      if (apiVersion < MIN_API_VERSION || apiVersion > MAX_API_VERSION) {
        throw new IllegalArgumentException(
            "apiVersion must be between "
                + MIN_API_VERSION
                + " and "
                + MAX_API_VERSION
                + ", was "
                + apiVersion);
      }
      this.apiVersion = apiVersion;
      return this;
    }

    /**
     * The timeout of every transaction (FoundationDB's {@code transaction_timeout} database
     * option), measured from the start of a {@code run} across its retries; when it elapses the
     * transaction fails with {@code transaction_timed_out (1031)}, which is not retried and may
     * hide a commit that happened. Default: none ({@link Duration#ZERO}).
     *
     * @param timeout zero for none, otherwise at least one millisecond
     * @return this builder
     */
    public Builder transactionTimeout(Duration timeout) {
      Objects.requireNonNull(timeout, "timeout");
      if (timeout.isNegative()) {
        throw new IllegalArgumentException("transactionTimeout must not be negative: " + timeout);
      }
      long millis = timeout.toMillis();
      if (millis == 0 && !timeout.isZero()) {
        throw new IllegalArgumentException(
            "transactionTimeout must be zero (none) or at least 1 ms: " + timeout);
      }
      this.transactionTimeoutMillis = millis;
      return this;
    }

    /**
     * The number of retries after which {@link FdbBackend#run} gives up and throws the last error
     * (FoundationDB's {@code transaction_retry_limit} database option). Default: unlimited ({@code
     * -1}).
     *
     * @param retryLimit {@code -1} for unlimited, otherwise {@code >= 0} ({@code 0}: never retry)
     * @return this builder
     */
    public Builder retryLimit(int retryLimit) {
      if (retryLimit < -1) {
        throw new IllegalArgumentException(
            "retryLimit must be -1 (unlimited) or >= 0, was " + retryLimit);
      }
      this.retryLimit = retryLimit;
      return this;
    }

    /**
     * The maximum number of outstanding watches of this backend's database handle (FoundationDB's
     * {@code max_watches} database option). Every in-flight DGen call and every idle consumer holds
     * one; a watch beyond the limit fails with {@code too_many_watches (1032)}. Default {@value
     * FdbBackend#DEFAULT_MAX_WATCHES}.
     *
     * @param maxWatches between 0 and {@value FdbBackend#MAX_WATCHES_LIMIT}
     * @return this builder
     */
    public Builder maxWatches(int maxWatches) {
      if (maxWatches < 0 || maxWatches > MAX_WATCHES_LIMIT) {
        throw new IllegalArgumentException(
            "maxWatches must be between 0 and " + MAX_WATCHES_LIMIT + ", was " + maxWatches);
      }
      this.maxWatches = maxWatches;
      return this;
    }

    /**
     * Turns on FoundationDB's <b>experimental</b> automatic idempotency for every transaction (the
     * {@code transaction_automatic_idempotency} database option, FoundationDB 7.3): commits no
     * longer fail with {@code commit_unknown_result (1021)}, so a retried body is not applied
     * twice, at a small cost per commit. {@code transaction_timed_out (1031)} and {@code
     * cluster_version_changed (1039)} still leave the outcome unknown. FoundationDB does not
     * recommend it for production yet. Default: off.
     *
     * @param enabled whether to turn it on
     * @return this builder
     */
    public Builder automaticIdempotency(boolean enabled) {
      this.automaticIdempotency = enabled;
      return this;
    }

    /**
     * The executor that runs fdb-java's callbacks, hence the continuations of every future the
     * backend returns and the retries of {@link FdbBackend#runAsync}. Default: fdb-java's shared
     * pool of daemon threads ({@code FDB.DEFAULT_EXECUTOR}).
     *
     * @param executor the executor
     * @return this builder
     */
    public Builder executor(Executor executor) {
      this.executor = Objects.requireNonNull(executor, "executor");
      return this;
    }

    /**
     * Loads the FoundationDB client (once per JVM), selects the API version and opens the database.
     * Connecting is lazy; see {@link FdbBackend#open()}.
     *
     * @return the backend; close it when done
     * @throws IllegalArgumentException if the cluster file does not exist
     * @throws IllegalStateException if the FoundationDB client library cannot be loaded, or another
     *     API version was selected in this JVM
     * @throws BackendException if FoundationDB rejects the cluster file or an option
     */
    public FdbBackend open() {
      Settings settings = settings();
      if (settings.clusterFile() != null && !Files.isRegularFile(settings.clusterFile())) {
        throw new IllegalArgumentException(
            "cluster file not found: " + settings.clusterFile().toAbsolutePath());
      }
      return new FdbBackend(FdbNative.open(settings), settings.describe());
    }

    /** The validated options, as {@link #open()} would apply them. */
    Settings settings() {
      return new Settings(
          clusterFile,
          apiVersion,
          transactionTimeoutMillis,
          retryLimit,
          maxWatches,
          automaticIdempotency,
          executor);
    }
  }

  /** A builder's options, frozen. */
  record Settings(
      @Nullable Path clusterFile,
      int apiVersion,
      long transactionTimeoutMillis,
      int retryLimit,
      int maxWatches,
      boolean automaticIdempotency,
      @Nullable Executor executor) {

    String describe() {
      return "clusterFile="
          + (clusterFile == null ? "default" : clusterFile.toString())
          + ", apiVersion="
          + apiVersion;
    }
  }
}
