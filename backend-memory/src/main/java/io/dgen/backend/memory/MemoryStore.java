package io.dgen.backend.memory;

import io.dgen.backend.BackendException;
import io.dgen.backend.ByteKeys;
import io.dgen.backend.Futures;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReferenceFieldUpdater;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;

/**
 * The shared multi-version store behind a {@link MemoryBackend}.
 *
 * <h2>Data</h2>
 *
 * A {@link ConcurrentSkipListMap} from key to that key's {@link Chain}, which points at the newest
 * {@link Node} of its versions (newest first; a {@code null} value is a tombstone). Readers never
 * lock: a reader at read version {@code rv} walks the chain to the first node with {@code version
 * <= rv}. A commit replaces a chain's head in place, so writing a key that exists costs one lookup
 * in the map, and the garbage collector reaches a chain without one. A commit puts its nodes into
 * the map first and only then publishes its version in {@link #visibleVersion}, so a reader that
 * acquired {@code rv} sees every commit {@code <= rv} completely and none after.
 *
 * <h2>Locking</h2>
 *
 * One lock ({@link #lock}) serializes commits: the conflict check against the recent commits' write
 * ranges ({@link ConflictIndex}), applying the mutations, arming and firing watches and garbage
 * collection all happen under it, and nothing under it calls user code (fired watches are completed
 * on the executor after the lock is released). Acquiring a read version takes no lock.
 *
 * <h2>Garbage collection</h2>
 *
 * Every attempt that has a read version holds a reference on a {@link ReadEpoch}; the oldest epoch
 * still referenced bounds the versions anyone may still read ({@code m}). A commit that writes a
 * key cuts its chain below the previous version when that is {@code <= m}, and queues keys whose
 * chains still hold garbage; later commits finish them once {@code m} has passed them. The conflict
 * index forgets commits at or below {@code m}. Epochs older than FoundationDB's five-second
 * transaction lifetime (plus the second during which an epoch admits new readers) are retired even
 * while referenced: their holders fail with {@code transaction_too_old} anyway. A cut chain ends in
 * {@link #TRUNCATED}, so a reader that reaches below the cut gets {@code 1007}; and readers check
 * their age after reading, so one that saw a key removed is sure to fail rather than answer.
 *
 * <h2>Storage</h2>
 *
 * With a {@link Storage}, the store starts from the storage's data (every key at the recovered
 * version), appends each commit's writes to it under the lock and waits for them to be durable
 * after releasing it; only then is the version published and the commit acknowledged. Commit
 * versions come from {@link #lastCommitted}, which runs ahead of {@link #visibleVersion} by the
 * commits waiting for their sync. A storage failure is sticky: later commits fail with it; after a
 * failed wait for durability (the commit may have reached the storage), new reads fail too.
 */
final class MemoryStore {

  /** FoundationDB's transaction lifetime (5,000,000 versions at 1,000,000 versions/s). */
  static final long MAX_LIFE_NANOS = 5_000_000_000L;

  /** New readers join an existing epoch of the same version only while it is this young. */
  private static final long EPOCH_REUSE_NANOS = 1_000_000_000L;

  private static final int RETIRED = Integer.MIN_VALUE / 2;

  /** One version of one key; {@code value == null} is a tombstone. */
  static final class Node {
    final long version;
    final byte @Nullable [] value;

    // Written under the commit lock only when cutting the chain; a racing reader sees either the
    // old (still valid) node or TRUNCATED, both safe, so the field need not be volatile.
    @Nullable Node older;

    Node(long version, byte @Nullable [] value, @Nullable Node older) {
      this.version = version;
      this.value = value;
      this.older = older;
    }
  }

  /**
   * The versions of one key: the map's value. Only commits (under the lock) replace {@link #head};
   * a chain leaves the map once its head is a tombstone no reader can look below.
   */
  static final class Chain {
    volatile Node head;

    Chain(Node head) {
      this.head = head;
    }
  }

  /** Marks a chain cut by garbage collection below the newest version anyone may read. */
  static final Node TRUNCATED = new Node(Long.MAX_VALUE, null, null);

  /** A read version shared by the attempts that acquired it; referenced until they end. */
  static final class ReadEpoch {
    final long version;
    final long nanos;
    // With a paged storage: the storage's view of exactly this version. The epoch holds one
    // reference, dropped (under the commit lock) when it is retired; each reader holds its own.
    final PagedStorage.@Nullable View view;
    private boolean viewDropped;
    private final AtomicInteger refs = new AtomicInteger();
    // The epoch installed after this one; set once by its installer, read by the collector.
    private volatile @Nullable ReadEpoch next;

    ReadEpoch(long version, long nanos, PagedStorage.@Nullable View view) {
      this.version = version;
      this.nanos = nanos;
      this.view = view;
    }

    /** Ends a reader's hold: its reference on the epoch and on the view. */
    void releaseReader() {
      refs.decrementAndGet();
      if (view != null) {
        view.release();
      }
    }

    /** Drops the epoch's own reference on its view once it is retired; under the commit lock. */
    void dropView() {
      if (view != null && !viewDropped) {
        viewDropped = true;
        view.release();
      }
    }

    boolean retain() {
      for (; ; ) {
        int r = refs.get();
        if (r < 0) {
          return false;
        }
        if (refs.compareAndSet(r, r + 1)) {
          return true;
        }
      }
    }
  }

  private record GcEntry(byte[] key, Chain chain, long version) {}

  final ConcurrentSkipListMap<byte[], Chain> data =
      new ConcurrentSkipListMap<>(ByteKeys.COMPARATOR);

