package io.dgen.spring;

import io.dgen.backend.Backend;
import io.dgen.backend.rocksdb.RocksDbBackend;
import java.nio.file.Path;
import java.util.Objects;

/** Opens {@code dgen.backend=rocksdb}; loaded only when dgen-backend-rocksdb is present. */
final class RocksDbOpener {

  private RocksDbOpener() {}

  static Backend open(DGenProperties.RocksDb settings) {
    Path dir = Objects.requireNonNull(settings.getDataDir(), "dataDir");
    return RocksDbBackend.builder(dir)
        .sync(settings.isSync())
        .heapCacheSize(settings.getHeapCacheSize().toBytes())
        .cacheSize(settings.getCacheSize().toBytes())
        .blockSize(Math.toIntExact(settings.getBlockSize().toBytes()))
        .compression(RocksDbBackend.Compression.valueOf(settings.getCompression().name()))
        .open();
  }
}
