package io.dgen.backend.rocksdb;

import io.dgen.backend.Backend;
import io.dgen.backend.BackendException;
import io.dgen.backend.ForwardingBackend;
import io.dgen.backend.Transaction;
import io.dgen.backend.memory.MemoryBackend;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.stream.Stream;
import org.rocksdb.BlockBasedTableConfig;
import org.rocksdb.BloomFilter;
import org.rocksdb.CompressionType;
import org.rocksdb.IndexType;
import org.rocksdb.LRUCache;
import org.rocksdb.Options;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;

/**
 * An embedded durable {@link Backend}: FoundationDB's transaction semantics (the memory backend's
 * engine: read-your-writes, serializable optimistic conflicts over a five-second window,
 * versionstamps, watches, limits, directories) with every acknowledged commit in a local RocksDB
 * whose write-ahead log is synced first, and reads served from RocksDB snapshots. Concurrent
 * commits share one sync (group commit).
 *
 * <pre>{@code
 * try (RocksDbBackend backend = RocksDbBackend.open(Path.of("data"))) {
 *   Subspace app = backend.directory("demo", "app");
 *   backend.run(tx -> { tx.add(app.pack(Tuple.from("hits")), 1); return null; });
 * }
 * }</pre>
 *
 * <h2>Data directory</h2>
 *
 * <ul>
 *   <li>{@value #FORMAT_FILE}: the format marker; a non-empty directory without it, or with another
 *       format, is refused with a {@link DataDirectoryException} and left untouched.
 *   <li>{@value #LOCK_FILE}: locked while a backend has the directory open. One process per
 *       directory: a second opener (another JVM, or this one) gets a {@link
 *       DataDirectoryException}. Several JVMs on one dataset is what FoundationDB is for.
 *   <li>{@code db/}: the RocksDB database.
 * </ul>
 *
 * <h2>Errors</h2>
 *
 * A failed disk write or sync raises {@link BackendException} with code {@link
 * BackendException#IO_ERROR io_error (1510)}, which is not retried. After a failed write (a full
 * disk, say) the next commit reopens RocksDB and goes on once there is room; after a failed sync
 * the backend refuses every later commit and read (the commit's outcome is unknown until the
 * directory is reopened). Everything else is as documented for {@link MemoryBackend}; see {@code
 * docs/embedded-backend.md}.
 *
 * <h2>Memory</h2>
 *
 * The data lives in RocksDB; the heap holds the versions running transactions need and a cache of
 * keys written or read recently ({@link Builder#heapCacheSize}), RocksDB's block cache is native
 * memory ({@link Builder#cacheSize}). Opening reads one key, whatever the size of the data.
 *
 * <p>Thread-safe.
 */
public final class RocksDbBackend extends ForwardingBackend {

  /** Name of the format marker file in the data directory. */
  public static final String FORMAT_FILE = "DGEN-FORMAT";

  /** Name of the file locked while the directory is open. */
  public static final String LOCK_FILE = "DGEN-LOCK";

  /** Content of the format marker of this version. */
  static final String FORMAT = "dgen-rocksdb 1\n";

  private static final String DB_DIR = "db";

  /** Default size of the block cache: 64 MiB. */
  public static final long DEFAULT_CACHE_SIZE = 64L << 20;

  /** Default budget of the engine's heap cache of recently written or read keys: 32 MiB. */
  public static final long DEFAULT_HEAP_CACHE_SIZE = 32L << 20;

  /** Default size of a data block: 16 KiB. */
  public static final int DEFAULT_BLOCK_SIZE = 16 << 10;

  /** How RocksDB compresses the blocks it writes to disk. */
  public enum Compression {
    /** No compression. */
    NONE(CompressionType.NO_COMPRESSION),
    /** LZ4: fast, moderate ratio (the default). */
    LZ4(CompressionType.LZ4_COMPRESSION),
    /** Zstandard: better ratio, more CPU per block written and read. */
    ZSTD(CompressionType.ZSTD_COMPRESSION),
    /** Snappy. */
    SNAPPY(CompressionType.SNAPPY_COMPRESSION);

    private final CompressionType type;

    Compression(CompressionType type) {
      this.type = type;
    }
  }

  static {
    RocksDB.loadLibrary();
  }

  private final MemoryBackend engine;
  private final RocksStorage storage;
  private final Path dir;
  private final FileChannel lockChannel;
  private final FileLock lock;
  private final long cacheSize;
  private final long heapCacheSize;
  private final int blockSize;
  private final Compression compression;

