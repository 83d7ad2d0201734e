package io.dgen.benchmarks;

import io.dgen.backend.Backend;
import io.dgen.backend.CountingBackend;
import io.dgen.backend.fdb.FdbBackend;
import io.dgen.backend.memory.MemoryBackend;
import io.dgen.backend.rocksdb.RocksDbBackend;
import io.dgen.fdbtest.LocalFdbServer;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.Optional;
import java.util.UUID;
import java.util.function.Supplier;
import java.util.stream.Stream;
import org.jspecify.annotations.Nullable;

/**
 * Where the scenarios run: a fresh memory backend for each, a fresh RocksDB data directory for
 * each, or one FoundationDB cluster (each scenario opening its own {@link FdbBackend} and working
 * in its own directory, removed after).
 */
abstract class Target implements AutoCloseable {

  /**
   * One scenario's backend and its counters; closing it removes what the scenario wrote.
   *
   * @param backend the backend
   * @param root the top-level directory the scenario's tenants go under
   * @param meter reads the backend's counters
   * @param release releases the backend
   */
  record Bench(Backend backend, String root, Supplier<Cost> meter, Runnable release)
      implements AutoCloseable {
    /** The backend's counters now. */
    Cost cost() {
      return meter.get();
    }

    @Override
    public void close() {
      release.run();
    }
  }

  /** The memory backend, a fresh one per scenario. */
  static Target memory() {
    return new Target() {
      @Override
      Bench open(int maxWatches) {
        MemoryBackend memory = MemoryBackend.builder().maxWatches(maxWatches).build();
        return new Bench(memory, "bench", () -> Cost.of(memory.counters()), memory::close);
      }

      @Override
      String name() {
        return "memory";
      }

      @Override
      String description() {
        return "in-memory (MemoryBackend, FoundationDB semantics)";
      }
    };
  }

  /**
   * The embedded RocksDB backend, a fresh data directory per scenario under the temporary
   * directory, deleted after it.
   *
   * @param sync whether each commit waits for its write-ahead log sync (the default); without it
   *     the rows show what the syncs cost
   */
  static Target rocksdb(boolean sync) {
    return new Target() {
      @Override
      Bench open(int maxWatches) {
        Path dir;
        try {
          dir = Files.createTempDirectory("dgen-bench-rocksdb");
        } catch (IOException e) {
          throw new UncheckedIOException(e);
        }
        RocksDbBackend rocks =
            RocksDbBackend.builder(dir.resolve("data"))
                .sync(sync)
                .engine(b -> b.maxWatches(maxWatches))
                .open();
        return new Bench(
            rocks,
            "bench",
            () -> Cost.of(rocks.counters()),
            () -> {
              rocks.close();
              deleteTree(dir);
            });
      }

      @Override
      String name() {
        return sync ? "RocksDB" : "RocksDB (no sync)";
      }

      @Override
      Boolean rocksdbSync() {
        return sync;
      }

      @Override
      String description() {
        return "embedded RocksDB (RocksDbBackend), "
            + (sync
                ? "every commit's write-ahead log synced (group commit)"
                : "sync off: commits acknowledged before their fsync");
      }
    };
  }

  /** Deletes {@code dir} and everything under it; nothing if it does not exist. */
  static void deleteTree(Path dir) {
    if (!Files.exists(dir)) {
      return;
    }
    try (Stream<Path> files = Files.walk(dir)) {
      files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * A FoundationDB cluster: {@code clusterFile}, else {@code FDB_CLUSTER_FILE}, else a throwaway
   * one-process cluster started from a local installation ({@link LocalFdbServer}). A local
   * installation's client library is used either way.
   *
   * @throws IllegalArgumentException if there is no cluster and no installation to start one
   */
  static Target fdb(@Nullable Path clusterFile) {
    Optional<LocalFdbServer.Installation> local = LocalFdbServer.findInstallation();
    local.ifPresent(LocalFdbServer.Installation::useClientLibrary);
    Path file = clusterFile;
    if (file == null) {
      String env = System.getenv("FDB_CLUSTER_FILE");
      file = env == null || env.isBlank() ? null : Path.of(env);
    }
    if (file != null) {
      return new Fdb(file, null);
    }
    LocalFdbServer.Installation installation =
        local.orElseThrow(
            () ->
                new IllegalArgumentException(
                    "--backend fdb needs a cluster: --cluster-file F, FDB_CLUSTER_FILE, or a"
                        + " FoundationDB installation to start a throwaway one ("
                        + LocalFdbServer.HOME_ENV
                        + " or fdbserver on the PATH)"));
    LocalFdbServer server =
        LocalFdbServer.start(
            installation,
            Path.of(System.getProperty("java.io.tmpdir"), "dgen-benchmarks-fdb"),
            storageMemory());
    return new Fdb(server.clusterFile(), server);
  }

  /**
   * The throwaway cluster's memory engine limit: {@code -Ddgen.bench.fdbStorageMemory} if given,
   * else room for {@code -Ddgen.bench.idleHosted} idle servers where they would not fit in the
   * default 1 GiB (the engine counts about 1.2 KB per idle hosted server with its overheads: 2 KiB
   * each, plus 1 GiB), else the default.
   */
  private static @Nullable String storageMemory() {
    String given = System.getProperty("dgen.bench.fdbStorageMemory");
    if (given != null && !given.isBlank()) {
      return given;
    }
    long idle = Long.getLong(ScaleOutScenarios.IDLE_HOSTED_PROPERTY, 0);
    return idle > 200_000 ? (idle * 2 / 1024 + 1024) + "MiB" : null;
  }

  /** Opens the backend of one scenario; {@code maxWatches} leaves room for its idle servers. */
  abstract Bench open(int maxWatches);

  /** For the RocksDB target: whether commits are synced; null for the other targets. */
  @Nullable Boolean rocksdbSync() {
    return null;
  }

  /** A short name for labels: "memory", "FoundationDB" or "RocksDB". */
  abstract String name();

  /** What the report's header says about the backend. */
  abstract String description();

  /** The cluster file child JVMs open, for a FoundationDB target; null for the others. */
  @Nullable Path clusterFile() {
    return null;
  }

  boolean isMemory() {
    return name().equals("memory");
  }

  @Override
  public void close() {}

  private static final class Fdb extends Target {
    private final Path clusterFile;
    private final @Nullable LocalFdbServer server;

    Fdb(Path clusterFile, @Nullable LocalFdbServer server) {
      this.clusterFile = clusterFile;
      this.server = server;
    }

    @Override
    Bench open(int maxWatches) {
      CountingBackend counting =
          CountingBackend.wrap(
              FdbBackend.builder().clusterFile(clusterFile).maxWatches(maxWatches).open());
      String root = "dgen-bench-" + UUID.randomUUID();
      return new Bench(
          counting,
          root,
          () -> Cost.of(counting.counters()),
          () -> {
            try {
              counting.removeDirectory(root);
            } finally {
              counting.close();
            }
          });
    }

    @Override
    String name() {
      return "FoundationDB";
    }

    @Override
    Path clusterFile() {
      return clusterFile;
    }

    @Override
    String description() {
      return "FoundationDB, cluster file "
          + clusterFile
          + (server != null ? " (a throwaway one-process cluster, memory engine)" : "")
          + "; counts from CountingBackend";
    }

    @Override
    public void close() {
      if (server != null) {
        server.close();
      }
    }
  }
}
