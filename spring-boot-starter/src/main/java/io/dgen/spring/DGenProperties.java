package io.dgen.spring;

import io.dgen.DGen;
import io.dgen.StateEncoding;
import java.nio.file.Path;
import java.time.Duration;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.util.unit.DataSize;

/**
 * The {@code dgen.*} configuration properties: which backend the auto-configured {@link
 * io.dgen.backend.Backend} opens, and how the auto-configured {@link DGen} runs. Every default is
 * the runtime's own, except the backend's (see {@link #getBackend()}). The table is in {@code
 * docs/spring.md}.
 *
 * <pre>{@code
 * dgen.backend=rocksdb
 * dgen.rocksdb.data-dir=/var/lib/myapp/dgen
 * dgen.max-batches-in-flight=512
 * dgen.shutdown-timeout=20s
 * }</pre>
 *
 * <p>Bound once by Spring at startup; not thread-safe, and not meant to be changed afterwards.
 */
@ConfigurationProperties("dgen")
public class DGenProperties {

  /** The backends the starter can open. */
  public enum BackendType {
    /** {@code MemoryBackend}: in memory, FoundationDB's semantics; lost when the JVM stops. */
    MEMORY,
    /** {@code RocksDbBackend}: embedded and durable, one process per data directory. */
    ROCKSDB,
    /** {@code FdbBackend}: a FoundationDB cluster, for several JVMs and any size of data. */
    FDB
  }

  /**
   * The backend to open: memory, rocksdb (needs dgen.rocksdb.data-dir) or fdb. Unset: memory, with
   * a warning that nothing is kept across restarts.
   */
  private @Nullable BackendType backend;

  /** The embedded RocksDB backend (dgen.backend=rocksdb). */
  private final RocksDb rocksdb = new RocksDb();

  /** The FoundationDB backend (dgen.backend=fdb). */
  private final Fdb fdb = new Fdb();

  /**
   * Threads that run callbacks, actions and the runtime's own steps. Unset: the number of cores, at
   * least 2.
   */
  private @Nullable Integer workerThreads;

  /** Consumer batches of all servers that may be in flight at once. */
  private int maxBatchesInFlight = DGen.Builder.DEFAULT_MAX_BATCHES_IN_FLIGHT;

  /**
   * How long a cast, a call's push, a kill and the like wait for a backend that does not answer.
   */
  private Duration operationTimeout = Duration.ofSeconds(30);

  /** How servers' states are laid out: structured (small diffs) or term (one document). */
  private StateEncoding stateEncoding = StateEncoding.STRUCTURED;

  /** How long this runtime's leases of hosted kinds outlive its last heartbeat. */
  private Duration leaseDuration = Duration.ofSeconds(5);

  /** Buckets a tenant's servers hash into, stored when a tenant is first opened. */
  private int buckets = 1024;

  /**
   * How long the application's shutdown waits for the batches in flight to commit; those still
   * running then are abandoned, and their messages stay queued.
   */
  private Duration shutdownTimeout = Duration.ofSeconds(10);

  /** The Actuator health indicator. */
  private final Health health = new Health();

  /** Creates the properties with their defaults; Spring binds the configured values. */
  public DGenProperties() {}

  /**
   * The backend to open. Default: none set, which opens the memory backend and logs a warning that
   * nothing is kept across restarts: right for tests and trials. For one durable node choose {@link
   * BackendType#ROCKSDB} with {@code dgen.rocksdb.data-dir}; for several, {@link BackendType#FDB}.
   *
   * @return the configured backend, or null if none was configured
   */
  public @Nullable BackendType getBackend() {
    return backend;
  }

  /**
   * Sets {@link #getBackend()}.
   *
   * @param backend the backend, or null for the default
   */
  public void setBackend(@Nullable BackendType backend) {
    this.backend = backend;
  }

  /**
   * The RocksDB settings ({@code dgen.rocksdb.*}).
   *
   * @return the settings, never null
   */
  public RocksDb getRocksdb() {
    return rocksdb;
  }