  private RocksDbBackend(
      MemoryBackend engine,
      RocksStorage storage,
      Path dir,
      FileChannel lockChannel,
      FileLock lock,
      Builder settings) {
    super(engine);
    this.engine = engine;
    this.storage = storage;
    this.dir = dir;
    this.lockChannel = lockChannel;
    this.lock = lock;
    this.cacheSize = settings.cacheSize;
    this.heapCacheSize = settings.heapCacheSize;
    this.blockSize = settings.blockSize;
    this.compression = settings.compression;
  }

  /**
   * Opens (or creates) the backend in {@code dir} with the default settings: every commit synced.
   *
   * @param dir the data directory; created if missing
   * @return the open backend; close it to release the directory
   * @throws DataDirectoryException if the directory is foreign, corrupted or already open
   * @throws BackendException {@code io_error (1510)} if reading the directory fails
   */
  public static RocksDbBackend open(Path dir) {
    return builder(dir).open();
  }

  /**
   * Returns a builder for a backend in {@code dir} with non-default settings.
   *
   * @param dir the data directory
   * @return a new builder
   */
  public static Builder builder(Path dir) {
    return new Builder(dir);
  }

  @Override
  public <T> T run(Function<? super Transaction, ? extends T> body) {
    return engine.run(body);
  }

  @Override
  public <T> CompletableFuture<T> runAsync(
      Function<? super Transaction, ? extends CompletableFuture<? extends T>> body) {
    return engine.runAsync(body);
  }

  /**
   * The fault injector of the engine (see {@link MemoryBackend#faults()}).
   *
   * @return the fault injector
   */
  public MemoryBackend.Faults faults() {
    return engine.faults();
  }

  /**
   * The engine's cost counters (see {@link MemoryBackend#counters()}).
   *
   * @return a snapshot of the counters
   */
  public MemoryBackend.Counters counters() {
    return engine.counters();
  }

  /**
   * The number of keys whose versions the engine holds in the heap: those written in the last few
   * seconds, or still needed by a running transaction's read version (see {@link
   * MemoryBackend#keysInMemory()}). Every other key is read from RocksDB.
   *
   * @return the number of keys held in memory
   */
  public int keysInMemory() {
    return engine.keysInMemory();
  }

  /**
   * The capacity of RocksDB's block cache ({@link Builder#cacheSize}).
   *
   * @return the cache size in bytes
   */
  public long cacheSize() {
    return cacheSize;
  }

  /**
   * The budget of the engine's heap cache ({@link Builder#heapCacheSize}).
   *
   * @return the budget in bytes
   */
  public long heapCacheSize() {
    return heapCacheSize;
  }

  /**
   * The data block size of the tables RocksDB writes ({@link Builder#blockSize}).
   *
   * @return the block size in bytes
   */
  public int blockSize() {
    return blockSize;
  }

  /**
   * The compression of the tables RocksDB writes ({@link Builder#compression}).
   *
   * @return the compression
   */
  public Compression compression() {
    return compression;
  }

  /**
   * The data directory.
   *
   * @return the directory this backend opened
   */
  public Path dataDirectory() {
    return dir;
  }

  /** Closes the engine, syncs and closes RocksDB and releases the directory. Idempotent. */
  @Override
  public void close() {
    engine.close();
    try {
      if (lock.isValid()) {
        lock.release();
      }
      lockChannel.close();
    } catch (IOException e) {
      // The lock goes with the channel or the process; nothing is lost.
    }
  }

  /** The RocksDB storage, for this package's tests. */
  RocksStorage storage() {
    return storage;
  }

  @Override
  public String toString() {
    return "RocksDbBackend{dir=" + dir + ", engine=" + engine + "}";
  }

  static BackendException ioError(Path dir, String what, Exception e) {
    return new BackendException(
        BackendException.IO_ERROR, what + " in " + dir + ": " + e.getMessage(), e);
  }

  /** Builds a {@link RocksDbBackend}. Not thread-safe. */
  public static final class Builder {
    private final Path dir;
    private boolean sync = true;
    private long cacheSize = DEFAULT_CACHE_SIZE;
    private long heapCacheSize = DEFAULT_HEAP_CACHE_SIZE;
    private int blockSize = DEFAULT_BLOCK_SIZE;
    private Compression compression = Compression.LZ4;
    private final MemoryBackend.Builder engine = MemoryBackend.builder();