  private final LongSupplier ticker;
  private final Stats stats;
  private final MemoryBackend.Faults faults;
  private final Executor executor;
  private final int maxWatches;
  private final AtomicInteger outstandingWatches = new AtomicInteger();

  private final Object lock = new Object();
  private volatile long visibleVersion;
  private volatile boolean closed;
  private final @Nullable Storage storage;
  // The storage when it serves reads: the map then holds only recently written keys.
  private final @Nullable PagedStorage paged;
  // With a paged storage: the view of visibleVersion, with one reference held here.
  private volatile PagedStorage.@Nullable View publishedView;
  // With a paged storage: where the heap holds every key that has a value.
  private final @Nullable CompleteRanges complete;
  // Guarded by lock, with a paged storage: chains at or below m that have a value, oldest write
  // first, kept as a cache and evicted once the heap's chains exceed cacheBudget bytes.
  private final ArrayDeque<GcEntry> evictQueue = new ArrayDeque<>();
  private long cachedBytes;
  private long chainCount;
  private final long cacheBudget;
  // Guarded by lock: the newest m used, and the version of the newest range delete.
  private long lastM;
  private long rangeDeleteVersion;
  private volatile @Nullable RuntimeException storageFailure;
  private volatile @Nullable RuntimeException unreadable;

  // Guarded by lock: the newest commit version handed out, and the writes of the commit applying.
  private long lastCommitted;
  private final ArrayList<byte[]> batchKeys = new ArrayList<>();
  private final ArrayList<byte @Nullable []> batchValues = new ArrayList<>();
  private final ArrayList<byte[]> batchClearBegins = new ArrayList<>();
  // With a paged storage: the chains the applying commit changed, to undo if its append fails.
  private final ArrayList<byte[]> touchedKeys = new ArrayList<>();
  private final ArrayList<Chain> touchedChains = new ArrayList<>();
  private final ArrayList<byte[]> batchClearEnds = new ArrayList<>();
  private final Object publishLock = new Object();

  // Guarded by lock.
  private final ConflictIndex recentWrites = new ConflictIndex();
  private final ArrayDeque<GcEntry> gcQueue = new ArrayDeque<>();
  private final TreeMap<byte[], ArrayList<Watch>> watches = new TreeMap<>(ByteKeys.COMPARATOR);
  private int armedWatches;

  private volatile ReadEpoch currentEpoch;
  // Guarded by lock: the oldest epoch not yet found retired.
  private ReadEpoch oldestEpoch;

  private static final AtomicReferenceFieldUpdater<MemoryStore, ReadEpoch> CURRENT_EPOCH =
      AtomicReferenceFieldUpdater.newUpdater(MemoryStore.class, ReadEpoch.class, "currentEpoch");

  MemoryStore(
      LongSupplier ticker,
      Stats stats,
      MemoryBackend.Faults faults,
      Executor executor,
      int maxWatches,
      @Nullable Storage storage) {
    this.storage = storage;
    this.paged = storage instanceof PagedStorage p ? p : null;
    this.complete = paged == null ? null : new CompleteRanges();
    this.cacheBudget = paged == null ? Long.MAX_VALUE : paged.heapCacheBytes();
    if (storage != null) {
      long recovered = storage.recover((k, v) -> data.put(k, new Chain(new Node(0, v, null))));
      // Recovered keys carry version 0, which every reader's version is at or above.
      this.lastCommitted = recovered;
      this.visibleVersion = recovered;
      if (paged != null) {
        PagedStorage.View view = paged.view();
        if (view.version() != recovered) {
          view.release();
          throw new IllegalStateException(
              "the storage's view is at version " + view.version() + ", not " + recovered);
        }
        this.publishedView = view;
      }
    }
    this.ticker = ticker;
    this.stats = stats;
    this.faults = faults;
    this.executor = executor;
    this.maxWatches = maxWatches;
    ReadEpoch none = new ReadEpoch(-1, 0, null);
    none.refs.set(RETIRED);
    this.currentEpoch = none;
    this.oldestEpoch = none;
  }

  long nanoTime() {
    return ticker.getAsLong();
  }

  long visibleVersion() {
    return visibleVersion;
  }

  // ---------------------------------------------------------------- reads

  /** The value of {@code chain} (null: no such key) as of {@code version}. */
  static byte @Nullable [] valueAt(@Nullable Chain chain, long version) {
    Node n = nodeAt(chain, version);
    return n == null ? null : n.value;
  }

  /**
   * The newest node of {@code chain} at or below {@code version}, or null if it has none (the key
   * had no version in memory then: absent, or only in the paged storage's view).
   */
  static @Nullable Node nodeAt(@Nullable Chain chain, long version) {
    for (Node n = chain == null ? null : chain.head; n != null; n = n.older) {
      if (n == TRUNCATED) {
        throw new BackendException(
            BackendException.TRANSACTION_TOO_OLD, "version " + version + " was collected");
      }
      if (n.version <= version) {
        return n;
      }
    }
    return null;
  }

  /**
   * The value of {@code key} as of the reader's epoch {@code e}: from the key's chain if it has a
   * version at or below the epoch's, otherwise from the epoch's view of the paged storage.
   */
  byte @Nullable [] get(byte[] key, ReadEpoch e) {
    PagedStorage.View view = e.view;
    long generation = view == null ? 0 : complete.generation();
    Chain chain = data.get(key);
    if (chain != null) {
      Node n = nodeAt(chain, e.version);
      if (n != null) {
        return n.value;
      }
    } else if (view != null && complete.covers(key) && complete.generation() == generation) {
      return null; // the heap holds every key of the range that has a value
    }
    return view == null ? null : view.get(key);
  }

