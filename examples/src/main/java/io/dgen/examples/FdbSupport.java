package io.dgen.examples;

import io.dgen.backend.Backend;
import io.dgen.backend.fdb.FdbBackend;
import java.nio.file.Path;

/** Kept apart so the FoundationDB classes load only when a cluster file is given. */
final class FdbSupport {

  private FdbSupport() {}

  static Backend open(String clusterFile) {
    return FdbBackend.open(Path.of(clusterFile));
  }
}