  /**
   * The FoundationDB settings ({@code dgen.fdb.*}).
   *
   * @return the settings, never null
   */
  public Fdb getFdb() {
    return fdb;
  }

  /**
   * {@code DGen.Builder.workerThreads}. Default: unset, the number of cores (at least 2).
   *
   * @return the thread count, or null for the runtime's default
   */
  public @Nullable Integer getWorkerThreads() {
    return workerThreads;
  }

  /**
   * Sets {@link #getWorkerThreads()}.
   *
   * @param workerThreads at least 1, or null for the default
   */
  public void setWorkerThreads(@Nullable Integer workerThreads) {
    this.workerThreads = workerThreads;
  }

  /**
   * {@code DGen.Builder.maxBatchesInFlight}. Default {@value
   * DGen.Builder#DEFAULT_MAX_BATCHES_IN_FLIGHT}.
   *
   * @return the bound
   */
  public int getMaxBatchesInFlight() {
    return maxBatchesInFlight;
  }

  /**
   * Sets {@link #getMaxBatchesInFlight()}.
   *
   * @param maxBatchesInFlight at least 1
   */
  public void setMaxBatchesInFlight(int maxBatchesInFlight) {
    this.maxBatchesInFlight = maxBatchesInFlight;
  }

  /**
   * {@code DGen.Builder.operationTimeout}. Default 30 s.
   *
   * @return the timeout
   */
  public Duration getOperationTimeout() {
    return operationTimeout;
  }

  /**
   * Sets {@link #getOperationTimeout()}.
   *
   * @param operationTimeout positive
   */
  public void setOperationTimeout(Duration operationTimeout) {
    this.operationTimeout = operationTimeout;
  }

  /**
   * {@code DGen.Builder.stateEncoding}. Default {@link StateEncoding#STRUCTURED}.
   *
   * @return the encoding
   */
  public StateEncoding getStateEncoding() {
    return stateEncoding;
  }

  /**
   * Sets {@link #getStateEncoding()}.
   *
   * @param stateEncoding the encoding
   */
  public void setStateEncoding(StateEncoding stateEncoding) {
    this.stateEncoding = stateEncoding;
  }

  /**
   * {@code DGen.Builder.leaseDuration}. Default 5 s.
   *
   * @return the lease
   */
  public Duration getLeaseDuration() {
    return leaseDuration;
  }

  /**
   * Sets {@link #getLeaseDuration()}.
   *
   * @param leaseDuration at least 100 ms
   */
  public void setLeaseDuration(Duration leaseDuration) {
    this.leaseDuration = leaseDuration;
  }

  /**
   * {@code DGen.Builder.buckets}. Default 1,024.
   *
   * @return the bucket count for new tenants
   */
  public int getBuckets() {
    return buckets;
  }

  /**
   * Sets {@link #getBuckets()}.
   *
   * @param buckets between 1 and the runtime's maximum
   */
  public void setBuckets(int buckets) {
    this.buckets = buckets;
  }

  /**
   * How long the application's shutdown waits for the runtime to stop: for the consumer batches in
   * flight to commit. When it expires the shutdown goes on (the backend is closed); the batches
   * still running then never commit, so their messages stay queued for the next runtime. Keep it at
   * most Spring's {@code spring.lifecycle.timeout-per-shutdown-phase} (default 30 s). Default 10 s.
   *
   * @return the timeout
   */
  public Duration getShutdownTimeout() {
    return shutdownTimeout;
  }

  /**
   * Sets {@link #getShutdownTimeout()}.
   *
   * @param shutdownTimeout zero or positive
   */
  public void setShutdownTimeout(Duration shutdownTimeout) {
    this.shutdownTimeout = shutdownTimeout;
  }

  /**
   * The health indicator's settings ({@code dgen.health.*}).
   *
   * @return the settings, never null
   */
  public Health getHealth() {
    return health;
  }

  /** {@code dgen.rocksdb.*}: the embedded RocksDB backend. */
  public static class RocksDb {

    /** The data directory; created if missing. Required with dgen.backend=rocksdb. */
    private @Nullable Path dataDir;

