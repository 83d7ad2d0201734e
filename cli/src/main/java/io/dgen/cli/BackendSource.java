package io.dgen.cli;

import io.dgen.backend.Backend;
import io.dgen.backend.fdb.FdbBackend;
import io.dgen.backend.rocksdb.DataDirectoryException;
import io.dgen.backend.rocksdb.RocksDbBackend;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.jspecify.annotations.Nullable;

/**
 * The one place where {@code dgen} opens a backend: {@code --cluster-file F} (or neither option:
 * FoundationDB's default cluster file) opens FoundationDB, {@code --data-dir D} the embedded
 * durable backend ({@link RocksDbBackend}) on an existing data directory, which the CLI never
 * creates; while an application holds that directory, the CLI is refused (one process per
 * directory).
 */
final class BackendSource implements Dgen.BackendFactory {

  /**
   * How long one transaction may wait for an unreachable cluster before the command fails: the
   * FoundationDB transaction timeout, and the admin's operation timeout on any backend.
   */
  static final Duration TIMEOUT = Duration.ofSeconds(10);

  @Override
  public Backend open(@Nullable Path clusterFile, @Nullable Path dataDir) {
    if (dataDir != null) {
      return openDataDir(dataDir);
    }
    FdbBackend.Builder b = FdbBackend.builder().transactionTimeout(TIMEOUT);
    if (clusterFile != null) {
      if (!Files.isRegularFile(clusterFile) || !Files.isReadable(clusterFile)) {
        throw new CliException(Dgen.BACKEND, "cannot read cluster file " + clusterFile);
      }
      b.clusterFile(clusterFile);
    }
    try {
      return b.open();
    } catch (RuntimeException | LinkageError e) {
      throw new CliException(Dgen.BACKEND, "cannot open FoundationDB: " + e.getMessage());
    }
  }

  private static Backend openDataDir(Path dataDir) {
    if (!Files.isRegularFile(dataDir.resolve(RocksDbBackend.FORMAT_FILE))) {
      throw new CliException(
          Dgen.BACKEND,
          "--data-dir "
              + dataDir
              + ": not a DGen data directory (no "
              + RocksDbBackend.FORMAT_FILE
              + ")");
    }
    try {
      return RocksDbBackend.open(dataDir);
    } catch (DataDirectoryException e) {
      throw new CliException(Dgen.BACKEND, "--data-dir " + dataDir + ": " + e.getMessage());
    } catch (RuntimeException | LinkageError e) {
      throw new CliException(
          Dgen.BACKEND, "cannot open the data directory " + dataDir + ": " + e.getMessage());
    }
  }
}