  /** One key and its value in a range read. */
  record Entry(byte[] key, byte[] value) {}

  /**
   * The keys of {@code [begin, end)} that have a value as of the reader's epoch {@code e}, in
   * order: the chains in memory merged with the epoch's view of the paged storage (a key's chain
   * wins when it has a version at or below the epoch's). Close it after use.
   */
  RangeCursor range(byte[] begin, byte[] end, boolean reverse, ReadEpoch e, boolean withStorage) {
    NavigableMap<byte[], Chain> chains = data.subMap(begin, true, end, false);
    if (reverse) {
      chains = chains.descendingMap();
    }
    PagedStorage.View view = e.view;
    if (view == null) {
      return new RangeCursor(this, chains.entrySet().iterator(), null, e, reverse, begin, end, -1);
    }
    long generation = complete.generation();
    if (!withStorage && complete.covers(begin, end)) {
      // Valid if no chain with a value left the heap while it is read (RangeCursor.valid).
      return new RangeCursor(
          this, chains.entrySet().iterator(), null, e, reverse, begin, end, generation);
    }
    return new RangeCursor(
        this,
        chains.entrySet().iterator(),
        view.range(begin, end, reverse),
        e,
        reverse,
        begin,
        end,
        generation);
  }

  /**
   * Puts the keys a range read found only in the storage's view of {@code version} into the heap,
   * as chains of one version, and marks {@code [from, to)} complete if no chain with a value left
   * the heap since the read began ({@code generation}). Skipped when the heap may have dropped a
   * version above {@code version} (a retired reader older than it) or a range delete since could
   * have removed such a key without a chain.
   */
  private void load(
      List<byte[]> keys,
      List<byte[]> values,
      byte[] from,
      byte[] to,
      long version,
      long generation) {
    synchronized (lock) {
      if (closed || lastM > version || rangeDeleteVersion > version) {
        return;
      }
      for (int i = 0; i < keys.size(); i++) {
        byte[] key = keys.get(i);
        Chain chain = new Chain(new Node(version, values.get(i), null));
        if (data.putIfAbsent(key, chain) == null) {
          added(key, values.get(i));
          gcQueue.addLast(new GcEntry(key, chain, version));
        }
      }
      if (complete.generation() == generation) {
        complete.add(from, to);
      }
      evictOverBudget(lastM);
    }
  }

  /** The most stored keys a range read puts into the heap; a larger read leaves them on disk. */
  private static final int MAX_LOADED = 256;

  /**
   * The merge of a range of chains with a range of a view. Not thread-safe. Closing it puts the
   * keys it found only in the view into the heap, and marks what it read complete ({@link #load}).
   */
  static final class RangeCursor implements AutoCloseable {
    private final MemoryStore store;
    private final Iterator<Map.Entry<byte[], Chain>> chains;
    private final PagedStorage.@Nullable Cursor stored;
    private final ReadEpoch epoch;
    private final long version;
    private final boolean reverse;
    private final byte[] begin;
    private final byte[] end;
    private final long generation;
    private Map.@Nullable Entry<byte[], Chain> chain;
    private boolean storedValid;
    private @Nullable ArrayList<byte[]> loadKeys = new ArrayList<>();
    private @Nullable ArrayList<byte[]> loadValues = new ArrayList<>();

    RangeCursor(
        MemoryStore store,
        Iterator<Map.Entry<byte[], Chain>> chains,
        PagedStorage.@Nullable Cursor stored,
        ReadEpoch epoch,
        boolean reverse,
        byte[] begin,
        byte[] end,
        long generation) {
      this.store = store;
      this.chains = chains;
      this.stored = stored;
      this.epoch = epoch;
      this.version = epoch.version;
      this.reverse = reverse;
      this.begin = begin;
      this.end = end;
      this.generation = generation;
      this.chain = chains.hasNext() ? chains.next() : null;
      this.storedValid = stored != null && stored.next();
    }

    /** The next key with a value, or null when the range is exhausted. */
    @Nullable Entry next() {
      for (; ; ) {
        if (chain == null && !storedValid) {
          return null;
        }
        int c;
        if (chain == null) {
          c = 1;
        } else if (!storedValid) {
          c = -1;
        } else {
          c = ByteKeys.compare(chain.getKey(), stored.key());
          if (reverse) {
            c = -c;
          }
        }
        if (c > 0) {
          Entry out = new Entry(stored.key(), stored.value());
          storedValid = stored.next();
          remember(out);
          return out;
        }
        Map.Entry<byte[], Chain> mine = chain;
        chain = chains.hasNext() ? chains.next() : null;
        Node n = nodeAt(mine.getValue(), version);
        if (c == 0) {
          byte[] storedValue = stored.value();
          storedValid = stored.next();
          if (n == null) {
            return new Entry(mine.getKey(), storedValue);
          }
        }
        if (n != null && n.value != null) {
          return new Entry(mine.getKey(), n.value);
        }
      }
    }

    private void remember(Entry e) {
      if (loadKeys == null) {
        return;
      }
      if (loadKeys.size() == MAX_LOADED) {
        loadKeys = null;
        loadValues = null;
        return;
      }
      loadKeys.add(e.key());
      loadValues.add(e.value());
    }

    /**
     * False if the read relied on the heap covering its range and a chain with a value left the
     * heap meanwhile: its answer may miss that key.
     */
    boolean valid() {
      return stored != null || generation < 0 || store.complete.generation() == generation;
    }

