package io.dgen.backend.rocksdb;

import io.dgen.backend.BackendException;
import io.dgen.backend.memory.PagedStorage;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiConsumer;
import org.jspecify.annotations.Nullable;
import org.rocksdb.FlushOptions;
import org.rocksdb.Options;
import org.rocksdb.ReadOptions;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;
import org.rocksdb.Slice;
import org.rocksdb.Snapshot;
import org.rocksdb.WriteBatch;
import org.rocksdb.WriteOptions;

/**
 * The RocksDB side of a {@link RocksDbBackend}: the newest value of every key, plus the newest
 * commit version under {@link #VERSION_KEY} (above every user key, which the engine keeps below
 * {@code \xff}), written in the same atomic batch as the commit's writes.
 *
 * <h2>Reads</h2>
 *
 * The engine keeps only recently written keys in memory and reads the rest here ({@link
 * PagedStorage}), through a {@link View}: a RocksDB {@link Snapshot} that shows exactly the commits
 * up to one version. Batches are written to RocksDB, and {@link #appended} set, under {@link
 * #syncLock}; so a snapshot taken under it holds exactly the commits up to {@link #appended}. A
 * sync's leader takes one when it starts and publishes it as the {@link #view} of its target once
 * the sync succeeds (without syncs, {@link #view} takes one per new version on demand). Native
 * calls are bracketed by {@link #enter}/{@link #exit}, so that {@link #close} waits for the reads
 * in flight before it frees snapshots and the database.
 *
 * <h2>Group commit</h2>
 *
 * {@link #append} writes the batch to the memtable and the write-ahead log without syncing (the
 * engine calls it under its commit lock). {@link #awaitDurable} then makes one caller the leader,
 * which syncs the log once for every batch appended so far; the others wait for that sync, or lead
 * the next one. A commit of {@code runAsync} waits without a thread ({@link #durableAsync}): one
 * sync thread leads or joins those syncs for all such commits at once. A failed write or sync is
 * sticky: this storage fails every later call.
 */
final class RocksStorage implements PagedStorage {

  /** The key of the newest commit version (8-byte big-endian). */
  static final byte[] VERSION_KEY = {(byte) 0xff, (byte) 0xff, 'v', 'e', 'r', 's', 'i', 'o', 'n'};

  private final Path dir;
  private final Path dbPath;
  // Replaced only by reopen(), under syncLock and with no native call in flight.
  private volatile RocksDB db;
  private final Options options;
  private final WriteOptions writeOptions = new WriteOptions();
  private final ReadOptions latestOptions = new ReadOptions();
  private final boolean sync;
  private final List<AutoCloseable> resources;
  private final long heapCacheBytes;

  // Reads in native code right now; close waits for them (see enter/exit).
  private final AtomicInteger active = new AtomicInteger();
  private volatile boolean closing;
  // Set while reopen() swaps the database; enter() refuses meanwhile.
  private volatile boolean reopening;
  // Guarded by syncLock: a batch write failed; the next append reopens the database first.
  private boolean writeFailed;
  // Guarded by syncLock: the snapshots not yet released, freed by close if their views are not.
  private final Set<RocksView> liveViews = new HashSet<>();
  // Guarded by syncLock: the view of `durable`, with one reference held here.
  private @Nullable RocksView durableView;

  private final Object syncLock = new Object();
  private volatile long appended;
  // Guarded by syncLock.
  private long durable;
  private boolean syncing;
  private @Nullable RuntimeException failure;
  private boolean closed;
  private long syncs;
  // Guarded by syncLock: durableAsync's futures for the sync thread, and whether it is draining
  // them.
  private final List<Waiter> waiters = new ArrayList<>();
  private boolean draining;

  /**
   * The thread that syncs for {@link #durableAsync}'s callers, so that none of them waits in its
   * own thread; made on demand, dropped when idle.
   */
  private final ThreadPoolExecutor syncer =
      new ThreadPoolExecutor(
          0,
          1,
          30,
          TimeUnit.SECONDS,
          new LinkedBlockingQueue<>(),
          r -> {
            Thread t = new Thread(r, "dgen-rocksdb-sync");
            t.setDaemon(true);
            return t;
          });

