package io.dgen.spring;

import io.dgen.backend.Backend;
import io.dgen.backend.fdb.FdbBackend;
import java.nio.file.Files;
import java.nio.file.Path;

/** Opens {@code dgen.backend=fdb}; loaded only when dgen-backend-fdb is present. */
final class FdbOpener {

  private FdbOpener() {}

  static Backend open(DGenProperties.Fdb settings) {
    FdbBackend.Builder builder = FdbBackend.builder();
    Path clusterFile = settings.getClusterFile();
    if (clusterFile != null) {
      if (!Files.isRegularFile(clusterFile)) {
        throw Settings.invalid(
            "dgen.fdb.cluster-file",
            clusterFile,
            "no such file: " + clusterFile.toAbsolutePath().normalize());
      }
      builder.clusterFile(clusterFile);
    }
    Settings.apply("dgen.fdb.api-version", settings.getApiVersion(), builder::apiVersion);
    Settings.apply(
        "dgen.fdb.transaction-timeout",
        settings.getTransactionTimeout(),
        builder::transactionTimeout);
    Settings.apply("dgen.fdb.retry-limit", settings.getRetryLimit(), builder::retryLimit);
    Settings.apply("dgen.fdb.max-watches", settings.getMaxWatches(), builder::maxWatches);
    builder.automaticIdempotency(settings.isAutomaticIdempotency());
    return builder.open();
  }
}