    @Override
    public void close() {
      if (stored == null) {
        return;
      }
      byte[] from = begin;
      byte[] to = end;
      try {
        if (loadKeys != null && storedValid) {
          // What was read of the view: up to the entry the cursor stopped at, or all of it.
          if (reverse) {
            from = ByteKeys.keyAfter(stored.key());
          } else {
            to = stored.key();
          }
        }
      } finally {
        // Before load takes the commit lock: a reopen of the storage, under that lock, waits
        // for open cursors.
        stored.close();
      }
      if (loadKeys != null) {
        store.load(loadKeys, loadValues, from, to, epoch.version, generation);
      }
    }
  }

  /**
   * Acquires a read version for a new reader at time {@code now}, holding a reference on it.
   *
   * <p>Lock-free: a reader joins the current epoch if it is at the newest version and young,
   * otherwise installs a new one with a CAS on {@link #currentEpoch} and links it behind its
   * predecessor. Installed epochs form one chain whose versions never decrease (an installer reads
   * the version after seeing its predecessor installed).
   */
  ReadEpoch acquireEpoch(long now) {
    checkReadable();
    if (paged != null) {
      return acquirePagedEpoch(now);
    }
    for (; ; ) {
      ReadEpoch e = currentEpoch;
      long v = visibleVersion;
      if (e.version == v && now - e.nanos < EPOCH_REUSE_NANOS && e.retain()) {
        return e;
      }
      ReadEpoch n = new ReadEpoch(v, now, null);
      n.refs.set(1);
      if (CURRENT_EPOCH.compareAndSet(this, e, n)) {
        e.next = n;
        return n;
      }
    }
  }

  /**
   * {@link #acquireEpoch} with a paged storage: the epoch carries the published view of its
   * version, with a reference for the epoch and one for the reader. A view found freed (its epoch
   * was retired meanwhile, or a newer view replaced it) sends the reader round again.
   */
  private ReadEpoch acquirePagedEpoch(long now) {
    for (; ; ) {
      ReadEpoch e = currentEpoch;
      PagedStorage.View pv = publishedView;
      long v = pv.version();
      if (e.version == v && now - e.nanos < EPOCH_REUSE_NANOS && e.retain()) {
        if (e.view != null && e.view.retain()) {
          return e;
        }
        e.refs.decrementAndGet();
      }
      if (!pv.retain()) {
        continue;
      }
      if (!pv.retain()) {
        pv.release();
        continue;
      }
      ReadEpoch n = new ReadEpoch(v, now, pv);
      n.refs.set(1);
      if (CURRENT_EPOCH.compareAndSet(this, e, n)) {
        e.next = n;
        return n;
      }
      pv.release();
      pv.release();
    }
  }

  /**
   * The oldest version a live reader may still read; called under the commit lock only. Walks from
   * the oldest epoch, retiring those nobody holds. When every epoch is retired, a retired
   * placeholder at the newest version is installed as the current epoch, so that readers still
   * installing an older epoch fail their CAS and read again, and blind-write workloads (which take
   * no read version) still collect garbage.
   */
  private long minRetained(long now) {
    ReadEpoch h = oldestEpoch;
    for (; ; ) {
      boolean retired = h.refs.get() < 0 || h.refs.compareAndSet(0, RETIRED);
      if (!retired && now - h.nanos > MAX_LIFE_NANOS + EPOCH_REUSE_NANOS) {
        // Every holder read first more than five seconds ago: it fails 1007 on its next
        // storage read or commit, so its versions need not be kept.
        h.refs.set(RETIRED);
        retired = true;
      }
      if (!retired) {
        oldestEpoch = h;
        return h.version;
      }
      h.dropView();
      ReadEpoch n = h.next;
      if (n == null) {
        long v = visibleVersion;
        if (h.version < v) {
          ReadEpoch placeholder = new ReadEpoch(v, now, null);
          placeholder.refs.set(RETIRED);
          if (CURRENT_EPOCH.compareAndSet(this, h, placeholder)) {
            h.next = placeholder;
            h = placeholder;
          }
        }
        // If the CAS failed, a reader installed h's successor and is about to link it; its
        // version is not below h's, so h's stays a safe bound for now.
        oldestEpoch = h;
        return h.version;
      }
      h = n;
    }
  }

  /** Number of read epochs not yet collected (for tests of garbage collection). */
  int epochCount() {
    synchronized (lock) {
      int n = 0;
      for (ReadEpoch e = oldestEpoch; e != null; e = e.next) {
        n++;
      }
      return n;
    }
  }

  /** Number of versions held for all keys, tombstones included (for tests). */
  long versionCount() {
    long n = 0;
    for (Chain chain : data.values()) {
      for (Node x = chain.head; x != null && x != TRUNCATED; x = x.older) {
        n++;
      }
    }
    return n;
  }

  /** Number of commits' entries kept for conflict checks (for tests). */
  int logSize() {
    synchronized (lock) {
      return recentWrites.size();
    }
  }

  // ---------------------------------------------------------------- commits

  /**
   * Resolves and applies a non-read-only commit.
   *
   * @param writeRanges the attempt's write-conflict ranges except its versionstamped keys, which
   *     are added here once the commit version is known
   * @return the commit version
   * @throws BackendException 1007, 1020 or 1021 (injected)
   */
  long commit(MemoryTransaction tx, KeyRanges reads, KeyRanges.Builder writeRanges) {
    Applied applied = apply(tx, reads, writeRanges);
    if (storage != null) {
      publish(awaitDurable(storage, applied.version()));
    }
    return finish(applied);
  }