  /** A commit waiting to be durable without a thread of its own. */
  private record Waiter(long version, CompletableFuture<Long> future) {}

  /** Set by tests: the next sync fails, as a disk that refuses to flush does. */
  volatile boolean failNextSync;

  /** Set by tests: every sync waits for this latch first, as a slow disk makes it wait. */
  volatile @Nullable CountDownLatch syncGate;

  RocksStorage(
      Path dir,
      RocksDB db,
      Options options,
      boolean sync,
      long heapCacheBytes,
      List<AutoCloseable> resources) {
    this.heapCacheBytes = heapCacheBytes;
    this.dbPath = Path.of(db.getName());
    this.dir = dir;
    this.db = db;
    this.options = options;
    this.sync = sync;
    this.resources = resources;
  }

  /**
   * Reads only the newest commit version: the engine reads keys through {@link #view} as it needs
   * them, so opening costs the same whatever the size of the data.
   */
  @Override
  public long recover(BiConsumer<byte[], byte[]> each) {
    long version;
    try {
      byte[] stored = db.get(VERSION_KEY);
      version = stored == null ? 0 : ByteBuffer.wrap(stored).getLong();
    } catch (RocksDBException e) {
      throw RocksDbBackend.ioError(dir, "reading the data at open", e);
    }
    synchronized (syncLock) {
      appended = version;
      durable = version;
      durableView = new RocksView(version, db.getSnapshot());
      liveViews.add(durableView);
    }
    return version;
  }

  @Override
  public byte @Nullable [] latest(byte[] key) {
    enter();
    try {
      return current().get(latestOptions, key);
    } catch (RocksDBException e) {
      throw ioError("reading a key", e);
    } finally {
      exit();
    }
  }

  @Override
  public long heapCacheBytes() {
    return heapCacheBytes;
  }

  @Override
  public List<byte[]> latestKeys(byte[] begin, byte[] end, int limit) {
    enter();
    try (Slice upper = new Slice(end);
        ReadOptions options = new ReadOptions().setIterateUpperBound(upper);
        RocksIterator it = current().newIterator(options)) {
      List<byte[]> keys = new ArrayList<>();
      for (it.seek(begin); it.isValid() && keys.size() < limit; it.next()) {
        keys.add(it.key());
      }
      it.status();
      return keys;
    } catch (RocksDBException e) {
      throw ioError("reading a cleared range", e);
    } finally {
      exit();
    }
  }

  @Override
  public PagedStorage.View view() {
    synchronized (syncLock) {
      checkOpen();
      if (durableView == null) {
        throw new BackendException(
            BackendException.IO_ERROR,
            "the database in "
                + dir
                + " could not be reopened after a failed write; free some"
                + " disk space: the next commit tries again");
      }
      if (!sync && durableView.version() < appended) {
        // Without syncs every appended batch is durable as soon as written.
        durable = appended;
        replaceDurableView(new RocksView(appended, db.getSnapshot()));
      }
      RocksView v = durableView;
      if (!v.retain()) {
        throw new IllegalStateException("the newest view is freed: " + v.version());
      }
      return v;
    }
  }

  /** Under syncLock: makes {@code v} (one reference held here) the view of the durable version. */
  private void replaceDurableView(RocksView v) {
    liveViews.add(v);
    RocksView old = durableView;
    durableView = v;
    if (old != null) {
      old.release();
    }
  }

  /** The database; io_error if it could not be reopened after a failed write. */
  private RocksDB current() {
    RocksDB d = db;
    if (d == null) {
      throw new BackendException(
          BackendException.IO_ERROR,
          "the database in "
              + dir
              + " could not be reopened after a failed write; free some disk"
              + " space: the next commit tries again");
    }
    return d;
  }

  /** Counts a native call in flight; fails if the storage is closing or being reopened. */
  private void enter() {
    active.incrementAndGet();
    if (closing || reopening) {
      active.decrementAndGet();
      if (closing) {
        throw new IllegalStateException("backend is closed");
      }
      throw stale();
    }
  }

