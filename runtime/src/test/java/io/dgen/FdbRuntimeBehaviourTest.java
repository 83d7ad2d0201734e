package io.dgen;

import io.dgen.backend.Backend;
import io.dgen.backend.fdb.FdbTestEnvironment;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The runtime's behaviour suite ({@link RuntimeBehaviourSuite}) on a real FoundationDB, each test
 * with an FdbBackend (see {@link FdbTestEnvironment}: {@code FDB_CLUSTER_FILE}, a throwaway local
 * server, or a container). Without a cluster every test is skipped with the reason; with one, none
 * may skip.
 */
@ExtendWith(FdbTestEnvironment.class)
class FdbRuntimeBehaviourTest extends RuntimeBehaviourSuite {

  @Override
  Backend backend() {
    return FdbTestEnvironment.openBackend();
  }
}