  /**
   * {@link #commit} without waiting for durability in this thread: with a storage, the future
   * completes once the storage made the commit durable (its sync is shared with the commits around
   * it, see {@link Storage#durableAsync}); resolution and application happen in this thread.
   *
   * @throws BackendException 1007, 1020 or 1021 (injected), before anything was applied
   */
  CompletableFuture<Long> commitAsync(
      MemoryTransaction tx, KeyRanges reads, KeyRanges.Builder writeRanges) {
    Applied applied = apply(tx, reads, writeRanges);
    if (storage == null) {
      return CompletableFuture.completedFuture(finish(applied));
    }
    CompletableFuture<Long> durable;
    try {
      durable = storage.durableAsync(applied.version());
    } catch (RuntimeException e) {
      durable = CompletableFuture.failedFuture(e);
    }
    return durable.handle(
        (version, failure) -> {
          if (failure != null) {
            RuntimeException e = asRuntime(Futures.unwrap(failure));
            storageFailure = e;
            unreadable = e;
            throw e;
          }
          publish(version);
          return finish(applied);
        });
  }

  private static RuntimeException asRuntime(Throwable t) {
    return t instanceof RuntimeException e ? e : new CompletionException(t);
  }

  /** A commit resolved and applied in memory, not yet visible with a storage. */
  private record Applied(
      long version,
      ArrayList<Watch> fired,
      @Nullable ArrayList<Watch> cancelled,
      boolean unknownAfterApply) {}

  /** Completes an applied commit's watches; throws the injected 1021 after an applied commit. */
  private long finish(Applied applied) {
    completeLater(applied.fired(), applied.cancelled());
    if (applied.unknownAfterApply()) {
      throw new BackendException(
          BackendException.COMMIT_UNKNOWN_RESULT,
          "injected by faults().commitUnknownResult applied=true version=" + applied.version());
    }
    return applied.version();
  }

  private Applied apply(MemoryTransaction tx, KeyRanges reads, KeyRanges.Builder writeRanges) {
    ArrayList<Watch> fired = new ArrayList<>();
    ArrayList<Watch> cancelled = null;
    long version;
    boolean unknownAfterApply;
    synchronized (lock) {
      RuntimeException failure = storageFailure;
      if (failure != null) {
        throw failure;
      }
      long now = ticker.getAsLong();
      long rv = tx.readVersion;
      // Whatever its read-conflict ranges: FoundationDB's client makes every writing commit
      // self-conflicting, so any writing attempt that took a read version can be too old.
      if (rv >= 0 && now - tx.readNanos > MAX_LIFE_NANOS) {
        throw new BackendException(
            BackendException.TRANSACTION_TOO_OLD,
            "readVersion=" + rv + " ageMillis=" + (now - tx.readNanos) / 1_000_000);
      }
      if (faults.takeForcedConflict()) {
        stats.conflicts.increment();
        throw new BackendException(
            BackendException.NOT_COMMITTED, "injected by faults().failNextCommits");
      }
      if (!reads.isEmpty() && rv >= 0 && recentWrites.conflicts(rv, reads)) {
        stats.conflicts.increment();
        throw new BackendException(BackendException.NOT_COMMITTED, "readVersion=" + rv);
      }
      int unknown = faults.takeUnknownResult();
      if (unknown == MemoryBackend.Faults.UNKNOWN_NOT_APPLIED) {
        throw new BackendException(
            BackendException.COMMIT_UNKNOWN_RESULT,
            "injected by faults().commitUnknownResult applied=false");
      }
      unknownAfterApply = unknown == MemoryBackend.Faults.UNKNOWN_APPLIED;
      version = lastCommitted + 1;
      long m = minRetained(now);
      byte[] stamp = Stamps.transactionStamp(version, 0);
      int written = apply(tx, version, m, stamp, writeRanges);
      if (storage != null) {
        appendToStorage(version);
      }
      // After the append: a paged storage gives the value of a key the map does not hold.
      if (armedWatches > 0) {
        checkWatches(tx, stamp, fired);
      }
      lastCommitted = version;
      recentWrites.add(version, writeRanges.build());
      recentWrites.trim(m);
      collect(m, Math.max(64, 2 * written));
      if (paged != null) {
        lastM = Math.max(lastM, m);
        evictOverBudget(m);
      }
      if (storage == null) {
        visibleVersion = version;
      }
      if (!unknownAfterApply && tx.watches != null) {
        cancelled = armAll(tx.watches, fired);
      }
    }
    return new Applied(version, fired, cancelled, unknownAfterApply);
  }

  /** Hands the applying commit's writes to the storage; a failure stops every later commit. */
  private void appendToStorage(long version) {
    try {
      if (paged != null) {
        paged.append(version, batchClearBegins, batchClearEnds, batchKeys, batchValues);
      } else {
        storage.append(version, batchKeys, batchValues);
      }
    } catch (RuntimeException e) {
      if (paged != null) {
        // Nothing of it reached the storage: undo it in the heap, and let the storage say whether
        // it takes later commits (a full disk may have room again).
        undo(version);
        // The version is not used again: should the batch have reached the storage after all,
        // no later commit shares its versionstamps.
        lastCommitted = version;
        publish(visibleVersion); // the storage may have a new view (it reopened its database)
      } else {
        storageFailure = e;
      }
      throw e;
    } finally {
      batchKeys.clear();
      batchValues.clear();
      batchClearBegins.clear();
      batchClearEnds.clear();
      touchedKeys.clear();
      touchedChains.clear();
    }
  }

