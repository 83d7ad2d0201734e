package io.dgen.spring;

import io.dgen.backend.Backend;
import io.dgen.backend.memory.MemoryBackend;
import io.dgen.spring.DGenProperties.BackendType;
import java.nio.file.Path;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.util.ClassUtils;

/**
 * Opens the backend that {@code dgen.backend} names, refusing a configuration that cannot be what
 * the user meant before anything is opened. It never opens a backend whose module is absent: the
 * RocksDB and FoundationDB classes are touched only through {@link RocksDbOpener} and {@link
 * FdbOpener}, which are loaded only when chosen.
 */
final class BackendOpener {

  private static final Logger log = LoggerFactory.getLogger(BackendOpener.class);

  private BackendOpener() {}

  static Backend open(DGenProperties properties, ClassLoader classLoader) {
    BackendType type = properties.getBackend();
    if (type == null) {
      Path dataDir = properties.getRocksdb().getDataDir();
      if (dataDir != null) {
        throw Settings.invalid(
            "dgen.rocksdb.data-dir",
            dataDir,
            "it is set, but dgen.backend is not: set dgen.backend=rocksdb to keep the data there"
                + " (without dgen.backend, DGen runs in memory and keeps nothing)");
      }
      Path clusterFile = properties.getFdb().getClusterFile();
      if (clusterFile != null) {
        throw Settings.invalid(
            "dgen.fdb.cluster-file",
            clusterFile,
            "it is set, but dgen.backend is not: set dgen.backend=fdb to use that cluster"
                + " (without dgen.backend, DGen runs in memory and keeps nothing)");
      }
      log.warn(
          "dgen.backend is not set: DGen runs on the in-memory backend, and every server's state"
              + " and queue are lost when the application stops. Set dgen.backend=rocksdb with"
              + " dgen.rocksdb.data-dir for one durable node, or dgen.backend=fdb for a"
              + " FoundationDB cluster; dgen.backend=memory silences this warning.");
      return MemoryBackend.create();
    }
    return switch (type) {
      case MEMORY -> MemoryBackend.create();
      case ROCKSDB -> {
        requireModule(
            classLoader,
            "io.dgen.backend.rocksdb.RocksDbBackend",
            "rocksdb",
            "dgen-backend-rocksdb");
        DGenProperties.RocksDb rocksdb = properties.getRocksdb();
        if (rocksdb.getDataDir() == null) {
          throw Settings.invalid(
              "dgen.backend",
              "rocksdb",
              "the RocksDB backend needs dgen.rocksdb.data-dir, the directory that keeps the data"
                  + " (one process per directory)");
        }
        yield RocksDbOpener.open(rocksdb);
      }
      case FDB -> {
        requireModule(classLoader, "io.dgen.backend.fdb.FdbBackend", "fdb", "dgen-backend-fdb");
        yield FdbOpener.open(properties.getFdb());
      }
    };
  }

  private static void requireModule(
      ClassLoader classLoader, String className, String backend, String artifact) {
    if (!ClassUtils.isPresent(className, classLoader)) {
      throw Settings.invalid(
          "dgen.backend",
          backend,
          "it needs io.dgen:" + artifact + " on the class path; add that dependency");
    }
  }
}
