package io.dgen.examples;

import io.dgen.backend.fdb.FdbTestEnvironment;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The examples on FoundationDB, as a user runs them with {@code --cluster-file}: the same checks as
 * {@link ExampleTest}, on the test cluster of {@link FdbTestEnvironment}.
 */
@ExtendWith(FdbTestEnvironment.class)
class FdbExampleTest extends ExampleTest {

  @Override
  String[] backendArgs() {
    return new String[] {"--cluster-file", FdbTestEnvironment.clusterFile().toString(), "--yes"};
  }

  @Override
  String backendBanner() {
    return "backend: FoundationDB, cluster file ";
  }

  @Override
  boolean reportsBytesWritten() {
    return false;
  }
}