  /**
   * Takes the versions {@code version} put into chains back out, newest change first. Readers never
   * saw them: the version was not published.
   */
  private void undo(long version) {
    for (int i = touchedChains.size() - 1; i >= 0; i--) {
      Chain chain = touchedChains.get(i);
      Node head = chain.head;
      if (head.version != version) {
        continue;
      }
      Node older = head.older;
      if (older == null || older == TRUNCATED) {
        removeChain(touchedKeys.get(i), chain);
      } else {
        cachedBytes +=
            (older.value == null ? 0 : older.value.length)
                - (head.value == null ? 0 : head.value.length);
        chain.head = older;
      }
    }
  }

  /** Records a chain the applying commit changed (paged storage only). */
  private void touched(byte[] key, Chain chain) {
    touchedKeys.add(key);
    touchedChains.add(chain);
  }

  private long awaitDurable(Storage s, long version) {
    try {
      return s.awaitDurable(version);
    } catch (RuntimeException e) {
      storageFailure = e;
      unreadable = e;
      throw e;
    }
  }

  /**
   * Refuses a new read version after a failed wait for durability: the commit it failed was handed
   * to the storage and may be there when it is opened again, so no read here can tell whether it
   * applied (one that did not see it would say it had not).
   */
  private void checkReadable() {
    RuntimeException failure = unreadable;
    if (failure != null) {
      throw new BackendException(
          BackendException.IO_ERROR,
          "reads are refused since the storage failed to make a commit durable (it may or may not"
              + " have applied; reopen to know): "
              + failure.getMessage(),
          failure);
    }
  }

  /**
   * Makes every commit up to {@code version} visible to new readers; with a paged storage, every
   * commit up to its newest durable view's version, which is at least {@code version}.
   */
  private void publish(long version) {
    synchronized (publishLock) {
      if (paged != null) {
        PagedStorage.View view;
        try {
          view = paged.view();
        } catch (RuntimeException e) {
          if (version <= visibleVersion) {
            return; // only refreshing the view: readers keep the one they have
          }
          throw e;
        }
        PagedStorage.View old = publishedView;
        if (view != old && view.version() >= visibleVersion) {
          publishedView = view;
          visibleVersion = view.version();
          if (old != null) {
            old.release();
          }
        } else {
          view.release();
        }
        return;
      }
      if (version > visibleVersion) {
        visibleVersion = version;
      }
    }
  }

  /** Arms the watches of a read-only commit, at the latest version. */
  void armReadOnly(List<Watch> list) {
    ArrayList<Watch> fired = new ArrayList<>();
    ArrayList<Watch> cancelled;
    synchronized (lock) {
      cancelled = armAll(list, fired);
    }
    completeLater(fired, cancelled);
  }

  /**
   * Applies the attempt's mutations at {@code version}: range clears first (point operations that
   * preceded a range clear were dropped by it), then point operations, then versionstamped keys.
   * Returns the number of keys written.
   */
  private int apply(
      MemoryTransaction tx, long version, long m, byte[] stamp, KeyRanges.Builder writeRanges) {
    int written = 0;
    long bytes = 0;
    TreeMap<byte[], byte[]> clears = tx.clears;
    if (clears != null) {
      for (Map.Entry<byte[], byte[]> c : clears.entrySet()) {
        bytes += ByteKeys.clearedBytes(c.getKey(), c.getValue());
        if (paged != null) {
          written += clearStored(c.getKey(), c.getValue(), version, m);
        }
        for (Map.Entry<byte[], Chain> e :
            data.subMap(c.getKey(), true, c.getValue(), false).entrySet()) {
          if (e.getValue().head.value != null) {
            toStorage(e.getKey(), null);
            replaceHead(e.getKey(), e.getValue(), null, version, m);
            written++;
          }
        }
      }
    }
    TreeMap<byte[], MemoryTransaction.Op> writes = tx.writes;
    if (writes != null) {
      for (Map.Entry<byte[], MemoryTransaction.Op> e : writes.entrySet()) {
        byte[] key = e.getKey();
        MemoryTransaction.Op op = e.getValue();
        byte[] value;
        Chain stored = null; // found when the value builds on the stored one (an atomic add)
        if (op.base == MemoryTransaction.Op.VALUE) {
          value = op.value;
        } else if (op.base == MemoryTransaction.Op.STAMPED) {
          value = ByteKeys.concat(op.value, stamp);
        } else {
          stored = data.get(key);
          value = stored == null ? storedLatest(key) : stored.head.value;
        }
        if (op.hasDelta) {
          value = MemoryTransaction.addLittleEndian(value, op.delta);
        }
        bytes += key.length + (value == null ? 0 : value.length);
        if (stored != null && value != null) {
          toStorage(key, value); // the chain is at hand: no second lookup
          replaceHead(key, stored, value, version, m);
        } else {
          write(key, value, version, m);
        }
        written++;
      }
    }
    ArrayList<MemoryTransaction.StampedKey> stamped = tx.stampedKeys;
    if (stamped != null) {
      for (MemoryTransaction.StampedKey s : stamped) {
        byte[] key = s.finalKey(stamp);
        writeRanges.addKey(key);
        if (s.clearedLater(key)) {
          continue;
        }
        bytes += key.length + s.value.length;
        write(key, s.value, version, m);
        written++;
      }
    }
    stats.bytesWritten.add(bytes);
    return written;
  }

