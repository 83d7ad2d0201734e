package io.dgen.backend.memory;

import com.apple.foundationdb.subspace.Subspace;
import io.dgen.backend.Backend;
import io.dgen.backend.BackendException;
import io.dgen.backend.Futures;
import io.dgen.backend.RunIds;
import io.dgen.backend.Transaction;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;

/**
 * An in-memory {@link Backend} that behaves like FoundationDB 7.3, not like a map: the embedded
 * default of DGen and the backend its tests run on.
 *
 * <pre>{@code
 * try (MemoryBackend backend = MemoryBackend.create()) {
 *   Subspace app = backend.directory("demo", "app");
 *   byte[] hits = app.pack(Tuple.from("hits"));
 *   MemoryBackend.Counters before = backend.counters();
 *   backend.run(tx -> { tx.add(hits, 1); return null; });
 *   MemoryBackend.Counters cost = backend.counters().minus(before);  // 1 run, 1 commit, ...
 * }
 * }</pre>
 *
 * <h2>Semantics</h2>
 *
 * A multi-version store with serializable optimistic concurrency: each attempt reads at a read
 * version (acquired lazily by its first read) overlaid with its own writes, and a commit fails with
 * {@code not_committed (1020)} iff a transaction that committed after that read version wrote into
 * one of its read-conflict ranges, which are recorded exactly as FoundationDB records them
 * (including the range-limit rule and the exclusion of ranges the attempt already wrote).
 * Versionstamps, watches, the key, value and transaction size limits, {@code transaction_too_old}
 * after five seconds (measured with the {@linkplain Builder#ticker ticker}) and FoundationDB's
 * error codes are reproduced. Old versions are kept only while a live attempt may still read them.
 *
 * <h2>Differences from FoundationDB</h2>
 *
 * <ul>
 *   <li>Each commit gets its own version (versions count commits), so the order inside a
 *       versionstamp is always 0.
 *   <li>A watch whose own transaction changes the watched key fires when that transaction commits,
 *       and fails if the commit fails (FoundationDB fires it at the write, before the commit).
 *   <li>A versionstamped key is written after the attempt's other mutations; a later range clear in
 *       the same attempt removes it only if it covers the final key, and leaves the key's range
 *       unreadable (FoundationDB makes the cleared part readable).
 *   <li>Keys at or above {@code \xff} are always refused ({@code 2004}): there are no system keys.
 * </ul>
 *
 * <h2>Durable storage</h2>
 *
 * This class is also the transaction engine of durable embedded backends: built with a {@link
 * Builder#storage Storage}, it starts from the storage's data and acknowledges (and publishes) a
 * commit only once the storage has made it durable, concurrent commits sharing one sync. Reads are
 * still served from the in-memory index. {@code io.dgen.backend.rocksdb.RocksDbBackend} is such a
 * backend.
 *
 * <h2>Threading</h2>
 *
 * Thread-safe. Reads never block; commits serialize on one short lock. Watch futures are completed
 * on the {@linkplain Builder#executor executor}, never while the store is locked.
 */
public final class MemoryBackend implements Backend {

  private final MemoryStore store;
  private final @Nullable Storage storage;
  private final Stats stats = new Stats();
  private final Faults faults = new Faults();
  private final Directories directories;
  private final Executor executor;
  private final Executor delayedCommits;
  private final long initialRetryDelayNanos;
  private final long maxRetryDelayNanos;
  private final int retryLimit;
  private volatile boolean closed;

  private MemoryBackend(Builder b) {
    this.executor = b.executor != null ? b.executor : DefaultExecutor.INSTANCE;
    this.delayedCommits = new SerialExecutor(executor);
    this.storage = b.storage;
    this.store = new MemoryStore(b.ticker, stats, faults, executor, b.maxWatches, b.storage);
    this.initialRetryDelayNanos = b.initialRetryDelay.toNanos();
    this.maxRetryDelayNanos = b.maxRetryDelay.toNanos();
    this.retryLimit = b.retryLimit;
    this.directories = new Directories(this, 20 + ThreadLocalRandom.current().nextInt(100));
  }

  /**
   * Creates a backend with the default settings (see {@link Builder}).
   *
   * @return a new, empty backend
   */
  public static MemoryBackend create() {
    return builder().build();
  }