    private Builder(Path dir) {
      this.dir = Objects.requireNonNull(dir, "dir").toAbsolutePath().normalize();
    }

    /**
     * Whether each commit waits for its write-ahead log sync (default {@code true}). Turning it off
     * keeps commits across a process crash but not across a power loss or OS crash: for benchmarks
     * that measure the sync's cost only.
     *
     * @param sync false to acknowledge commits before their sync
     * @return this builder
     */
    public Builder sync(boolean sync) {
      this.sync = sync;
      return this;
    }

    /**
     * The size of RocksDB's block cache, in bytes (default {@value #DEFAULT_CACHE_SIZE}, 64 MiB):
     * the uncompressed data, index and filter blocks read from disk stay in it, least recently used
     * out first. The cache is native memory, not Java heap. Reads that miss it go to the OS page
     * cache or the disk.
     *
     * @param bytes the cache's capacity, at least 1 MiB
     * @return this builder
     * @throws IllegalArgumentException if {@code bytes} is below 1 MiB
     */
    public Builder cacheSize(long bytes) {
      if (bytes < (1L << 20)) {
        throw new IllegalArgumentException("cacheSize must be at least 1 MiB: " + bytes);
      }
      this.cacheSize = bytes;
      return this;
    }

    /**
     * The budget, in bytes of Java heap, of the engine's cache of keys written or read recently
     * (default {@value #DEFAULT_HEAP_CACHE_SIZE}, 32 MiB): their newest values stay in the heap, so
     * that reading them, and reading ranges that hold only such keys, does not reach RocksDB. The
     * oldest written are evicted first once the budget is exceeded. Versions that running
     * transactions still need are kept whatever the budget (for at most five seconds).
     *
     * @param bytes the budget, at least 0 (0: keep only what transactions need)
     * @return this builder
     * @throws IllegalArgumentException if {@code bytes} is negative
     */
    public Builder heapCacheSize(long bytes) {
      if (bytes < 0) {
        throw new IllegalArgumentException("heapCacheSize must not be negative: " + bytes);
      }
      this.heapCacheSize = bytes;
      return this;
    }

    /**
     * The size of a data block of RocksDB's tables, in bytes (default {@value #DEFAULT_BLOCK_SIZE},
     * 16 KiB): the unit read from disk and cached. Smaller blocks make point reads of cold keys
     * cheaper; larger ones compress better and make range reads cheaper.
     *
     * @param bytes between 1 KiB and 1 MiB
     * @return this builder
     * @throws IllegalArgumentException if {@code bytes} is out of range
     */
    public Builder blockSize(int bytes) {
      if (bytes < 1024 || bytes > (1 << 20)) {
        throw new IllegalArgumentException("blockSize must be between 1 KiB and 1 MiB: " + bytes);
      }
      this.blockSize = bytes;
      return this;
    }

    /**
     * How RocksDB compresses the tables it writes (default {@link Compression#LZ4}). Changing it on
     * an existing directory applies to newly written tables; older ones stay readable.
     *
     * @param compression the compression
     * @return this builder
     */
    public Builder compression(Compression compression) {
      this.compression = Objects.requireNonNull(compression, "compression");
      return this;
    }

    /**
     * Configures the transaction engine: clock, watch limit, retry delays, executor (see {@link
     * MemoryBackend.Builder}; its {@code storage} is set by {@link #open()}).
     *
     * @param settings applied to the engine's builder
     * @return this builder
     */
    public Builder engine(Consumer<MemoryBackend.Builder> settings) {
      settings.accept(engine);
      return this;
    }