  /**
   * Clears, in the paged storage, the keys of {@code [begin, end)} the map does not hold (the
   * caller ends the chains of those it does): one point delete each, or the range when it holds
   * more than {@link #POINT_CLEARS} keys.
   */
  private int clearStored(byte[] begin, byte[] end, long version, long m) {
    if (complete.covers(begin, end)) {
      return 0; // the chains of the range are every key it has
    }
    List<byte[]> stored = paged.latestKeys(begin, end, POINT_CLEARS + 1);
    if (stored.size() > POINT_CLEARS) {
      batchClearBegins.add(begin);
      batchClearEnds.add(end);
      rangeDeleteVersion = version;
      return 0;
    }
    int written = 0;
    for (byte[] key : stored) {
      if (!data.containsKey(key)) {
        write(key, null, version, m);
        written++;
      }
    }
    return written;
  }

  /**
   * Range clears of at most this many stored keys reach a paged storage as point deletes: a range
   * delete costs every later read of the memtable that holds it.
   */
  private static final int POINT_CLEARS = 1_000;

  private void write(byte[] key, byte @Nullable [] value, long version, long m) {
    toStorage(key, value);
    Chain chain;
    if (value != null) {
      // New keys (queue items, fresh stamps) are common: one traversal inserts them, and one finds
      // the chain of a key that exists.
      Chain fresh = new Chain(new Node(version, value, null));
      chain = data.putIfAbsent(key, fresh);
      if (chain == null) {
        if (paged != null) {
          added(key, value);
          touched(key, fresh);
          gcQueue.addLast(new GcEntry(key, fresh, version));
        }
        return;
      }
    } else {
      chain = data.get(key);
      if (chain == null && paged != null) {
        // A delete leaves a chain too: a range read that put the key's stored value into the heap
        // (load) must find it, and a complete range stays complete.
        Chain fresh = new Chain(new Node(version, null, null));
        data.put(key, fresh);
        added(key, null);
        touched(key, fresh);
        gcQueue.addLast(new GcEntry(key, fresh, version));
        return;
      }
      if (chain == null || chain.head.value == null) {
        return;
      }
    }
    replaceHead(key, chain, value, version, m);
  }

  /** Adds a write to the applying commit's batch for the storage, if there is one. */
  private void toStorage(byte[] key, byte @Nullable [] value) {
    if (storage != null) {
      batchKeys.add(key);
      batchValues.add(value);
    }
  }

  /** Makes {@code value} the newest version of {@code key}, whose chain is {@code chain}. */
  private void replaceHead(byte[] key, Chain chain, byte @Nullable [] value, long version, long m) {
    Node head = chain.head;
    Node older = head.version == version ? head.older : head;
    // Only the predecessor is looked at: walking down to m here would make every write of a hot
    // key quadratic while one slow reader holds m back. Deeper garbage waits for collect().
    if (older != null
        && older != TRUNCATED
        && older.version <= m
        && older.older != null
        && older.older != TRUNCATED) {
      older.older = TRUNCATED;
    }
    if (paged != null) {
      cachedBytes +=
          (value == null ? 0 : value.length) - (head.value == null ? 0 : head.value.length);
      touched(key, chain);
    }
    chain.head = new Node(version, value, older);
    if (value == null || paged != null || (older != null && older != TRUNCATED)) {
      gcQueue.addLast(new GcEntry(key, chain, version));
    }
  }

  /** Finishes cutting chains that held versions above {@code m} when they were written. */
  private void collect(long m, int budget) {
    for (int i = 0; i < budget; i++) {
      GcEntry g = gcQueue.peekFirst();
      if (g == null || g.version() > m) {
        return;
      }
      gcQueue.pollFirst();
      Chain chain = g.chain();
      Node head = chain.head;
      Node keep = head;
      while (keep != null && keep != TRUNCATED && keep.version > m) {
        keep = keep.older;
      }
      if (keep == null || keep == TRUNCATED) {
        continue;
      }
      if (keep == head && paged != null) {
        // No reader is below the head, and each reader's view holds it: a delete leaves the heap
        // now, a value stays as a cache until the heap's chains exceed their budget.
        if (head.value == null) {
          removeChain(g.key(), chain);
          continue;
        }
        if (head.older != null) {
          head.older = TRUNCATED;
        }
        if (head.version == g.version()) {
          evictQueue.addLast(g);
        }
      } else if (keep == head && head.value == null) {
        data.remove(g.key(), chain);
      } else if (keep.older != null) {
        keep.older = TRUNCATED;
      }
    }
  }

  /**
   * Evicts the oldest-written chains that have a value, at or below {@code m}, until the heap's
   * chains fit their budget; drops queue entries whose chain was written again since.
   */
  private void evictOverBudget(long m) {
    while (cachedBytes > cacheBudget) {
      GcEntry g = evictQueue.pollFirst();
      if (g == null) {
        return;
      }
      Chain chain = g.chain();
      Node head = chain.head;
      if (head.version != g.version() || head.version > m || head.value == null) {
        continue;
      }
      complete.evicting(g.key());
      removeChain(g.key(), chain);
    }
    if (evictQueue.size() > 2 * chainCount + 1024) {
      evictQueue.removeIf(
          g -> g.chain().head.version != g.version() || data.get(g.key()) != g.chain());
    }
  }

  /** Approximate heap bytes of a chain's head, for the cache's budget. */
  private static long chainBytes(byte[] key, byte @Nullable [] value) {
    return 112L + key.length + (value == null ? 0 : value.length);
  }

  /** Counts a chain put into the map (paged storage only). */
  private void added(byte[] key, byte @Nullable [] value) {
    cachedBytes += chainBytes(key, value);
    chainCount++;
  }

  private void removeChain(byte[] key, Chain chain) {
    if (data.remove(key, chain)) {
      cachedBytes -= chainBytes(key, chain.head.value);
      chainCount--;
    }
  }