  /**
   * Returns a builder for a backend with non-default settings.
   *
   * @return a new builder
   */
  public static Builder builder() {
    return new Builder();
  }

  // ---------------------------------------------------------------- run

  /**
   * {@inheritDoc}
   *
   * <p>Retries with FoundationDB's backoff: a uniformly random fraction of a delay that starts at
   * {@link Builder#initialRetryDelay} and doubles after each retry up to {@link
   * Builder#maxRetryDelay}; {@code transaction_too_old} and {@code future_version} wait a fixed
   * {@code min(10 ms, maxRetryDelay)}. The waiting happens on the calling thread.
   *
   * @throws IllegalStateException if the backend is closed
   */
  @Override
  public <T> T run(Function<? super Transaction, ? extends T> body) {
    Objects.requireNonNull(body, "body");
    checkOpen();
    stats.runs.increment();
    Backoff backoff = null;
    int retries = 0;
    int lastCode = 0;
    UUID runId = RunIds.next();
    for (; ; ) {
      MemoryTransaction tx = newAttempt(runId, retries + 1, lastCode);
      BackendException failure;
      try {
        T result = body.apply(tx);
        tx.commit();
        return result;
      } catch (RuntimeException e) {
        tx.abandon();
        failure = retryable(e, retries);
        if (failure == null) {
          throw rethrown(e);
        }
      } catch (Error e) {
        tx.abandon();
        throw e;
      }
      if (backoff == null) {
        backoff = new Backoff(initialRetryDelayNanos, maxRetryDelayNanos);
      }
      long delay = backoff.next(failure.code());
      lastCode = failure.code();
      if (delay > 0) {
        try {
          TimeUnit.NANOSECONDS.sleep(delay);
        } catch (InterruptedException ie) {
          Thread.currentThread().interrupt();
          throw failure;
        }
      }
      checkOpen();
      retries++;
      stats.transactionsRetried.increment();
    }
  }

  /** The error to retry, or null if {@code e} ends the run. */
  private @Nullable BackendException retryable(Throwable e, int retries) {
    if (Futures.unwrap(e) instanceof BackendException be
        && be.isRetryable()
        && (retryLimit < 0 || retries < retryLimit)) {
      return be;
    }
    return null;
  }

  private static RuntimeException rethrown(RuntimeException e) {
    return Futures.unwrap(e) instanceof BackendException be ? be : e;
  }

  /**
   * {@inheritDoc}
   *
   * <p>The first attempt's body runs on the calling thread; retries run on the {@linkplain
   * Builder#executor executor} after the backoff of {@link #run}, which never blocks a thread. A
   * commit that waits out {@linkplain Faults#commitLatency injected latency} holds no thread while
   * it waits; such commits then finish one at a time on one of the executor's threads (they
   * serialize on the store anyway), and the returned futures complete there: keep what runs in
   * their callbacks short. A closed backend returns a future failed with {@link
   * IllegalStateException}.
   */
  @Override
  public <T> CompletableFuture<T> runAsync(
      Function<? super Transaction, ? extends CompletableFuture<? extends T>> body) {
    Objects.requireNonNull(body, "body");
    if (closed) {
      return CompletableFuture.failedFuture(new IllegalStateException("backend is closed"));
    }
    stats.runs.increment();
    CompletableFuture<T> result = new CompletableFuture<>();
    new AsyncRun<T>(body, result).attempt();
    return result;
  }

  private final class AsyncRun<T> {
    private final Function<? super Transaction, ? extends CompletableFuture<? extends T>> body;
    private final CompletableFuture<T> result;
    private @Nullable Backoff backoff;
    private int retries;
    private int lastCode;
    private final UUID runId = RunIds.next();

    AsyncRun(
        Function<? super Transaction, ? extends CompletableFuture<? extends T>> body,
        CompletableFuture<T> result) {
      this.body = body;
      this.result = result;
    }

    void attempt() {
      if (closed) {
        result.completeExceptionally(new IllegalStateException("backend is closed"));
        return;
      }
      MemoryTransaction tx = newAttempt(runId, retries + 1, lastCode);
      CompletableFuture<? extends T> f;
      try {
        f = Objects.requireNonNull(body.apply(tx), "runAsync body returned null");
      } catch (Throwable t) {
        failed(tx, t);
        return;
      }
      f.whenComplete(
          (value, t) -> {
            if (t != null) {
              failed(tx, t);
              return;
            }
            tx.commitAsync(delayedCommits)
                .whenComplete(
                    (ignored, ct) -> {
                      if (ct != null) {
                        failed(tx, ct);
                      } else {
                        result.complete(value);
                      }
                    });
          });
    }

