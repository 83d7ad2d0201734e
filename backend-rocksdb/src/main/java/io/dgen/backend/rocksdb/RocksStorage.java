package io.dgen.backend.rocksdb;

import io.dgen.backend.BackendException;
import io.dgen.backend.memory.Storage;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import org.jspecify.annotations.Nullable;
import org.rocksdb.FlushOptions;
import org.rocksdb.Options;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;
import org.rocksdb.WriteBatch;
import org.rocksdb.WriteOptions;

/**
 * The RocksDB side of a {@link RocksDbBackend}: the newest value of every key, plus the newest
 * commit version under {@link #VERSION_KEY} (above every user key, which the engine keeps below
 * {@code \xff}), written in the same atomic batch as the commit's writes.
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
final class RocksStorage implements Storage {

  /** The key of the newest commit version (8-byte big-endian). */
  static final byte[] VERSION_KEY = {(byte) 0xff, (byte) 0xff, 'v', 'e', 'r', 's', 'i', 'o', 'n'};

  private final Path dir;
  private final RocksDB db;
  private final Options options;
  private final WriteOptions writeOptions = new WriteOptions();
  private final boolean sync;

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

  RocksStorage(Path dir, RocksDB db, Options options, boolean sync) {
    this.dir = dir;
    this.db = db;
    this.options = options;
    this.sync = sync;
  }

  @Override
  public long recover(BiConsumer<byte[], byte[]> each) {
    long version = 0;
    try (RocksIterator it = db.newIterator()) {
      for (it.seekToFirst(); it.isValid(); it.next()) {
        byte[] key = it.key();
        if ((key[0] & 0xff) == 0xff) {
          if (java.util.Arrays.equals(key, VERSION_KEY)) {
            version = ByteBuffer.wrap(it.value()).getLong();
          }
          continue;
        }
        each.accept(key, it.value());
      }
      it.status();
    } catch (RocksDBException e) {
      throw RocksDbBackend.ioError(dir, "reading the data at open", e);
    }
    synchronized (syncLock) {
      appended = version;
      durable = version;
    }
    return version;
  }

  @Override
  public void append(long version, List<byte[]> keys, List<byte @Nullable []> values) {
    try (WriteBatch batch = new WriteBatch()) {
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
        db.write(writeOptions, batch);
      }
      appended = version;
    } catch (RocksDBException e) {
      throw fail(ioError("writing commit version " + version, e));
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
          if (error == null) {
            durable = Math.max(durable, target);
          } else if (failure == null) {
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
      if (failure == null) {
        // Flushing the memtable spares the next open a replay of the whole log.
        db.flush(flush);
      }
    } catch (RocksDBException e) {
      // Every acknowledged commit is in the synced log already; nothing more to keep.
    } finally {
      syncer.shutdown();
      drained(new IllegalStateException("backend is closed"));
      db.close();
      writeOptions.close();
      options.close();
    }
  }
}
