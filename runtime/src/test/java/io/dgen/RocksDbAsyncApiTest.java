package io.dgen;

import io.dgen.backend.Backend;
import io.dgen.backend.rocksdb.RocksDbBackend;
import java.nio.file.Path;
import org.junit.jupiter.api.io.TempDir;

/** {@link AsyncApiTest} on the embedded RocksDB backend. */
class RocksDbAsyncApiTest extends AsyncApiTest {

  @TempDir Path dir;

  @Override
  Backend newBackend() {
    return RocksDbBackend.open(dir.resolve("data"));
  }
}