    private void failed(MemoryTransaction tx, Throwable t) {
      tx.abandon();
      Throwable cause = Futures.unwrap(t);
      BackendException retry = retryable(cause, retries);
      if (retry == null) {
        result.completeExceptionally(cause);
        return;
      }
      if (backoff == null) {
        backoff = new Backoff(initialRetryDelayNanos, maxRetryDelayNanos);
      }
      long delay = backoff.next(retry.code());
      lastCode = retry.code();
      retries++;
      stats.transactionsRetried.increment();
      Executor next =
          delay > 0
              ? CompletableFuture.delayedExecutor(delay, TimeUnit.NANOSECONDS, executor)
              : executor;
      try {
        next.execute(this::attempt);
      } catch (RuntimeException e) {
        result.completeExceptionally(e);
      }
    }
  }

  private MemoryTransaction newAttempt(UUID runId, int attempt, int retriedAfter) {
    stats.transactionsStarted.increment();
    return new MemoryTransaction(store, stats, faults, runId, attempt, retriedAfter);
  }

  private void checkOpen() {
    if (closed) {
      throw new IllegalStateException("backend is closed");
    }
  }

  /** FoundationDB's retry delay: uniform(0, b), b doubling up to the maximum. */
  private static final class Backoff {
    private static final long TOO_OLD_DELAY_NANOS = TimeUnit.MILLISECONDS.toNanos(10);
    private long current;
    private final long max;

    Backoff(long initial, long max) {
      this.current = initial;
      this.max = max;
    }

    long next(int code) {
      if (code == BackendException.TRANSACTION_TOO_OLD || code == BackendException.FUTURE_VERSION) {
        return Math.min(TOO_OLD_DELAY_NANOS, max);
      }
      long b = current;
      current = Math.min(b * 2, max);
      return (long) (ThreadLocalRandom.current().nextDouble() * b);
    }
  }

  // ---------------------------------------------------------------- directories

  /**
   * {@inheritDoc}
   *
   * <p>Runs its own transaction. Missing parent directories are created too, each with its own
   * prefix. Prefixes are short packed tuple integers counted from a random start.
   *
   * @throws IllegalStateException if the backend is closed
   */
  @Override
  public Subspace directory(String... path) {
    return directories.createOrOpen(path);
  }

  /**
   * {@inheritDoc}
   *
   * @throws IllegalArgumentException if the path is empty or has an empty element
   * @throws IllegalStateException if the backend is closed
   */
  @Override
  public Optional<Subspace> openDirectory(String... path) {
    return directories.open(path);
  }

  /**
   * {@inheritDoc}
   *
   * @throws IllegalArgumentException if the path is empty or has an empty element
   * @throws IllegalStateException if the backend is closed
   */
  @Override
  public boolean removeDirectory(String... path) {
    return directories.remove(path);
  }

  /**
   * {@inheritDoc}
   *
   * @throws IllegalStateException if the backend is closed
   */
  @Override
  public List<String> listDirectories(String... parent) {
    return directories.list(parent);
  }

  // ---------------------------------------------------------------- test support

  /**
   * Returns the fault injector of this backend. Faults apply to commits of every thread, from the
   * next commit on, until used up or {@linkplain Faults#reset() reset}.
   *
   * @return this backend's fault injector (always the same object)
   */
  public Faults faults() {
    return faults;
  }

  /**
   * Returns a snapshot of the cost counters, counted since creation or the last {@link
   * #resetCounters()}. Cheap: the counters are striped adders, summed here.
   *
   * @return an immutable snapshot; subtract two with {@link Counters#minus}
   */
  public Counters counters() {
    return stats.snapshot();
  }

  /**
   * Sets every cost counter to zero. Counts made concurrently with the reset may be lost; prefer
   * {@link Counters#minus} when other threads are running.
   */
  public void resetCounters() {
    stats.reset();
  }

  /**
   * The number of watches this backend handed out that have not fired, failed or been cancelled
   * yet: each holds one of the {@linkplain Builder#maxWatches max watches} slots until then, as
   * FoundationDB's client does (see {@code FdbBackend.pendingWatches()}).
   *
   * @return the number of pending watches
   */
  public int pendingWatches() {
    return store.outstandingWatches();
  }

