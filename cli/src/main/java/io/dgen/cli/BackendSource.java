package io.dgen.cli;

import io.dgen.backend.Backend;
import io.dgen.backend.fdb.FdbBackend;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.jspecify.annotations.Nullable;

/**
 * The one place where {@code dgen} opens a backend: {@code --cluster-file F} (or neither option:
 * FoundationDB's default cluster file) opens FoundationDB, {@code --data-dir D} the embedded
 * durable backend (not available in this build: refused with exit code 4).
 */
final class BackendSource implements Dgen.BackendFactory {

  /** How long one transaction may wait for an unreachable cluster before the command fails. */
  static final Duration TIMEOUT = Duration.ofSeconds(10);

  @Override
  public Backend open(@Nullable Path clusterFile, @Nullable Path dataDir) {
    if (dataDir != null) {
      throw new CliException(
          Dgen.BACKEND,
          "--data-dir "
              + dataDir
              + ": the embedded durable backend is not part of this build;"
              + " use --cluster-file");
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
}
