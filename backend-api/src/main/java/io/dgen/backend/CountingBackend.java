package io.dgen.backend;

import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * A {@link Backend} decorator that counts what the code above it asks of the store: runs, attempts,
 * commits, retries, reads, bytes and watches. The counts are machine-independent measures of what a
 * workload costs, the same over any backend; benchmarks and tests compare them before and after a
 * piece of work.
 *
 * <pre>{@code
 * CountingBackend backend = CountingBackend.wrap(FdbBackend.open(clusterFile));
 * CountingBackend.Counters before = backend.counters();
 * ref.cast(message);
 * CountingBackend.Counters cost = backend.counters().minus(before);  // 1 run, 1 commit, ...
 * }</pre>
 *
 * <h2>What is counted</h2>
 *
 * Everything is counted where this backend sees it: at the calls made through it. A read answered
 * from the attempt's own writes counts as a read here (the memory backend's own counters leave such
 * reads out), and the outcome of an attempt is known only through its run: an attempt is retried
 * when its run starts another one, and committed when its run returns after it. {@linkplain
 * #directory Directory operations} are not counted. See {@link Counters} for each counter.
 *
 * <h2>Threading</h2>
 *
 * Thread-safe, like the backend it wraps; the counters are striped adders, cheap to update from
 * many threads. Closing this backend closes the wrapped one.
 */
public final class CountingBackend extends ForwardingBackend {

  private final LongAdder runs = new LongAdder();
  private final LongAdder transactionsStarted = new LongAdder();
  private final LongAdder transactionsCommitted = new LongAdder();
  private final LongAdder readOnlyCommits = new LongAdder();
  private final LongAdder transactionsRetried = new LongAdder();
  private final LongAdder keysRead = new LongAdder();
  private final LongAdder rangesRead = new LongAdder();
  private final LongAdder rowsRead = new LongAdder();
  private final LongAdder bytesRead = new LongAdder();
  private final LongAdder bytesWritten = new LongAdder();
  private final LongAdder watchesArmed = new LongAdder();
  private final LongAdder watchesFired = new LongAdder();
  private final java.util.concurrent.atomic.AtomicLong mostWrites =
      new java.util.concurrent.atomic.AtomicLong();

  private CountingBackend(Backend delegate) {
    super(delegate);
  }

  /**
   * Wraps {@code backend}; every counter starts at zero.
   *
   * @param backend the backend to wrap; closed with this one
   * @return the counting backend
   */
  public static CountingBackend wrap(Backend backend) {
    return new CountingBackend(backend);
  }

  /**
   * Returns a snapshot of the counters since this backend was created. Subtract two snapshots with
   * {@link Counters#minus} to get the cost of what ran in between.
   *
   * @return an immutable snapshot
   */
  public Counters counters() {
    return new Counters(
        runs.sum(),
        transactionsStarted.sum(),
        transactionsCommitted.sum(),
        readOnlyCommits.sum(),
        transactionsRetried.sum(),
        keysRead.sum(),
        rangesRead.sum(),
        rowsRead.sum(),
        bytesRead.sum(),
        bytesWritten.sum(),
        watchesArmed.sum(),
        watchesFired.sum());
  }

  /**
   * The most writes (sets, clears, range clears, atomic operations, versionstamped writes) one
   * committed attempt made since this backend was created or {@link #resetMostWritesPerCommit}:
   * what bounds a transaction's size, whatever the total.
   *
   * @return the largest number of writes of one committed attempt
   */
  public long mostWritesPerCommit() {
    return mostWrites.get();
  }

  /** Starts {@link #mostWritesPerCommit} again from zero. */
  public void resetMostWritesPerCommit() {
    mostWrites.set(0);
  }

  /** {@inheritDoc} <b>The body may execute more than once.</b> */
  @Override
  public <T> T run(Function<? super Transaction, ? extends T> body) {
    Objects.requireNonNull(body, "body");
    runs.increment();
    Run run = new Run();
    T result = delegate.run(tx -> body.apply(run.begin(tx)));
    run.committed();
    return result;
  }

  /** {@inheritDoc} <b>The body may execute more than once.</b> */
  @Override
  public <T> CompletableFuture<T> runAsync(
      Function<? super Transaction, ? extends CompletableFuture<? extends T>> body) {
    Objects.requireNonNull(body, "body");
    runs.increment();
    Run run = new Run();
    return delegate
        .<T>runAsync(tx -> body.apply(run.begin(tx)))
        .thenApply(
            value -> {
              run.committed();
              return value;
            });
  }

  @Override
  public String toString() {
    return "CountingBackend{" + counters() + ", delegate=" + delegate + "}";
  }

  private CompletableFuture<byte @Nullable []> countGet(
      byte[] key, CompletableFuture<byte @Nullable []> read) {
    keysRead.increment();
    read.thenAccept(v -> bytesRead.add(v == null ? key.length : key.length + v.length));
    return read;
  }

  private CompletableFuture<List<KeyValue>> countRange(CompletableFuture<List<KeyValue>> read) {
    rangesRead.increment();
    read.thenAccept(
        rows -> {
          long bytes = 0;
          for (KeyValue row : rows) {
            bytes += row.key().length + row.value().length;
          }
          rowsRead.add(rows.size());
          bytesRead.add(bytes);
        });
    return read;
  }

  /** One call of {@link #run} or {@link #runAsync}: its attempts, of which the last counts. */
  private final class Run {
    private @Nullable Attempt last;

    synchronized Attempt begin(Transaction tx) {
      transactionsStarted.increment();
      if (last != null) {
        transactionsRetried.increment();
      }
      Attempt attempt = new Attempt(tx);
      last = attempt;
      return attempt;
    }

    /** The run returned: its last attempt committed. */
    synchronized void committed() {
      Attempt attempt = last;
      if (attempt == null) {
        return;
      }
      if (attempt.wrote) {
        transactionsCommitted.increment();
        bytesWritten.add(attempt.bytesWritten);
        mostWrites.accumulateAndGet(attempt.writes, Math::max);
      } else {
        readOnlyCommits.increment();
      }
      watchesArmed.add(attempt.watches);
    }
  }

  /** One attempt, counting its reads, writes and watches. */
  private final class Attempt extends ForwardingTransaction {
    private final ReadTransaction snapshot;
    private volatile boolean wrote;
    private long bytesWritten;
    private long writes;
    private volatile int watches;

    Attempt(Transaction delegate) {
      super(delegate);
      this.snapshot = new SnapshotView(delegate.snapshot());
    }

    @Override
    void wrote(long bytes) {
      wrote = true;
      bytesWritten += bytes;
      if (bytes > 0) {
        writes++; // not a conflict range
      }
    }

    @Override
    public CompletableFuture<byte @Nullable []> getAsync(byte[] key) {
      return countGet(key, delegate.getAsync(key));
    }

    @Override
    public byte @Nullable [] get(byte[] key) {
      return Futures.join(getAsync(key));
    }

    @Override
    public CompletableFuture<List<KeyValue>> getRangeAsync(
        byte[] begin, byte[] end, int limit, boolean reverse) {
      return countRange(delegate.getRangeAsync(begin, end, limit, reverse));
    }

    @Override
    public List<KeyValue> getRange(byte[] begin, byte[] end, int limit, boolean reverse) {
      return Futures.join(getRangeAsync(begin, end, limit, reverse));
    }

    @Override
    public List<KeyValue> getRange(byte[] begin, byte[] end) {
      return getRange(begin, end, UNLIMITED, false);
    }

    @Override
    public ReadTransaction snapshot() {
      return snapshot;
    }

    @Override
    public CompletableFuture<Void> watch(byte[] key) {
      keysRead.increment();
      CompletableFuture<Void> watch = delegate.watch(key);
      synchronized (this) {
        watches++;
      }
      watch.thenRun(watchesFired::increment);
      return watch;
    }
  }

  /** The snapshot view of an attempt, counting its reads. */
  private final class SnapshotView implements ReadTransaction {
    private final ReadTransaction delegate;

    SnapshotView(ReadTransaction delegate) {
      this.delegate = delegate;
    }

    @Override
    public CompletableFuture<byte @Nullable []> getAsync(byte[] key) {
      return countGet(key, delegate.getAsync(key));
    }

    @Override
    public CompletableFuture<List<KeyValue>> getRangeAsync(
        byte[] begin, byte[] end, int limit, boolean reverse) {
      return countRange(delegate.getRangeAsync(begin, end, limit, reverse));
    }

    @Override
    public long getReadVersion() {
      return delegate.getReadVersion();
    }

    @Override
    public CompletableFuture<Long> getReadVersionAsync() {
      return delegate.getReadVersionAsync();
    }

    @Override
    public boolean isSnapshot() {
      return true;
    }
  }

  /**
   * An immutable snapshot of a {@link CountingBackend}'s counters.
   *
   * @param runs calls of {@link #run} and {@link #runAsync}
   * @param transactionsStarted attempts begun (bodies executed), retries included
   * @param transactionsCommitted runs that returned after an attempt that wrote: writing commits
   * @param readOnlyCommits runs that returned after an attempt that wrote nothing
   * @param transactionsRetried attempts after which their run began another one
   * @param keysRead single-key reads issued, serializable or snapshot, watches included
   * @param rangesRead range reads issued
   * @param rowsRead rows returned by range reads
   * @param bytesRead key and value bytes returned (a missing key's length counts for single-key
   *     reads)
   * @param bytesWritten key and value bytes of the writes of committed attempts (the bounds of a
   *     range clear, the key of a cleared key, 8 bytes for an atomic add's operand)
   * @param watchesArmed watches created by attempts that committed
   * @param watchesFired watches that completed because their key changed
   */
  public record Counters(
      long runs,
      long transactionsStarted,
      long transactionsCommitted,
      long readOnlyCommits,
      long transactionsRetried,
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
          keysRead - earlier.keysRead,
          rangesRead - earlier.rangesRead,
          rowsRead - earlier.rowsRead,
          bytesRead - earlier.bytesRead,
          bytesWritten - earlier.bytesWritten,
          watchesArmed - earlier.watchesArmed,
          watchesFired - earlier.watchesFired);
    }
  }
}