  /**
   * A read of a snapshot of the database before it was reopened: the transaction retries at a new
   * read version, as one whose version was collected does.
   */
  private static BackendException stale() {
    return new BackendException(
        BackendException.TRANSACTION_TOO_OLD,
        "the read version's snapshot went with a reopen of the database after a failed write");
  }

  /**
   * Under syncLock, before writing after a failed write: RocksDB refuses every write after a failed
   * log write until it is reopened (its Java API has no resume), so this closes and reopens it. The
   * log replays what was written before the failure (every acknowledged commit, and those waiting
   * for their sync, which it makes durable); a record the failure tore is dropped. Snapshots of the
   * old database go with it: their readers fail with a retryable 1007. If the reopen fails (the
   * disk is still full), the next append tries again.
   */
  private void reopen() {
    while (syncing) {
      try {
        syncLock.wait();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted while reopening the database", e);
      }
    }
    reopening = true;
    try {
      while (active.get() > 0) {
        Thread.onSpinWait(); // single native calls, or a range being read: they end soon
      }
      freeViews();
      if (db != null) {
        db.close();
        db = null;
      }
      options.setCreateIfMissing(false).setErrorIfExists(false);
      try {
        db = RocksDB.open(options, dbPath.toString());
      } catch (RocksDBException e) {
        throw ioError("reopening the database after a failed write (free some disk space)", e);
      }
      durable = appended;
      replaceDurableView(new RocksView(appended, db.getSnapshot()));
      writeFailed = false;
      syncLock.notifyAll();
    } finally {
      reopening = false;
    }
  }

  private void exit() {
    active.decrementAndGet();
  }

  private void checkOpen() {
    if (closing) {
      throw new IllegalStateException("backend is closed");
    }
  }

  /** A RocksDB snapshot: the data exactly as of one commit version. */
  private final class RocksView extends PagedStorage.View {
    private final RocksDB owner;
    private final Snapshot snapshot;
    private final ReadOptions readOptions;

    RocksView(long version, Snapshot snapshot) {
      super(version);
      this.owner = db;
      this.snapshot = snapshot;
      this.readOptions = new ReadOptions().setSnapshot(snapshot);
    }

    @Override
    public byte @Nullable [] get(byte[] key) {
      enter();
      try {
        if (owner != db) {
          throw stale();
        }
        return owner.get(readOptions, key);
      } catch (RocksDBException e) {
        throw ioError("reading a key", e);
      } finally {
        exit();
      }
    }

    @Override
    public Cursor range(byte[] begin, byte[] end, boolean reverse) {
      enter();
      try {
        if (owner != db) {
          throw stale();
        }
        return new RocksCursor(snapshot, begin, end, reverse);
      } catch (RuntimeException | Error e) {
        exit();
        throw e;
      }
    }

    @Override
    protected void free() {
      synchronized (syncLock) {
        if (!liveViews.remove(this)) {
          return; // freed by close or reopen
        }
        owner.releaseSnapshot(snapshot);
        readOptions.close();
      }
    }

    /** Frees the snapshot at close or reopen, whoever still holds the view; under syncLock. */
    void freeAtClose() {
      owner.releaseSnapshot(snapshot);
      readOptions.close();
    }
  }

  /** A range read of a snapshot; holds an {@link #enter} until closed. */
  private final class RocksCursor implements Cursor {
    private final Slice lower;
    private final Slice upper;
    private final ReadOptions readOptions;
    private final RocksIterator it;
    private final boolean reverse;
    private boolean started;
    private boolean closed;

    RocksCursor(Snapshot snapshot, byte[] begin, byte[] end, boolean reverse) {
      this.reverse = reverse;
      this.lower = new Slice(begin);
      this.upper = new Slice(end);
      this.readOptions =
          new ReadOptions()
              .setSnapshot(snapshot)
              .setIterateLowerBound(lower)
              .setIterateUpperBound(upper);
      this.it = db.newIterator(readOptions);
    }

