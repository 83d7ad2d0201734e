package io.dgen.backend;

import com.apple.foundationdb.tuple.Tuple;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * A {@link Backend} decorator that injects the failures FoundationDB produces only under load or
 * network trouble, over any backend: forced conflicts, {@code commit_unknown_result} with or
 * without the commit applied, commit latency and transactions too old to commit. Tests use it to
 * prove retry, idempotency and at-least-once guarantees on the real engine as well as on the memory
 * backend.
 *
 * <pre>{@code
 * FaultInjectingBackend backend = FaultInjectingBackend.wrap(FdbBackend.open(clusterFile));
 * backend.commitUnknownResult(1, true);    // the next writing commit applies, then raises 1021
 * backend.run(tx -> { ... });              // the body runs twice, as FoundationDB would run it
 * }</pre>
 *
 * <h2>How faults are injected</h2>
 *
 * Faults apply to attempts that write (read-only commits never reach FoundationDB's resolver), from
 * the next commit on, on every thread, until used up or {@linkplain #reset() reset}. They are
 * raised from inside the wrapped backend's attempt, after the body returned and before the real
 * commit, so the wrapped backend's own retry loop handles them exactly as it handles the real
 * errors: a forced {@code not_committed (1020)}, a {@code commit_unknown_result (1021)} that did
 * not apply and a {@code transaction_too_old (1007)} abandon the attempt (nothing applies) and the
 * wrapped loop retries after its backoff. A {@code commit_unknown_result} that <em>did</em> apply
 * lets the real commit happen, then runs the body again as the next attempt of the same run:
 * FoundationDB's behaviour after a 1021 whose commit went through. A failure of a commit that
 * applied ({@link #failCommits} with {@code applied}, {@link #interruptAfterCommit}) also lets the
 * real commit happen, then ends the run with the error instead of its result.
 *
 * <p>To make that last case faithful, this backend numbers the attempts itself: every attempt of
 * one {@link #run} reports the same {@link Transaction#runId()} and consecutive {@link
 * Transaction#attempt()} numbers, across the wrapped backend's retries and the re-runs after an
 * applied 1021, so a body that guards itself with a marker keyed by its run id sees its earlier
 * commit. Watches and versionstamps of an attempt that failed by injection fail as FoundationDB's
 * do: a watch with the injected error, a versionstamp with {@code transaction_invalid_version
 * (2020)}.
 *
 * <p>Commit latency is added before each writing commit: {@link #run} waits on its own thread,
 * {@link #runAsync} waits without holding one. {@link #advanceClock} ages attempts that are open
 * now without waiting: one that becomes older than five seconds fails its writing commit with 1007
 * (its reads are not affected; a read-only attempt commits). {@link #readVersionLatency} delays
 * every attempt's read version, which, as on FoundationDB, it gets at its first read (or at its
 * commit if it reads nothing): the body runs at once and its reads wait, as on a cluster that is
 * slow to answer or does not answer at all. {@link #failReads} fails reads of a key range, and
 * {@link #commitUnknownResultLate} lets a commit reported as {@code commit_unknown_result} land
 * later, after the run's next attempt has read.
 *
 * <h2>Threading</h2>
 *
 * Thread-safe, like the backend it wraps; faults may be set while other threads run transactions.
 * Closing this backend closes the wrapped one.
 */
public final class FaultInjectingBackend extends ForwardingBackend {

  /** FoundationDB's transaction lifetime: a writing attempt older than this fails with 1007. */
  private static final long MAX_LIFE_NANOS = TimeUnit.SECONDS.toNanos(5);

  /** The {@code afterCommitCode} of a plan that interrupts rather than raising an error code. */
  private static final int INTERRUPT = -1;

  private final AtomicReference<Plan> plan = new AtomicReference<>(Plan.NONE);
  private final AtomicReference<ReadFault> readFault = new AtomicReference<>(ReadFault.NONE);
  private final AtomicReference<@Nullable Runnable> afterAppliedUnknownResult =
      new AtomicReference<>();
  private final AtomicLong clockOffsetNanos = new AtomicLong();
  private volatile long readVersionLatencyNanos;

  private FaultInjectingBackend(Backend delegate) {
    super(delegate);
  }

  /**
   * Wraps {@code backend}. Without faults set, the result behaves exactly as {@code backend},
   * except that run ids and attempt numbers are this backend's.
   *
   * @param backend the backend to wrap; closed with this one
   * @return a backend with no fault set yet
   */
  public static FaultInjectingBackend wrap(Backend backend) {
    return new FaultInjectingBackend(backend);
  }

  /**
   * Makes the next {@code n} writing commits fail with {@code not_committed (1020)} without
   * applying anything, as a conflict would.
   *
   * @param n how many commits fail; 0 cancels the fault
   * @return this backend
   * @throws IllegalArgumentException if {@code n} is negative
   */
  public FaultInjectingBackend failNextCommits(int n) {
    requireCount(n);
    plan.updateAndGet(p -> p.withCommon(n, p.unknownResults, p.unknownApplied, p.latencyNanos));
    return this;
  }

  /**
   * Makes the next {@code n} writing commits end their run with {@code code}, either after applying
   * their writes ({@code applied}) or without applying them, as FoundationDB does when a
   * transaction's timeout ({@code transaction_timed_out (1031)}) elapses, or the transaction is
   * cancelled ({@code 1025}), while its commit is under way: the commit may have applied, and the
   * run does not retry. Versionstamps and watches of such an attempt fail with {@code code}. A
   * retryable {@code code} is retried by the wrapped backend like any other error (only when it was
   * raised without applying).
   *
   * @param n how many commits fail; 0 cancels the fault
   * @param code the error code to raise, e.g. {@link BackendException#TRANSACTION_TIMED_OUT}
   * @param applied whether those commits apply their writes before failing
   * @return this backend
   * @throws IllegalArgumentException if {@code n} is negative or {@code code} is not positive
   */
  public FaultInjectingBackend failCommits(int n, int code, boolean applied) {
    requireCount(n);
    if (code <= 0) {
      throw new IllegalArgumentException("code must be a positive error code: " + code);
    }
    plan.updateAndGet(p -> p.withAfterCommit(n, code, applied));
    return this;
  }

  /**
   * Makes every attempt wait {@code latency} for its read version, as a cluster that is slow or
   * unreachable does: the attempt gets it at its first read, {@link Transaction#getReadVersion} or
   * {@link Transaction#getReadVersionAsync}, or, if it reads nothing, before its commit; every read
   * of the attempt waits for it. Directory operations wait it too. A blocking read waits on its
   * thread (an interrupt ends the wait with {@code transaction_cancelled (1025)}); an asynchronous
   * one holds no thread.
   *
   * @param latency the added latency; zero removes it
   * @return this backend
   * @throws IllegalArgumentException if negative
   */
  public FaultInjectingBackend readVersionLatency(Duration latency) {
    Objects.requireNonNull(latency, "latency");
    if (latency.isNegative()) {
      throw new IllegalArgumentException("latency must not be negative: " + latency);
    }
    readVersionLatencyNanos = latency.toNanos();
    return this;
  }

  /**
   * Makes the next {@code n} writing commits apply their writes, then end {@link #run} as an
   * interrupt of the thread waiting for the commit does with fdb-java: the thread's interrupt flag
   * is set and a {@link CancellationException} is thrown, although the commit applied. A {@link
   * #runAsync} run, which has no waiting thread, fails with the {@link CancellationException} and
   * interrupts nobody.
   *
   * @param n how many commits are interrupted after applying; 0 cancels the fault
   * @return this backend
   * @throws IllegalArgumentException if {@code n} is negative
   */
  public FaultInjectingBackend interruptAfterCommit(int n) {
    requireCount(n);
    plan.updateAndGet(p -> p.withAfterCommit(n, INTERRUPT, true));
    return this;
  }

  /**
   * Makes the next {@code n} writing commits raise {@code commit_unknown_result (1021)}, either
   * after applying their writes ({@code applied}: the body then runs again although its first
   * execution committed) or without applying them. A commit that fails for another reason does not
   * use up the fault.
   *
   * @param n how many commits raise 1021; 0 cancels the fault
   * @param applied whether those commits apply their writes before raising
   * @return this backend
   * @throws IllegalArgumentException if {@code n} is negative
   */
  public FaultInjectingBackend commitUnknownResult(int n, boolean applied) {
    requireCount(n);
    plan.updateAndGet(p -> p.withCommon(p.conflicts, n, applied, p.latencyNanos));
    return this;
  }

  /**
   * Makes the next {@code n} writing commits raise {@code commit_unknown_result (1021)} without
   * applying, then apply their writes <em>later</em>, in a transaction of their own, right before
   * the next attempt of the same run commits (after that attempt's body has read): a commit that
   * FoundationDB had in flight and that lands after the retry began. The retry then usually fails
   * with {@code not_committed (1020)}, as it would on FoundationDB if it read anything the late
   * commit wrote, and the attempt after it sees the late commit. Versionstamped writes get the late
   * transaction's stamp.
   *
   * @param n how many commits land late; 0 cancels the fault
   * @return this backend
   * @throws IllegalArgumentException if {@code n} is negative
   */
  public FaultInjectingBackend commitUnknownResultLate(int n) {
    requireCount(n);
    plan.updateAndGet(p -> p.withLate(n));
    return this;
  }

  /**
   * Makes the next {@code n} reads (serializable or snapshot, single keys or ranges) that touch
   * {@code [begin, end)} fail with {@code code}, as reads of a cluster in trouble do; other reads
   * are not affected. A retryable {@code code} is retried by the run like any other error.
   *
   * @param begin the first key of the range (inclusive)
   * @param end the end of the range (exclusive)
   * @param n how many reads fail; 0 cancels the fault
   * @param code the error code, e.g. {@link BackendException#TRANSACTION_TIMED_OUT}
   * @return this backend
   * @throws IllegalArgumentException if {@code n} is negative or {@code code} is not positive
   */
  public FaultInjectingBackend failReads(byte[] begin, byte[] end, int n, int code) {
    requireCount(n);
    if (code <= 0) {
      throw new IllegalArgumentException("code must be a positive error code: " + code);
    }
    readFault.set(new ReadFault(begin.clone(), end.clone(), n, code));
    return this;
  }

  /**
   * Runs {@code hook} once, after the next commit that an injected {@code commit_unknown_result}
   * let apply and before the run's body runs again ({@link #commitUnknownResult} with {@code
   * applied}), on the run's thread and outside any transaction: a test can change the data between
   * the two attempts, as a concurrent client would.
   *
   * @param hook what to run
   * @return this backend
   */
  public FaultInjectingBackend afterAppliedUnknownResult(Runnable hook) {
    afterAppliedUnknownResult.set(Objects.requireNonNull(hook, "hook"));
    return this;
  }

  /**
   * Makes every writing commit wait {@code latency} first, as a slower cluster would; the attempt's
   * read version is not renewed, so its window for conflicts grows too.
   *
   * @param latency the added latency; zero removes it
   * @return this backend
   * @throws IllegalArgumentException if negative
   */
  public FaultInjectingBackend commitLatency(Duration latency) {
    Objects.requireNonNull(latency, "latency");
    if (latency.isNegative()) {
      throw new IllegalArgumentException("latency must not be negative: " + latency);
    }
    long nanos = latency.toNanos();
    plan.updateAndGet(p -> p.withCommon(p.conflicts, p.unknownResults, p.unknownApplied, nanos));
    return this;
  }

  /**
   * Ages every attempt open now by {@code d} without waiting: an attempt whose age (real time since
   * it began, plus every advance since) exceeds five seconds fails its writing commit with {@code
   * transaction_too_old (1007)}, and the run retries it with a fresh attempt. Attempts that begin
   * later are not affected.
   *
   * @param d how far to move the clock
   * @return this backend
   * @throws IllegalArgumentException if {@code d} is negative
   */
  public FaultInjectingBackend advanceClock(Duration d) {
    Objects.requireNonNull(d, "d");
    if (d.isNegative()) {
      throw new IllegalArgumentException("d must not be negative: " + d);
    }
    clockOffsetNanos.addAndGet(d.toNanos());
    return this;
  }

  /**
   * Removes every fault: pending conflicts, unknown results and failures of commits, and the
   * latencies. Attempts already waiting out a latency finish waiting.
   *
   * @return this backend
   */
  public FaultInjectingBackend reset() {
    plan.set(Plan.NONE);
    readFault.set(ReadFault.NONE);
    afterAppliedUnknownResult.set(null);
    readVersionLatencyNanos = 0;
    return this;
  }

  /**
   * {@inheritDoc}
   *
   * <p>Runs {@code body} in the wrapped backend's {@code run}, injecting the faults set; added
   * latency waits on the calling thread. <b>The body may execute more than once.</b>
   */
  @Override
  public <T> T run(Function<? super Transaction, ? extends T> body) {
    Objects.requireNonNull(body, "body");
    Run run = new Run();
    while (true) {
      T result =
          delegate.run(
              tx -> {
                Attempt attempt = run.begin(tx);
                T value = body.apply(attempt);
                attempt.waitLatency();
                Futures.join(attempt.landLate());
                attempt.injectFaults();
                return value;
              });
      RuntimeException afterCommit = run.failureAfterCommit(true);
      if (afterCommit != null) {
        throw afterCommit;
      }
      if (!run.reRunAfterAppliedUnknownResult()) {
        return result;
      }
      runHookBetweenAttempts();
    }
  }

  /**
   * {@inheritDoc}
   *
   * <p>Runs {@code body} in the wrapped backend's {@code runAsync}, injecting the faults set; added
   * latency holds no thread. <b>The body may execute more than once.</b>
   */
  @Override
  public <T> CompletableFuture<T> runAsync(
      Function<? super Transaction, ? extends CompletableFuture<? extends T>> body) {
    Objects.requireNonNull(body, "body");
    CompletableFuture<T> result = new CompletableFuture<>();
    runAsync(new Run(), body, result);
    return result;
  }

  private <T> void runAsync(
      Run run,
      Function<? super Transaction, ? extends CompletableFuture<? extends T>> body,
      CompletableFuture<T> result) {
    delegate
        .<T>runAsync(
            tx -> {
              Attempt attempt = run.begin(tx);
              CompletableFuture<? extends T> work =
                  Objects.requireNonNull(body.apply(attempt), "runAsync body returned null");
              return work.thenCompose(
                  value ->
                      attempt
                          .latency()
                          .thenCompose(ignored -> attempt.landLate())
                          .thenApply(
                              ignored -> {
                                attempt.injectFaults();
                                return value;
                              }));
            })
        .whenComplete(
            (value, failure) -> {
              RuntimeException afterCommit = failure == null ? run.failureAfterCommit(false) : null;
              if (failure != null) {
                result.completeExceptionally(Futures.unwrap(failure));
              } else if (afterCommit != null) {
                result.completeExceptionally(afterCommit);
              } else if (run.reRunAfterAppliedUnknownResult()) {
                try {
                  runHookBetweenAttempts();
                } catch (RuntimeException e) {
                  result.completeExceptionally(e);
                  return;
                }
                runAsync(run, body, result);
              } else {
                result.complete(value);
              }
            });
  }

  /** Directory operations wait out the read-version latency, as their transactions would. */
  @Override
  public com.apple.foundationdb.subspace.Subspace directory(String... path) {
    waitReadVersion();
    return super.directory(path);
  }

  @Override
  public java.util.Optional<com.apple.foundationdb.subspace.Subspace> openDirectory(
      String... path) {
    waitReadVersion();
    return super.openDirectory(path);
  }

  @Override
  public boolean removeDirectory(String... path) {
    waitReadVersion();
    return super.removeDirectory(path);
  }

  @Override
  public List<String> listDirectories(String... parent) {
    waitReadVersion();
    return super.listDirectories(parent);
  }

  private void runHookBetweenAttempts() {
    Runnable hook = afterAppliedUnknownResult.getAndSet(null);
    if (hook != null) {
      hook.run();
    }
  }

  /** The fault a read of {@code [begin, end)} is to fail with, taken from the plan; or null. */
  private @Nullable BackendException readFault(byte[] begin, byte[] end) {
    ReadFault taken = readFault.getAndUpdate(f -> f.touches(begin, end) ? f.used() : f);
    return taken.touches(begin, end)
        ? new BackendException(taken.code(), "injected by FaultInjectingBackend.failReads")
        : null;
  }

  /** Waits out the read-version latency on this thread (directory operations). */
  private void waitReadVersion() {
    long nanos = readVersionLatencyNanos;
    if (nanos > 0) {
      try {
        TimeUnit.NANOSECONDS.sleep(nanos);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new BackendException(
            BackendException.TRANSACTION_CANCELLED, "interrupted while waiting for a read version");
      }
    }
  }

  @Override
  public String toString() {
    return "FaultInjectingBackend{"
        + plan.get()
        + ", readVersionLatencyNanos="
        + readVersionLatencyNanos
        + ", delegate="
        + delegate
        + "}";
  }

  private static void requireCount(int n) {
    if (n < 0) {
      throw new IllegalArgumentException("n must not be negative: " + n);
    }
  }

  /**
   * The faults still to inject, replaced as a whole so that every commit sees, and takes from, one
   * consistent plan.
   */
  private record Plan(
      int conflicts,
      int unknownResults,
      boolean unknownApplied,
      long latencyNanos,
      int afterCommit,
      int afterCommitCode,
      boolean afterCommitApplied,
      int late) {
    static final Plan NONE = new Plan(0, 0, false, 0, 0, 0, false, 0);

    Plan withCommon(int conflicts, int unknownResults, boolean unknownApplied, long latencyNanos) {
      return new Plan(
          conflicts,
          unknownResults,
          unknownApplied,
          latencyNanos,
          afterCommit,
          afterCommitCode,
          afterCommitApplied,
          late);
    }

    Plan withAfterCommit(int n, int code, boolean applied) {
      return new Plan(
          conflicts, unknownResults, unknownApplied, latencyNanos, n, code, applied, late);
    }

    Plan withLate(int n) {
      return new Plan(
          conflicts,
          unknownResults,
          unknownApplied,
          latencyNanos,
          afterCommit,
          afterCommitCode,
          afterCommitApplied,
          n);
    }

    /** This plan with the fault the next writing commit takes (a conflict first) used up. */
    Plan next() {
      if (conflicts > 0) {
        return withCommon(conflicts - 1, unknownResults, unknownApplied, latencyNanos);
      }
      if (unknownResults > 0) {
        return withCommon(conflicts, unknownResults - 1, unknownApplied, latencyNanos);
      }
      if (late > 0) {
        return withLate(late - 1);
      }
      if (afterCommit > 0) {
        return withAfterCommit(afterCommit - 1, afterCommitCode, afterCommitApplied);
      }
      return this;
    }
  }

  /** Reads of {@code [begin, end)} still to fail with {@code code}. */
  private record ReadFault(byte[] begin, byte[] end, int remaining, int code) {
    static final ReadFault NONE = new ReadFault(new byte[0], new byte[0], 0, 0);

    boolean touches(byte[] from, byte[] to) {
      return remaining > 0 && ByteKeys.compare(from, end) < 0 && ByteKeys.compare(begin, to) < 0;
    }

    ReadFault used() {
      return new ReadFault(begin, end, remaining - 1, code);
    }
  }

  /** One call of {@link #run} or {@link #runAsync}: its id and the numbering of its attempts. */
  private final class Run {
    private final UUID id = RunIds.next();
    private int attempts;
    private @Nullable Attempt last;
    private boolean reRun;

    /** The writes of an attempt that raised 1021 and lands late, before the next one commits. */
    private volatile @Nullable List<Consumer<Transaction>> landing;

    /** Starts the next attempt over {@code tx}, an attempt of the wrapped backend. */
    synchronized Attempt begin(Transaction tx) {
      Attempt previous = last;
      if (previous != null && previous.appliedUnknownResult) {
        // the wrapped commit failed after all: the fault was not used, so it stays armed
        previous.appliedUnknownResult = false;
        plan.updateAndGet(
            p -> p.withCommon(p.conflicts, p.unknownResults + 1, p.unknownApplied, p.latencyNanos));
      }
      if (previous != null && previous.failAfterCommit != 0) {
        int code = previous.failAfterCommit;
        previous.failAfterCommit = 0;
        plan.updateAndGet(p -> p.withAfterCommit(p.afterCommit + 1, code, true));
      }
      Attempt attempt = new Attempt(tx, this, ++attempts, reRun);
      reRun = false;
      last = attempt;
      return attempt;
    }

    /**
     * After the wrapped run returned: the failure to raise if its last attempt committed but must
     * fail as if its commit's outcome were lost ({@link #failCommits}, {@link
     * #interruptAfterCommit}); its futures fail first. {@code waiting}: a thread waits for the run,
     * and is interrupted for an interrupt fault.
     */
    synchronized @Nullable RuntimeException failureAfterCommit(boolean waiting) {
      Attempt attempt = last;
      if (attempt == null || attempt.failAfterCommit == 0) {
        return null;
      }
      int code = attempt.failAfterCommit;
      attempt.fail(code == INTERRUPT ? BackendException.TRANSACTION_CANCELLED : code);
      attempt.failAfterCommit = 0;
      if (code != INTERRUPT) {
        return new BackendException(code, "injected by FaultInjectingBackend after the commit");
      }
      if (waiting) {
        Thread.currentThread().interrupt();
      }
      return new CancellationException(
          "interrupted while waiting (injected by FaultInjectingBackend after the commit)");
    }

    /**
     * After the wrapped run returned: whether its last attempt committed but must look like a
     * {@code commit_unknown_result}, in which case its futures fail and the body must run again.
     */
    synchronized boolean reRunAfterAppliedUnknownResult() {
      Attempt attempt = last;
      if (attempt == null || !attempt.appliedUnknownResult) {
        return false;
      }
      // fail the futures first: until this flag is cleared they hold back their success
      attempt.fail(BackendException.COMMIT_UNKNOWN_RESULT);
      attempt.appliedUnknownResult = false;
      reRun = true;
      return true;
    }
  }

  /** One attempt: the wrapped backend's transaction, with this backend's run id and number. */
  private final class Attempt extends ForwardingTransaction {
    private final Run run;
    private final UUID runId;
    private final int number;
    private final long beganNanos = System.nanoTime();
    private final long beganOffsetNanos = clockOffsetNanos.get();
    private final List<Relay<?>> relays = new ArrayList<>(2);
    private volatile boolean wrote;
    private volatile boolean appliedUnknownResult;
    private volatile int failAfterCommit;

    private final boolean reRun;

    /** This attempt's writes, for a late landing (a fault may be planned while the body runs). */
    private final List<Consumer<Transaction>> writes = new ArrayList<>();

    /** The wait for this attempt's read version, made by its first read. */
    private @Nullable CompletableFuture<Void> readVersion;

    Attempt(Transaction delegate, Run run, int number, boolean reRun) {
      super(delegate);
      this.run = run;
      this.runId = run.id;
      this.number = number;
      this.reRun = reRun;
    }

    // ---------------------------------------------------------------- reads

    /** The read version's wait: done at once without latency, else after it (made once). */
    synchronized CompletableFuture<Void> readVersion() {
      if (readVersion == null) {
        long nanos = readVersionLatencyNanos;
        readVersion =
            nanos <= 0
                ? CompletableFuture.completedFuture(null)
                : CompletableFuture.runAsync(
                    () -> {}, CompletableFuture.delayedExecutor(nanos, TimeUnit.NANOSECONDS));
      }
      return readVersion;
    }

    /** Waits for the read version on this thread. */
    void awaitReadVersion() {
      CompletableFuture<Void> v = readVersion();
      if (v.isDone()) {
        return;
      }
      try {
        v.get();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw fail(BackendException.TRANSACTION_CANCELLED);
      } catch (java.util.concurrent.ExecutionException e) {
        throw new IllegalStateException(e.getCause());
      }
    }

    <V> CompletableFuture<V> read(
        byte[] begin, byte[] end, java.util.function.Supplier<CompletableFuture<V>> read) {
      BackendException fault = readFault(begin, end);
      if (fault != null) {
        return CompletableFuture.failedFuture(fault);
      }
      CompletableFuture<Void> v = readVersion();
      return v.isDone() ? read.get() : v.thenCompose(ignored -> read.get());
    }

    <V> V readNow(byte[] begin, byte[] end, java.util.function.Supplier<V> read) {
      BackendException fault = readFault(begin, end);
      if (fault != null) {
        throw fault;
      }
      awaitReadVersion();
      return read.get();
    }

    @Override
    public CompletableFuture<byte @Nullable []> getAsync(byte[] key) {
      return read(key, ByteKeys.keyAfter(key), () -> delegate.getAsync(key));
    }

    @Override
    public byte @Nullable [] get(byte[] key) {
      return readNow(key, ByteKeys.keyAfter(key), () -> delegate.get(key));
    }

    @Override
    public CompletableFuture<List<KeyValue>> getRangeAsync(
        byte[] begin, byte[] end, int limit, boolean reverse) {
      return read(begin, end, () -> delegate.getRangeAsync(begin, end, limit, reverse));
    }

    @Override
    public List<KeyValue> getRange(byte[] begin, byte[] end, int limit, boolean reverse) {
      return readNow(begin, end, () -> delegate.getRange(begin, end, limit, reverse));
    }

    @Override
    public List<KeyValue> getRange(byte[] begin, byte[] end) {
      return readNow(begin, end, () -> delegate.getRange(begin, end));
    }

    @Override
    public long getReadVersion() {
      awaitReadVersion();
      return delegate.getReadVersion();
    }

    @Override
    public CompletableFuture<Long> getReadVersionAsync() {
      return readVersion().thenCompose(ignored -> delegate.getReadVersionAsync());
    }

    @Override
    public ReadTransaction snapshot() {
      return new SnapshotView(this, delegate.snapshot());
    }

    // ---------------------------------------------------------------- writes

    private void record(Consumer<Transaction> write) {
      synchronized (writes) {
        writes.add(write);
      }
    }

    @Override
    public void set(byte[] key, byte[] value) {
      super.set(key, value);
      record(t -> t.set(key, value));
    }

    @Override
    public void clear(byte[] key) {
      super.clear(key);
      record(t -> t.clear(key));
    }

    @Override
    public void clearRange(byte[] begin, byte[] end) {
      super.clearRange(begin, end);
      record(t -> t.clearRange(begin, end));
    }

    @Override
    public void add(byte[] key, long delta) {
      super.add(key, delta);
      record(t -> t.add(key, delta));
    }

    @Override
    public void setVersionstampedKey(byte[] prefix, Tuple key, byte[] value) {
      super.setVersionstampedKey(prefix, key, value);
      record(t -> t.setVersionstampedKey(prefix, key, value));
    }

    @Override
    public void setVersionstampedValue(byte[] key, byte[] valuePrefix) {
      super.setVersionstampedValue(key, valuePrefix);
      record(t -> t.setVersionstampedValue(key, valuePrefix));
    }

    /**
     * Before this attempt commits: applies the writes of the run's earlier attempt that raised 1021
     * and lands late, in a transaction of their own; completes once they have committed.
     */
    CompletableFuture<?> landLate() {
      List<Consumer<Transaction>> late = run.landing;
      if (late == null || !wrote) {
        return CompletableFuture.completedFuture(null);
      }
      run.landing = null;
      return FaultInjectingBackend.this
          .delegate()
          .runAsync(
              t -> {
                late.forEach(w -> w.accept(t));
                return CompletableFuture.completedFuture(null);
              });
    }

    @Override
    public int retriedAfter() {
      // a re-run after an applied 1021 is a first attempt of the wrapped backend
      return reRun ? BackendException.COMMIT_UNKNOWN_RESULT : super.retriedAfter();
    }

    @Override
    void wrote(long bytes) {
      wrote = true;
    }

    @Override
    public UUID runId() {
      return runId;
    }

    @Override
    public int attempt() {
      return number;
    }

    @Override
    public CompletableFuture<Void> watch(byte[] key) {
      return relay(delegate.watch(key), false);
    }

    @Override
    public CompletableFuture<byte[]> getVersionstamp() {
      return relay(delegate.getVersionstamp(), true);
    }

    private <V> CompletableFuture<V> relay(CompletableFuture<V> inner, boolean versionstamp) {
      Relay<V> relay = new Relay<>(this, inner, versionstamp);
      synchronized (relays) {
        relays.add(relay);
      }
      return relay.outer;
    }

    /** Waits out the commit latency on this thread (for {@link #run}). */
    void waitLatency() {
      if (wrote) {
        awaitReadVersion(); // a commit needs a read version too
      }
      long nanos = wrote ? plan.get().latencyNanos : 0;
      if (nanos > 0) {
        try {
          TimeUnit.NANOSECONDS.sleep(nanos);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw fail(BackendException.TRANSACTION_CANCELLED);
        }
      }
    }

    /** Completes after the commit latency, holding no thread (for {@link #runAsync}). */
    CompletableFuture<?> latency() {
      long nanos = wrote ? plan.get().latencyNanos : 0;
      CompletableFuture<Void> version =
          wrote ? readVersion() : CompletableFuture.completedFuture(null);
      return nanos > 0
          ? version.thenCompose(
              ignored ->
                  CompletableFuture.runAsync(
                      () -> {}, CompletableFuture.delayedExecutor(nanos, TimeUnit.NANOSECONDS)))
          : version;
    }

    /**
     * Called when the body is done, right before the wrapped backend commits: throws the fault this
     * writing attempt is to fail with, or marks it to raise 1021 after its commit applied.
     */
    void injectFaults() {
      if (!wrote) {
        return;
      }
      long age = System.nanoTime() - beganNanos + clockOffsetNanos.get() - beganOffsetNanos;
      if (age > MAX_LIFE_NANOS) {
        throw fail(BackendException.TRANSACTION_TOO_OLD);
      }
      Plan taken = plan.getAndUpdate(Plan::next);
      if (taken.conflicts > 0) {
        throw fail(BackendException.NOT_COMMITTED);
      }
      if (taken.unknownResults > 0) {
        if (!taken.unknownApplied) {
          throw fail(BackendException.COMMIT_UNKNOWN_RESULT);
        }
        appliedUnknownResult = true;
      } else if (taken.late > 0) {
        synchronized (writes) {
          run.landing = List.copyOf(writes);
        }
        throw fail(BackendException.COMMIT_UNKNOWN_RESULT);
      } else if (taken.afterCommit > 0) {
        if (!taken.afterCommitApplied) {
          throw fail(taken.afterCommitCode);
        }
        failAfterCommit = taken.afterCommitCode;
      }
    }

    /**
     * Fails this attempt's watches with {@code code} and its versionstamps with {@code
     * transaction_invalid_version}, as a commit failing with {@code code} would, and returns the
     * error to raise.
     */
    BackendException fail(int code) {
      BackendException error = new BackendException(code, "injected by FaultInjectingBackend");
      List<Relay<?>> copy;
      synchronized (relays) {
        copy = new ArrayList<>(relays);
      }
      for (Relay<?> relay : copy) {
        relay.fail(error);
      }
      return error;
    }
  }

  /** The snapshot view of an attempt: its reads wait for the attempt's read version too. */
  private final class SnapshotView implements ReadTransaction {
    private final Attempt attempt;
    private final ReadTransaction delegate;

    SnapshotView(Attempt attempt, ReadTransaction delegate) {
      this.attempt = attempt;
      this.delegate = delegate;
    }

    @Override
    public CompletableFuture<byte @Nullable []> getAsync(byte[] key) {
      return attempt.read(key, ByteKeys.keyAfter(key), () -> delegate.getAsync(key));
    }

    @Override
    public byte @Nullable [] get(byte[] key) {
      return attempt.readNow(key, ByteKeys.keyAfter(key), () -> delegate.get(key));
    }

    @Override
    public CompletableFuture<List<KeyValue>> getRangeAsync(
        byte[] begin, byte[] end, int limit, boolean reverse) {
      return attempt.read(begin, end, () -> delegate.getRangeAsync(begin, end, limit, reverse));
    }

    @Override
    public List<KeyValue> getRange(byte[] begin, byte[] end, int limit, boolean reverse) {
      return attempt.readNow(begin, end, () -> delegate.getRange(begin, end, limit, reverse));
    }

    @Override
    public List<KeyValue> getRange(byte[] begin, byte[] end) {
      return attempt.readNow(begin, end, () -> delegate.getRange(begin, end));
    }

    @Override
    public long getReadVersion() {
      return attempt.getReadVersion();
    }

    @Override
    public CompletableFuture<Long> getReadVersionAsync() {
      return attempt.getReadVersionAsync();
    }

    @Override
    public boolean isSnapshot() {
      return true;
    }
  }

  /**
   * A watch or versionstamp future handed out by an attempt, fed by the wrapped attempt's future
   * unless a fault decides the outcome first. Cancelling it cancels the wrapped one (freeing the
   * watch's slot).
   */
  private static final class Relay<V> {
    private final Attempt attempt;
    private final CompletableFuture<V> inner;
    private final boolean versionstamp;
    final CompletableFuture<V> outer = new CompletableFuture<>();

    Relay(Attempt attempt, CompletableFuture<V> inner, boolean versionstamp) {
      this.attempt = attempt;
      this.inner = inner;
      this.versionstamp = versionstamp;
      outer.whenComplete(
          (value, failure) -> {
            if (outer.isCancelled()) {
              inner.cancel(true);
            }
          });
      inner.whenComplete(this::innerDone);
    }

    private void innerDone(@Nullable V value, @Nullable Throwable failure) {
      if (failure != null) {
        outer.completeExceptionally(Futures.unwrap(failure));
      } else if (!attempt.appliedUnknownResult && attempt.failAfterCommit == 0) {
        // an attempt that will look like commit_unknown_result keeps its success to itself
        outer.complete(value);
      }
    }

    void fail(BackendException error) {
      outer.completeExceptionally(
          versionstamp
              ? new BackendException(
                  BackendException.TRANSACTION_INVALID_VERSION,
                  "the commit failed: " + error.getMessage(),
                  error)
              : error);
      inner.cancel(true);
    }
  }
}
