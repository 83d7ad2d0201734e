package io.dgen;

import io.dgen.backend.Backend;
import io.dgen.backend.rocksdb.RocksDbBackend;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.io.TempDir;

/**
 * The runtime's behaviour suite ({@link RuntimeBehaviourSuite}) on the embedded RocksDB backend,
 * each test in a fresh data directory with every commit synced. Nothing may skip.
 */
class RocksDbRuntimeBehaviourTest extends RuntimeBehaviourSuite {

  @TempDir static Path root;

  private static final AtomicInteger OPENED = new AtomicInteger();

  @Override
  Backend backend() {
    return RocksDbBackend.open(root.resolve("data" + OPENED.incrementAndGet()));
  }
}