    /** Whether each commit waits for its write-ahead log sync. Turn off for benchmarks only. */
    private boolean sync = true;

    /** The budget of the engine's heap cache of keys written or read recently. */
    private DataSize heapCacheSize = DataSize.ofMegabytes(32);

    /** The size of RocksDB's block cache (native memory, not heap). */
    private DataSize cacheSize = DataSize.ofMegabytes(64);

    /** The size of a data block of RocksDB's tables. */
    private DataSize blockSize = DataSize.ofKilobytes(16);

    /** How RocksDB compresses the tables it writes. */
    private Compression compression = Compression.LZ4;

    /** How RocksDB compresses its tables ({@code RocksDbBackend.Compression}). */
    public enum Compression {
      /** No compression. */
      NONE,
      /** LZ4, the default. */
      LZ4,
      /** Zstandard. */
      ZSTD,
      /** Snappy. */
      SNAPPY
    }

    /** Creates the settings with their defaults. */
    public RocksDb() {}

    /**
     * {@code RocksDbBackend.Builder.heapCacheSize}: the Java heap the engine may keep the newest
     * values of keys written or read recently in. Default 32MB.
     *
     * @return the heap cache's budget
     */
    public DataSize getHeapCacheSize() {
      return heapCacheSize;
    }

    /**
     * Sets {@link #getHeapCacheSize()}.
     *
     * @param heapCacheSize the budget, e.g. {@code 128MB}
     */
    public void setHeapCacheSize(DataSize heapCacheSize) {
      this.heapCacheSize = heapCacheSize;
    }

    /**
     * {@code RocksDbBackend.Builder.cacheSize}: RocksDB's block cache, native memory outside the
     * heap. Default 64MB; at least 1MB.
     *
     * @return the cache size
     */
    public DataSize getCacheSize() {
      return cacheSize;
    }

    /**
     * Sets {@link #getCacheSize()}.
     *
     * @param cacheSize the cache size, e.g. {@code 256MB}
     */
    public void setCacheSize(DataSize cacheSize) {
      this.cacheSize = cacheSize;
    }

    /**
     * {@code RocksDbBackend.Builder.blockSize}: the unit RocksDB reads from disk and caches.
     * Default 16KB; between 1KB and 1MB.
     *
     * @return the block size
     */
    public DataSize getBlockSize() {
      return blockSize;
    }

    /**
     * Sets {@link #getBlockSize()}.
     *
     * @param blockSize the block size, e.g. {@code 4KB}
     */
    public void setBlockSize(DataSize blockSize) {
      this.blockSize = blockSize;
    }

    /**
     * {@code RocksDbBackend.Builder.compression}. Default LZ4.
     *
     * @return the compression
     */
    public Compression getCompression() {
      return compression;
    }

    /**
     * Sets {@link #getCompression()}.
     *
     * @param compression the compression
     */
    public void setCompression(Compression compression) {
      this.compression = compression;
    }

    /**
     * The data directory ({@code RocksDbBackend.open(dir)}); one process per directory. No default:
     * {@code dgen.backend=rocksdb} without it fails at startup.
     *
     * @return the directory, or null if not configured
     */
    public @Nullable Path getDataDir() {
      return dataDir;
    }

    /**
     * Sets {@link #getDataDir()}.
     *
     * @param dataDir the directory
     */
    public void setDataDir(@Nullable Path dataDir) {
      this.dataDir = dataDir;
    }

    /**
     * {@code RocksDbBackend.Builder.sync}. Default true: every acknowledged commit survives a power
     * loss.
     *
     * @return whether commits wait for their sync
     */
    public boolean isSync() {
      return sync;
    }

    /**
     * Sets {@link #isSync()}.
     *
     * @param sync whether commits wait for their sync
     */
    public void setSync(boolean sync) {
      this.sync = sync;
    }
  }

  /** {@code dgen.fdb.*}: the FoundationDB backend. */
  public static class Fdb {

    /** The cluster file. Unset: FoundationDB's default (FDB_CLUSTER_FILE, then the system's). */
    private @Nullable Path clusterFile;