    @Override
    public boolean next() {
      if (!started) {
        started = true;
        if (reverse) {
          it.seekToLast();
        } else {
          it.seekToFirst();
        }
      } else if (reverse) {
        it.prev();
      } else {
        it.next();
      }
      if (it.isValid()) {
        return true;
      }
      try {
        it.status();
      } catch (RocksDBException e) {
        throw ioError("reading a range", e);
      }
      return false;
    }

    @Override
    public byte[] key() {
      return it.key();
    }

    @Override
    public byte[] value() {
      return it.value();
    }

    @Override
    public void close() {
      if (closed) {
        return;
      }
      closed = true;
      it.close();
      readOptions.close();
      lower.close();
      upper.close();
      exit();
    }
  }

  @Override
  public void append(
      long version,
      List<byte[]> clearBegins,
      List<byte[]> clearEnds,
      List<byte[]> keys,
      List<byte @Nullable []> values) {
    try (WriteBatch batch = new WriteBatch()) {
      for (int i = 0; i < clearBegins.size(); i++) {
        batch.deleteRange(clearBegins.get(i), clearEnds.get(i));
      }
      for (int i = 0; i < keys.size(); i++) {
        byte[] v = values.get(i);
        if (v == null) {
          batch.delete(keys.get(i));
        } else {
          batch.put(keys.get(i), v);
        }
      }
      batch.put(VERSION_KEY, ByteBuffer.allocate(8).putLong(version).array());
      synchronized (syncLock) {
        checkUsable();
        if (writeFailed) {
          reopen();
        }
        try {
          db.write(writeOptions, batch);
        } catch (RocksDBException e) {
          writeFailed = true;
          throw e;
        }
        // Under the lock with the write: a snapshot taken under it is exactly at `appended`.
        appended = version;
      }
    } catch (RocksDBException e) {
      // Nothing of the batch is acknowledged, and the engine takes it back out of its heap: a
      // later commit may succeed (RocksDB resumes by itself after some errors, such as a full disk
      // during a flush). A batch that reached the log only in part is dropped when it is replayed.
      throw ioError("writing commit version " + version, e);
    }
  }