  /**
   * The number of keys whose versions the engine holds in memory. Without a storage, or with one
   * that is not a {@link PagedStorage}, that is every key (and recently deleted ones); with a paged
   * storage, only the keys written in the last few seconds or still needed by a reader's version.
   * Counts them one by one: for tests and diagnostics, not for a hot path.
   *
   * @return the number of keys held in memory
   */
  public int keysInMemory() {
    return store.data.size();
  }

  /** The store, for this package's tests. */
  MemoryStore store() {
    return store;
  }

  /**
   * {@inheritDoc}
   *
   * <p>Idempotent. Attempts already running may still commit; their watches fail with {@code
   * transaction_cancelled (1025)} instead of being armed. The data is dropped with the object.
   */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    store.close();
    if (storage != null) {
      storage.close();
    }
  }

  @Override
  public String toString() {
    return "MemoryBackend{version=" + store.visibleVersion() + ", closed=" + closed + "}";
  }

  // ---------------------------------------------------------------- nested API types

  /**
   * Builds a {@link MemoryBackend}. Setters validate their argument at once and throw {@link
   * IllegalArgumentException}; {@link #build()} checks the combination. Not thread-safe.
   */
  public static final class Builder {
    private LongSupplier ticker = System::nanoTime;
    private int maxWatches = 10_000;
    private Duration initialRetryDelay = Duration.ofMillis(1);
    private Duration maxRetryDelay = Duration.ofSeconds(1);
    private int retryLimit = -1;
    private @Nullable Executor executor;
    private @Nullable Storage storage;

    private Builder() {}

    /**
     * Keeps committed data in {@code storage} instead of only in memory: the backend starts from
     * the storage's data and acknowledges a commit only once the storage has made it durable. Used
     * by durable backends built on this engine (such as the RocksDB backend); {@link
     * MemoryBackend#close()} closes the storage.
     *
     * @param storage the durable store, owned by the backend from now on
     * @return this builder
     */
    public Builder storage(Storage storage) {
      this.storage = Objects.requireNonNull(storage, "storage");
      return this;
    }

    /**
     * Sets the clock that measures transaction age for {@code transaction_too_old (1007)}: a
     * monotonic nanosecond source like {@link System#nanoTime()} (the default). Tests inject a fake
     * clock to age transactions without waiting.
     *
     * @param nanoTime a monotonic clock in nanoseconds
     * @return this builder
     */
    public Builder ticker(LongSupplier nanoTime) {
      this.ticker = Objects.requireNonNull(nanoTime, "nanoTime");
      return this;
    }

    /**
     * Sets how many watches may be outstanding (created and neither fired, failed nor cancelled) at
     * once; beyond it a new watch's future fails with {@code too_many_watches (1032)}. Default
     * 10,000, FoundationDB's default.
     *
     * @param maxWatches the limit, from 0 to 1,000,000
     * @return this builder
     * @throws IllegalArgumentException if out of range
     */
    public Builder maxWatches(int maxWatches) {
      if (maxWatches < 0 || maxWatches > 1_000_000) {
        throw new IllegalArgumentException(
            "maxWatches must be in [0, 1000000]: maxWatches=" + maxWatches);
      }
      this.maxWatches = maxWatches;
      return this;
    }

    /**
     * Sets the first retry delay bound of {@link MemoryBackend#run}'s backoff (FoundationDB uses 10
     * ms; the memory backend defaults to 1 ms so heavily contended tests finish quickly). Zero
     * disables the backoff of conflicts.
     *
     * @param delay a non-negative delay
     * @return this builder
     * @throws IllegalArgumentException if negative
     */
    public Builder initialRetryDelay(Duration delay) {
      this.initialRetryDelay = nonNegative(delay, "initialRetryDelay");
      return this;
    }

    /**
     * Sets the largest retry delay bound of {@link MemoryBackend#run}'s backoff. Default 1 s, as
     * FoundationDB's {@code max_retry_delay}.
     *
     * @param delay a non-negative delay
     * @return this builder
     * @throws IllegalArgumentException if negative
     */
    public Builder maxRetryDelay(Duration delay) {
      this.maxRetryDelay = nonNegative(delay, "maxRetryDelay");
      return this;
    }

    /**
     * Sets how many times {@link MemoryBackend#run} retries one body; once they are used up, the
     * next retryable error is rethrown as is. Default: unlimited.
     *
     * @param retryLimit a non-negative number of retries
     * @return this builder
     * @throws IllegalArgumentException if negative
     */
    public Builder retryLimit(int retryLimit) {
      if (retryLimit < 0) {
        throw new IllegalArgumentException("retryLimit must not be negative: " + retryLimit);
      }
      this.retryLimit = retryLimit;
      return this;
    }

    /**
     * Sets the executor that completes watch futures and runs the retries of {@link
     * MemoryBackend#runAsync}. Default: a shared pool of daemon threads that grows on demand and
     * keeps no thread while idle (as fdb-java's default executor). An inline executor ({@code
     * Runnable::run}) makes watch completion synchronous with the commit that fires it (useful in
     * tests) but runs delayed {@code runAsync} retries on the JDK's shared delay thread.
     *
     * @param executor the executor
     * @return this builder
     */
    public Builder executor(Executor executor) {
      this.executor = Objects.requireNonNull(executor, "executor");
      return this;
    }

    /**
     * Builds the backend.
     *
     * @return a new, empty backend
     * @throws IllegalArgumentException if the initial retry delay exceeds the maximum
     */
    public MemoryBackend build() {
      if (initialRetryDelay.compareTo(maxRetryDelay) > 0) {
        throw new IllegalArgumentException(
            "initialRetryDelay must not exceed maxRetryDelay: initialRetryDelay="
                + initialRetryDelay
                + " maxRetryDelay="
                + maxRetryDelay);
      }
      return new MemoryBackend(this);
    }

    private static Duration nonNegative(Duration d, String name) {
      Objects.requireNonNull(d, name);
      if (d.isNegative()) {
        throw new IllegalArgumentException(name + " must not be negative: " + d);
      }
      return d;
    }
  }

  /**
   * Fault injection for tests of retry, idempotency and at-least-once behaviour. Faults apply only
   * to commits that write (read-only commits never reach FoundationDB's resolver either); each
   * setter replaces the previous setting of the same fault.
   *
   * <p>Thread-safe: faults may be set while other threads run transactions.
   */
  public static final class Faults {
    static final int UNKNOWN_NONE = 0;
    static final int UNKNOWN_NOT_APPLIED = 1;
    static final int UNKNOWN_APPLIED = 2;

    private final AtomicInteger forcedConflicts = new AtomicInteger();
    private final AtomicInteger unknownResults = new AtomicInteger();
    private volatile boolean unknownApplied;
    private volatile long latencyNanos;

    private Faults() {}

    /**
     * Makes the next {@code n} writing commits fail with {@code not_committed (1020)} without
     * applying anything, as if each had conflicted ({@link Counters#conflicts()} counts them).
     *
     * @param n how many commits fail; 0 cancels the fault
     * @return this object
     * @throws IllegalArgumentException if {@code n} is negative
     */
    public Faults failNextCommits(int n) {
      forcedConflicts.set(requireCount(n));
      return this;
    }

    /**
     * Makes the next {@code n} writing commits that would succeed raise {@code
     * commit_unknown_result (1021)}, either after applying their writes ({@code applied}, the case
     * that makes {@link Backend#run} execute a committed body again) or without applying them.
     * Commits that fail for another reason do not use up the fault.
     *
     * @param n how many commits raise 1021; 0 cancels the fault
     * @param applied whether those commits apply their writes before raising
     * @return this object
     * @throws IllegalArgumentException if {@code n} is negative
     */
    public Faults commitUnknownResult(int n, boolean applied) {
      requireCount(n);
      synchronized (this) {
        unknownApplied = applied;
        unknownResults.set(n);
      }
      return this;
    }

    /**
     * Makes every writing commit wait {@code latency} before it is resolved and applied, as a round
     * trip to a cluster would. {@link Backend#run} waits on its own thread; {@link
     * Backend#runAsync} waits without holding a thread. The store is not locked while waiting.
     *
     * @param latency the added latency; zero removes it
     * @return this object
     * @throws IllegalArgumentException if negative
     */
    public Faults commitLatency(Duration latency) {
      Objects.requireNonNull(latency, "latency");
      if (latency.isNegative()) {
        throw new IllegalArgumentException("latency must not be negative: " + latency);
      }
      latencyNanos = latency.toNanos();
      return this;
    }

    /**
     * Removes every fault.
     *
     * @return this object
     */
    public Faults reset() {
      forcedConflicts.set(0);
      commitUnknownResult(0, false);
      latencyNanos = 0;
      return this;
    }

    private static int requireCount(int n) {
      if (n < 0) {
        throw new IllegalArgumentException("n must not be negative: " + n);
      }
      return n;
    }

    boolean takeForcedConflict() {
      return take(forcedConflicts);
    }

    int takeUnknownResult() {
      if (!take(unknownResults)) {
        return UNKNOWN_NONE;
      }
      return unknownApplied ? UNKNOWN_APPLIED : UNKNOWN_NOT_APPLIED;
    }

    long latencyNanos() {
      return latencyNanos;
    }

    private static boolean take(AtomicInteger counter) {
      for (; ; ) {
        int c = counter.get();
        if (c <= 0) {
          return false;
        }
        if (counter.compareAndSet(c, c - 1)) {
          return true;
        }
      }
    }

    @Override
    public String toString() {
      return "Faults{failNextCommits="
          + forcedConflicts.get()
          + ", commitUnknownResult="
          + unknownResults.get()
          + (unknownApplied ? " applied" : " not applied")
          + ", commitLatencyNanos="
          + latencyNanos
          + "}";
    }
  }

  /**
   * An immutable snapshot of a backend's cost counters: machine-independent measures of what a
   * workload costs (transactions, reads, bytes), which benchmarks report per message.
   *
   * @param runs calls of {@link MemoryBackend#run} and {@link MemoryBackend#runAsync} (directory
   *     operations included)
   * @param transactionsStarted transaction attempts begun, retries included
   * @param transactionsCommitted commits that wrote and succeeded
   * @param readOnlyCommits commits of attempts that wrote nothing
   * @param transactionsRetried attempts that {@code run}/{@code runAsync} retried after a retryable
   *     error
   * @param conflicts {@code not_committed (1020)} errors raised, injected ones included
   * @param keysRead single-key reads that reached the store (watches' reads included; reads
   *     answered from the attempt's own writes are not)
   * @param rangesRead range reads that reached the store
   * @param rowsRead rows the store returned to range reads
   * @param bytesRead key and value bytes the store returned to reads (a missing key's length counts
   *     for single-key reads)
   * @param bytesWritten key and value bytes of applied writes (the bounds of a range clear, the key
   *     of a cleared key)
   * @param watchesArmed watches registered by a successful commit
   * @param watchesFired watches completed because their key's value changed
   */
  public record Counters(
      long runs,
      long transactionsStarted,
      long transactionsCommitted,
      long readOnlyCommits,
      long transactionsRetried,
      long conflicts,
      long keysRead,
      long rangesRead,
      long rowsRead,
      long bytesRead,
      long bytesWritten,
      long watchesArmed,
      long watchesFired) {

    /**
     * Returns the difference {@code this - earlier}, counter by counter: the cost of what ran in
     * between.
     *
     * @param earlier an earlier snapshot of the same backend
     * @return the per-counter differences
     */
    public Counters minus(Counters earlier) {
      return new Counters(
          runs - earlier.runs,
          transactionsStarted - earlier.transactionsStarted,
          transactionsCommitted - earlier.transactionsCommitted,
          readOnlyCommits - earlier.readOnlyCommits,
          transactionsRetried - earlier.transactionsRetried,
          conflicts - earlier.conflicts,
          keysRead - earlier.keysRead,
          rangesRead - earlier.rangesRead,
          rowsRead - earlier.rowsRead,
          bytesRead - earlier.bytesRead,
          bytesWritten - earlier.bytesWritten,
          watchesArmed - earlier.watchesArmed,
          watchesFired - earlier.watchesFired);
    }
  }

  /** fdb-java's default executor model: cached daemon threads, none kept while idle. */
  private static final class DefaultExecutor {
    private static final AtomicInteger THREADS = new AtomicInteger();
    static final ExecutorService INSTANCE =
        Executors.newCachedThreadPool(
            r -> {
              Thread t = new Thread(r, "dgen-memory-" + THREADS.incrementAndGet());
              t.setDaemon(true);
              return t;
            });

    private DefaultExecutor() {}
  }
}