    /** The FoundationDB API version, selected once per JVM. */
    private int apiVersion = 730;

    /** The timeout of every transaction across its retries; 0 means none. */
    private Duration transactionTimeout = Duration.ZERO;

    /** Retries after which a transaction gives up; -1 means unlimited. */
    private int retryLimit = -1;

    /** The most outstanding watches of the database handle. */
    private int maxWatches = 10_000;

    /** FoundationDB's experimental automatic idempotency of commits. */
    private boolean automaticIdempotency;

    /** Creates the settings with their defaults. */
    public Fdb() {}

    /**
     * {@code FdbBackend.Builder.clusterFile}. Default: unset, FoundationDB's default cluster file
     * ({@code FDB_CLUSTER_FILE}, else {@code fdb.cluster} in the working directory, else the
     * system's).
     *
     * @return the cluster file, or null for the default
     */
    public @Nullable Path getClusterFile() {
      return clusterFile;
    }

    /**
     * Sets {@link #getClusterFile()}.
     *
     * @param clusterFile an existing cluster file
     */
    public void setClusterFile(@Nullable Path clusterFile) {
      this.clusterFile = clusterFile;
    }

    /**
     * {@code FdbBackend.Builder.apiVersion}. Default 730.
     *
     * @return the API version
     */
    public int getApiVersion() {
      return apiVersion;
    }

    /**
     * Sets {@link #getApiVersion()}.
     *
     * @param apiVersion between 620 and 730
     */
    public void setApiVersion(int apiVersion) {
      this.apiVersion = apiVersion;
    }

    /**
     * {@code FdbBackend.Builder.transactionTimeout}. Default zero: none.
     *
     * @return the timeout
     */
    public Duration getTransactionTimeout() {
      return transactionTimeout;
    }

    /**
     * Sets {@link #getTransactionTimeout()}.
     *
     * @param transactionTimeout zero, or at least 1 ms
     */
    public void setTransactionTimeout(Duration transactionTimeout) {
      this.transactionTimeout = transactionTimeout;
    }

    /**
     * {@code FdbBackend.Builder.retryLimit}. Default -1: unlimited.
     *
     * @return the retry limit
     */
    public int getRetryLimit() {
      return retryLimit;
    }

    /**
     * Sets {@link #getRetryLimit()}.
     *
     * @param retryLimit -1, or at least 0
     */
    public void setRetryLimit(int retryLimit) {
      this.retryLimit = retryLimit;
    }

    /**
     * {@code FdbBackend.Builder.maxWatches}. Default 10,000, FoundationDB's own.
     *
     * @return the limit
     */
    public int getMaxWatches() {
      return maxWatches;
    }

    /**
     * Sets {@link #getMaxWatches()}.
     *
     * @param maxWatches between 0 and 1,000,000
     */
    public void setMaxWatches(int maxWatches) {
      this.maxWatches = maxWatches;
    }

    /**
     * {@code FdbBackend.Builder.automaticIdempotency}. Default false.
     *
     * @return whether it is on
     */
    public boolean isAutomaticIdempotency() {
      return automaticIdempotency;
    }

    /**
     * Sets {@link #isAutomaticIdempotency()}.
     *
     * @param automaticIdempotency whether to turn it on
     */
    public void setAutomaticIdempotency(boolean automaticIdempotency) {
      this.automaticIdempotency = automaticIdempotency;
    }
  }

  /** {@code dgen.health.*}: the Actuator health indicator. */
  public static class Health {

    /** How long a health check waits for the backend's answer before reporting DOWN. */
    private Duration timeout = Duration.ofSeconds(2);

    /** Creates the settings with their defaults. */
    public Health() {}

    /**
     * How long a health check waits for each of its reads before it reports DOWN. Default 2 s.
     *
     * @return the timeout
     */
    public Duration getTimeout() {
      return timeout;
    }

    /**
     * Sets {@link #getTimeout()}.
     *
     * @param timeout positive
     */
    public void setTimeout(Duration timeout) {
      this.timeout = timeout;
    }
  }
}