  @Override
  public long awaitDurable(long version) {
    if (!sync) {
      return version;
    }
    boolean interrupted = false;
    try {
      for (; ; ) {
        long target;
        Snapshot snapshot;
        synchronized (syncLock) {
          while (durable < version && syncing && failure == null) {
            try {
              syncLock.wait();
            } catch (InterruptedException e) {
              interrupted = true; // the commit is in the log: its outcome must be waited for
            }
          }
          if (durable >= version) {
            return durable;
          }
          checkUsable();
          syncing = true;
          syncs++;
          target = appended;
          if (db == null) {
            throw new BackendException(
                BackendException.IO_ERROR,
                "the database in " + dir + " could not be reopened after a failed write");
          }
          snapshot = db.getSnapshot();
        }
        RuntimeException error = null;
        try {
          CountDownLatch gate = syncGate;
          while (gate != null && gate.getCount() > 0) {
            try {
              gate.await();
            } catch (InterruptedException e) {
              interrupted = true;
            }
          }
          if (failNextSync) {
            failNextSync = false;
            throw new RocksDBException("injected by a test");
          }
          db.syncWal();
        } catch (RocksDBException e) {
          error = ioError("syncing the write-ahead log", e);
        }
        synchronized (syncLock) {
          syncing = false;
          if (error == null && target > durable) {
            durable = target;
            replaceDurableView(new RocksView(target, snapshot));
          } else {
            db.releaseSnapshot(snapshot);
          }
          if (error != null && failure == null) {
            failure = error;
          }
          syncLock.notifyAll();
        }
        if (error != null) {
          throw error;
        }
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /**
   * Completes once every batch up to {@code version} is durable: the sync thread takes part in the
   * group commit for it ({@link #awaitDurable}), so the caller's thread never waits for a sync.
   */
  @Override
  public CompletableFuture<Long> durableAsync(long version) {
    if (!sync) {
      return CompletableFuture.completedFuture(version);
    }
    CompletableFuture<Long> future = new CompletableFuture<>();
    synchronized (syncLock) {
      if (durable >= version) {
        return CompletableFuture.completedFuture(durable);
      }
      try {
        checkUsable();
      } catch (RuntimeException e) {
        return CompletableFuture.failedFuture(e);
      }
      waiters.add(new Waiter(version, future));
      if (draining) {
        return future;
      }
      draining = true;
    }
    try {
      syncer.execute(this::drain);
    } catch (RejectedExecutionException e) {
      drained(new IllegalStateException("backend is closed", e));
    }
    return future;
  }

  /** On the sync thread: makes the waiting commits durable, a group per sync, until none waits. */
  private void drain() {
    while (true) {
      List<Waiter> group;
      synchronized (syncLock) {
        if (waiters.isEmpty()) {
          draining = false;
          return;
        }
        group = new ArrayList<>(waiters);
        waiters.clear();
      }
      long target = group.stream().mapToLong(Waiter::version).max().orElseThrow();
      try {
        long durableNow = awaitDurable(target);
        group.forEach(w -> w.future().complete(durableNow));
      } catch (RuntimeException e) {
        group.forEach(w -> w.future().completeExceptionally(e));
      }
    }
  }

  /** Fails every waiting commit with {@code e} when the sync thread cannot take them. */
  private void drained(RuntimeException e) {
    List<Waiter> group;
    synchronized (syncLock) {
      group = new ArrayList<>(waiters);
      waiters.clear();
      draining = false;
    }
    group.forEach(w -> w.future().completeExceptionally(e));
  }

  private void checkUsable() {
    if (failure != null) {
      throw failure;
    }
    if (closed) {
      throw new IllegalStateException("backend is closed");
    }
  }

  private RuntimeException fail(RuntimeException e) {
    synchronized (syncLock) {
      if (failure == null && !closed) {
        failure = e;
      }
      syncLock.notifyAll();
    }
    return e;
  }

  private BackendException ioError(String what, RocksDBException e) {
    return RocksDbBackend.ioError(dir, what, e);
  }

  /** Number of write-ahead log syncs so far (for tests of group commit). */
  long syncs() {
    synchronized (syncLock) {
      return syncs;
    }
  }

  /** Number of live and deleted entries RocksDB estimates it holds (for tests and docs). */
  long estimatedKeys() {
    try {
      return db.getLongProperty("rocksdb.estimate-num-keys");
    } catch (RocksDBException e) {
      throw ioError("reading a property", e);
    }
  }

  @Override
  public void close() {
    closing = true;
    while (active.get() > 0) {
      // Reads in flight are single native calls (or a range being read): they end soon.
      Thread.onSpinWait();
    }
    synchronized (syncLock) {
      while (syncing) {
        try {
          syncLock.wait();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          break;
        }
      }
      if (closed) {
        return;
      }
      closed = true;
      syncLock.notifyAll();
    }
    try (FlushOptions flush = new FlushOptions().setWaitForFlush(true)) {
      if (failure == null && db != null) {
        // Flushing the memtable spares the next open a replay of the whole log.
        db.flush(flush);
      }
    } catch (RocksDBException e) {
      // Every acknowledged commit is in the synced log already; nothing more to keep.
    } finally {
      syncer.shutdown();
      drained(new IllegalStateException("backend is closed"));
      synchronized (syncLock) {
        freeViews();
      }
      if (db != null) {
        db.close();
      }
      writeOptions.close();
      latestOptions.close();
      options.close();
      for (AutoCloseable r : resources) {
        try {
          r.close();
        } catch (Exception e) {
          // Native memory only; the database is closed.
        }
      }
    }
  }

  /** Frees every snapshot a view still holds; under the sync lock, before the database closes. */
  private void freeViews() {
    for (RocksView v : liveViews) {
      v.freeAtClose();
    }
    liveViews.clear();
    durableView = null;
  }
}