    /**
     * Opens the directory.
     *
     * @return the open backend
     * @throws DataDirectoryException if the directory is foreign, corrupted or already open
     * @throws BackendException {@code io_error (1510)} if reading or creating it fails
     */
    public RocksDbBackend open() {
      boolean fresh = checkFormat();
      FileChannel channel;
      FileLock lock;
      try {
        Files.createDirectories(dir);
        channel =
            FileChannel.open(
                dir.resolve(LOCK_FILE), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
      } catch (IOException e) {
        throw ioError(dir, "creating the data directory", e);
      }
      try {
        lock = lockOrFail(channel);
        if (fresh) {
          Files.writeString(dir.resolve(FORMAT_FILE), FORMAT, StandardCharsets.UTF_8);
        }
        RocksStorage storage = openDatabase(fresh);
        return new RocksDbBackend(
            engine.storage(storage).build(), storage, dir, channel, lock, this);
      } catch (IOException | RuntimeException e) {
        closeQuietly(channel);
        if (e instanceof RuntimeException re) {
          throw re;
        }
        throw ioError(dir, "writing " + FORMAT_FILE, (IOException) e);
      }
    }

    /** True if the directory is new or empty; throws if it is not a DGen RocksDB directory. */
    private boolean checkFormat() {
      Path marker = dir.resolve(FORMAT_FILE);
      try {
        if (Files.isRegularFile(marker)) {
          String found = Files.readString(marker, StandardCharsets.UTF_8);
          if (!found.equals(FORMAT)) {
            throw new DataDirectoryException(
                dir,
                FORMAT_FILE
                    + " says \""
                    + found.strip()
                    + "\", this version reads \""
                    + FORMAT.strip()
                    + "\"; nothing was changed",
                null);
          }
          return false;
        }
        if (!Files.exists(dir)) {
          return true;
        }
        if (!Files.isDirectory(dir)) {
          throw new DataDirectoryException(dir, "not a directory; nothing was changed", null);
        }
        try (Stream<Path> entries = Files.list(dir)) {
          if (entries.findAny().isPresent()) {
            throw new DataDirectoryException(
                dir,
                "not a DGen RocksDB data directory (no "
                    + FORMAT_FILE
                    + " file) and not empty; give an empty or new directory. Nothing was changed",
                null);
          }
        }
        return true;
      } catch (IOException e) {
        throw ioError(dir, "reading the data directory", e);
      }
    }

    private FileLock lockOrFail(FileChannel channel) throws IOException {
      FileLock lock;
      try {
        lock = channel.tryLock();
      } catch (OverlappingFileLockException e) {
        lock = null;
      }
      if (lock == null) {
        throw new DataDirectoryException(
            dir,
            "already open in another RocksDbBackend (this or another process). One process per"
                + " data directory: several JVMs on one dataset is what FoundationDB is for"
                + " (backend-fdb)",
            null);
      }
      return lock;
    }

    private RocksStorage openDatabase(boolean fresh) {
      Path db = dir.resolve(DB_DIR);
      if (!fresh && !Files.isRegularFile(db.resolve("CURRENT"))) {
        // RocksDB would create the directory before failing: refuse first, changing nothing.
        throw new DataDirectoryException(
            dir,
            "the RocksDB database in " + DB_DIR + "/ is missing or corrupted. Nothing was changed",
            null);
      }
      LRUCache cache = new LRUCache(cacheSize);
      BloomFilter filter = new BloomFilter(10);
      Options options =
          new Options()
              .setCreateIfMissing(fresh)
              .setErrorIfExists(fresh)
              .setParanoidChecks(true)
              .setCompressionType(compression.type)
              .setTableFormatConfig(
                  new BlockBasedTableConfig()
                      .setBlockCache(cache)
                      .setBlockSize(blockSize)
                      // A cold key costs one data block read: filters and indexes are cached
                      // (and counted in the cache's size), the filter skips tables without it.
                      // Both are partitioned, so that a large table's are read a small block at
                      // a time rather than whole (megabytes) after each eviction from the cache;
                      // their top levels stay pinned.
                      .setFilterPolicy(filter)
                      .setCacheIndexAndFilterBlocks(true)
                      .setCacheIndexAndFilterBlocksWithHighPriority(true)
                      .setPinL0FilterAndIndexBlocksInCache(true)
                      .setIndexType(IndexType.kTwoLevelIndexSearch)
                      .setPartitionFilters(true)
                      .setMetadataBlockSize(4096)
                      .setPinTopLevelIndexAndFilter(true));
      try {
        return new RocksStorage(
            dir,
            RocksDB.open(options, db.toString()),
            options,
            sync,
            heapCacheSize,
            List.of(filter, cache));
      } catch (RocksDBException e) {
        options.close();
        filter.close();
        cache.close();
        throw new DataDirectoryException(
            dir,
            "the RocksDB database in "
                + DB_DIR
                + "/ cannot be opened ("
                + e.getMessage()
                + "); it is missing or corrupted. Nothing was changed",
            e);
      }
    }

    private static void closeQuietly(FileChannel channel) {
      try {
        channel.close();
      } catch (IOException e) {
        // Already failing.
      }
    }
  }
}