  /** The newest committed value of {@code key}; called under the commit lock. */
  private byte @Nullable [] latest(byte[] key) {
    Chain chain = data.get(key);
    return chain == null ? storedLatest(key) : chain.head.value;
  }

  /** The newest value of a key the map does not hold; called under the commit lock. */
  private byte @Nullable [] storedLatest(byte[] key) {
    return paged == null || complete.covers(key) ? null : paged.latest(key);
  }

  // ---------------------------------------------------------------- watches

  /** Takes a watch slot; returns null when {@code maxWatches} are outstanding. */
  @Nullable Watch newWatch(byte[] key, byte @Nullable [] seen) {
    if (outstandingWatches.incrementAndGet() > maxWatches) {
      outstandingWatches.decrementAndGet();
      return null;
    }
    Watch w = new Watch(key, seen);
    w.future.whenComplete((v, t) -> release(w));
    return w;
  }

  int outstandingWatches() {
    return outstandingWatches.get();
  }

  private void release(Watch w) {
    if (!w.released.compareAndSet(false, true)) {
      return;
    }
    outstandingWatches.decrementAndGet();
    if (w.armed) {
      synchronized (lock) {
        disarm(w);
      }
    }
  }

  private void disarm(Watch w) {
    if (!w.armed) {
      return;
    }
    w.armed = false;
    ArrayList<Watch> list = watches.get(w.key);
    if (list != null && list.remove(w)) {
      armedWatches--;
      if (list.isEmpty()) {
        watches.remove(w.key);
      }
    }
  }

  /** Arms {@code list} under the lock; returns the watches to fail because the store is closed. */
  private @Nullable ArrayList<Watch> armAll(List<Watch> list, ArrayList<Watch> fired) {
    ArrayList<Watch> cancelled = null;
    for (Watch w : list) {
      if (w.future.isDone()) {
        continue;
      }
      if (closed) {
        if (cancelled == null) {
          cancelled = new ArrayList<>();
        }
        cancelled.add(w);
        continue;
      }
      stats.watchesArmed.increment();
      if (w.triggered || !Arrays.equals(w.seen, latest(w.key))) {
        fired.add(w);
        continue;
      }
      watches.computeIfAbsent(w.key, k -> new ArrayList<>(2)).add(w);
      armedWatches++;
      w.armed = true;
      // A cancel racing with arming may have missed armed == true: undo it here.
      if (w.future.isDone()) {
        disarm(w);
      }
    }
    return cancelled;
  }

  private void checkWatches(MemoryTransaction tx, byte @Nullable [] stamp, ArrayList<Watch> fired) {
    if (tx.clears != null) {
      for (Map.Entry<byte[], byte[]> c : tx.clears.entrySet()) {
        for (byte[] key :
            new ArrayList<>(watches.subMap(c.getKey(), true, c.getValue(), false).keySet())) {
          checkWatches(key, fired);
        }
      }
    }
    if (tx.writes != null) {
      for (byte[] key : tx.writes.keySet()) {
        checkWatches(key, fired);
      }
    }
    if (tx.stampedKeys != null && stamp != null) {
      for (MemoryTransaction.StampedKey s : tx.stampedKeys) {
        checkWatches(s.finalKey(stamp), fired);
      }
    }
  }

  private void checkWatches(byte[] key, ArrayList<Watch> fired) {
    ArrayList<Watch> list = watches.get(key);
    if (list == null) {
      return;
    }
    byte[] latest = latest(key);
    for (Iterator<Watch> it = list.iterator(); it.hasNext(); ) {
      Watch w = it.next();
      if (!Arrays.equals(w.seen, latest)) {
        it.remove();
        w.armed = false;
        armedWatches--;
        fired.add(w);
      }
    }
    if (list.isEmpty()) {
      watches.remove(key);
    }
  }

  private void completeLater(ArrayList<Watch> fired, @Nullable ArrayList<Watch> cancelled) {
    if (cancelled != null) {
      failAll(cancelled, "backend closed");
    }
    if (fired.isEmpty()) {
      return;
    }
    stats.watchesFired.add(fired.size());
    Runnable task =
        () -> {
          for (Watch w : fired) {
            // the slot first: whoever sees the watch fire may take a new one at once
            release(w);
            w.future.complete(null);
          }
        };
    try {
      executor.execute(task);
    } catch (RejectedExecutionException e) {
      task.run();
    }
  }

  private static void failAll(List<Watch> list, String why) {
    for (Watch w : list) {
      w.future.completeExceptionally(
          new BackendException(BackendException.TRANSACTION_CANCELLED, why));
    }
  }

  boolean isClosed() {
    return closed;
  }

  /** Fails every armed watch with {@code transaction_cancelled}; later arming fails too. */
  void close() {
    ArrayList<Watch> all = new ArrayList<>();
    synchronized (lock) {
      closed = true;
      for (ArrayList<Watch> list : watches.values()) {
        for (Watch w : list) {
          w.armed = false;
          all.add(w);
        }
      }
      watches.clear();
      armedWatches = 0;
    }
    failAll(all, "backend closed");
  }

  /** A watch: the value its transaction saw, and the future completed when the value changes. */
  static final class Watch {
    final byte[] key;
    final byte @Nullable [] seen;
    final CompletableFuture<Void> future = new CompletableFuture<>();
    volatile boolean armed;
    // Set when a later write of the watch's own attempt changed the key: it fires at commit.
    boolean triggered;
    final AtomicBoolean released = new AtomicBoolean();

    Watch(byte[] key, byte @Nullable [] seen) {
      this.key = key;
      this.seen = seen;
    }
  }
}
