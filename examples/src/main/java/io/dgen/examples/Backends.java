package io.dgen.examples;

import io.dgen.backend.Backend;
import io.dgen.backend.memory.MemoryBackend;
import java.util.Arrays;

/**
 * Chooses the examples' backend: memory by default, FoundationDB with a cluster file ({@code
 * --cluster-file PATH} or {@code FDB_CLUSTER_FILE}); {@code --memory} forces the memory backend
 * even when {@code FDB_CLUSTER_FILE} is set.
 */
final class Backends {

  private Backends() {}

  static Backend open(String[] args) {
    String clusterFile = System.getenv("FDB_CLUSTER_FILE");
    for (int i = 0; i + 1 < args.length; i++) {
      if (args[i].equals("--cluster-file")) {
        clusterFile = args[i + 1];
      }
    }
    if (Arrays.asList(args).contains("--memory") || clusterFile == null || clusterFile.isBlank()) {
      System.out.println("backend: in-memory (FoundationDB semantics)");
      return MemoryBackend.create();
    }
    System.out.println("backend: FoundationDB, cluster file " + clusterFile);
    return FdbSupport.open(clusterFile);
  }
}
