package io.dgen.examples;

import io.dgen.backend.Backend;
import io.dgen.backend.memory.MemoryBackend;
import io.dgen.backend.rocksdb.RocksDbBackend;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * Chooses the examples' backend from their arguments:
 *
 * <ul>
 *   <li>{@code --cluster-file PATH} (or {@code FDB_CLUSTER_FILE}): FoundationDB;
 *   <li>{@code --memory}: the memory backend, even when {@code FDB_CLUSTER_FILE} is set;
 *   <li>{@code --data-dir DIR}: the embedded RocksDB backend in {@code DIR};
 *   <li>none of these: the example's default, the RocksDB backend in {@code target/<name>} for the
 *       counter (its state outlives the run), the memory backend for the others.
 * </ul>
 *
 * <p>Every example prints the backend it runs on. The examples other than the counter reset or kill
 * their servers to start afresh: on a cluster file or a data directory the user named, they refuse
 * to run, writing nothing, unless given {@code --yes}.
 */
final class Backends {

  /** Where {@code exec:java} runs the examples from: the examples module's {@code target}. */
  private static final String TARGET_PROPERTY = "dgen.examples.target";

  private Backends() {}

  /**
   * The memory backend unless the arguments choose another, for an example that resets or kills its
   * servers in {@code tenant}: on a backend the user named, only with {@code --yes}.
   *
   * @throws IllegalArgumentException if the arguments name a cluster file or a data directory
   *     without {@code --yes}; nothing was opened or written
   */
  static Backend openOverwriting(String[] args, String tenant) {
    List<String> list = Arrays.asList(args);
    if (!list.contains("--memory") && !list.contains("--yes")) {
      String dataDir = value(list, "--data-dir", null);
      String clusterFile = value(list, "--cluster-file", System.getenv("FDB_CLUSTER_FILE"));
      String named =
          dataDir != null
              ? "--data-dir " + dataDir
              : clusterFile != null && !clusterFile.isBlank()
                  ? "the cluster file " + clusterFile
                  : null;
      if (named != null) {
        throw new IllegalArgumentException(
            "refused: this example resets or kills its servers in tenant "
                + tenant
                + ", and "
                + named
                + " is storage you named (nothing was written). Add --yes to run it there"
                + " anyway, or --memory to run it in memory.");
      }
    }
    return open(args, null);
  }

  /**
   * The backend the arguments choose, else RocksDB in {@code target/<defaultDataDir>} (or memory
   * when {@code defaultDataDir} is null).
   */
  static Backend open(String[] args, @Nullable String defaultDataDir) {
    List<String> list = Arrays.asList(args);
    String clusterFile = value(list, "--cluster-file", System.getenv("FDB_CLUSTER_FILE"));
    String dataDir = value(list, "--data-dir", null);
    if (list.contains("--memory")) {
      return memory();
    }
    if (dataDir == null && clusterFile != null && !clusterFile.isBlank()) {
      System.out.println("backend: FoundationDB, cluster file " + clusterFile);
      return FdbSupport.open(clusterFile);
    }
    if (dataDir == null && defaultDataDir == null) {
      return memory();
    }
    Path dir =
        dataDir != null
            ? Path.of(dataDir)
            : Path.of(System.getProperty(TARGET_PROPERTY, "target"), defaultDataDir);
    System.out.println("backend: embedded RocksDB, data in " + dir.toAbsolutePath().normalize());
    return RocksDbBackend.open(dir);
  }

  private static Backend memory() {
    System.out.println("backend: in-memory (FoundationDB semantics)");
    return MemoryBackend.create();
  }

  private static @Nullable String value(
      List<String> args, String flag, @Nullable String otherwise) {
    int i = args.indexOf(flag);
    return i >= 0 && i + 1 < args.size() ? args.get(i + 1) : otherwise;
  }
}
