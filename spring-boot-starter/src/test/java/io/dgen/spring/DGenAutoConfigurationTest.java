package io.dgen.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.dgen.DGen;
import io.dgen.backend.Backend;
import io.dgen.backend.memory.MemoryBackend;
import io.dgen.backend.rocksdb.RocksDbBackend;
import io.micrometer.core.instrument.MeterRegistry;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

/** The auto-configuration's beans, the properties they read and the conditions they obey. */
@ExtendWith(OutputCaptureExtension.class)
class DGenAutoConfigurationTest {

  static final ApplicationContextRunner RUNNER =
      new ApplicationContextRunner()
          .withConfiguration(
              AutoConfigurations.of(
                  DGenAutoConfiguration.class, DGenHealthAutoConfiguration.class));

  @Test
  void defaults_memoryBackend_runtime_lifecycle_health_andAWarning(CapturedOutput output) {
    RUNNER.run(
        ctx -> {
          assertThat(ctx).hasSingleBean(Backend.class).hasSingleBean(DGen.class);
          assertThat(ctx)
              .hasSingleBean(DGenLifecycle.class)
              .hasSingleBean(DGenHealthIndicator.class);
          assertThat(ctx.getBean(Backend.class)).isInstanceOf(MemoryBackend.class);
          assertThat(ctx.getBean(DGen.class).backend()).isSameAs(ctx.getBean(Backend.class));
          assertThat(ctx.getBean(DGenLifecycle.class).isRunning()).isTrue();
          assertThat(ctx.getBean(DGen.class).tenant("t").bucketCount()).isEqualTo(1024);
        });
    assertThat(output).contains("dgen.backend is not set: DGen runs on the in-memory backend");
  }

  @Test
  void explicitMemory_logsNoWarning(CapturedOutput output) {
    RUNNER
        .withPropertyValues("dgen.backend=memory")
        .run(ctx -> assertThat(ctx.getBean(Backend.class)).isInstanceOf(MemoryBackend.class));
    assertThat(output).doesNotContain("dgen.backend is not set");
  }

  @Test
  void properties_reachTheRuntime() {
    RUNNER
        .withPropertyValues("dgen.backend=memory", "dgen.buckets=64")
        .run(ctx -> assertThat(ctx.getBean(DGen.class).tenant("t").bucketCount()).isEqualTo(64));
  }

  @Test
  void rocksdb_opensTheDataDirectory_andClosesItWithTheContext(@TempDir Path dir) {
    Path data = dir.resolve("data");
    RUNNER
        .withPropertyValues("dgen.backend=rocksdb", "dgen.rocksdb.data-dir=" + data)
        .run(
            ctx -> {
              assertThat(ctx.getBean(Backend.class)).isInstanceOf(RocksDbBackend.class);
              assertThat(((RocksDbBackend) ctx.getBean(Backend.class)).dataDirectory())
                  .isEqualTo(data.toAbsolutePath().normalize());
            });
    // closed: the directory opens again in this JVM
    RocksDbBackend.open(data).close();
  }

  @Test
  void rocksdb_tuningProperties_reachTheBackend(@TempDir Path dir) {
    RUNNER
        .withPropertyValues(
            "dgen.backend=rocksdb",
            "dgen.rocksdb.data-dir=" + dir.resolve("data"),
            "dgen.rocksdb.heap-cache-size=8MB",
            "dgen.rocksdb.cache-size=256MB",
            "dgen.rocksdb.block-size=4KB",
            "dgen.rocksdb.compression=zstd")
        .run(
            ctx -> {
              RocksDbBackend rocks = (RocksDbBackend) ctx.getBean(Backend.class);
              assertThat(rocks.heapCacheSize()).isEqualTo(8L << 20);
              assertThat(rocks.cacheSize()).isEqualTo(256L << 20);
              assertThat(rocks.blockSize()).isEqualTo(4 << 10);
              assertThat(rocks.compression()).isEqualTo(RocksDbBackend.Compression.ZSTD);
            });
  }

  @Test
  void rocksdb_defaults_areTheBackends(@TempDir Path dir) {
    RUNNER
        .withPropertyValues("dgen.backend=rocksdb", "dgen.rocksdb.data-dir=" + dir.resolve("data"))
        .run(
            ctx -> {
              RocksDbBackend rocks = (RocksDbBackend) ctx.getBean(Backend.class);
              assertThat(rocks.heapCacheSize()).isEqualTo(RocksDbBackend.DEFAULT_HEAP_CACHE_SIZE);
              assertThat(rocks.cacheSize()).isEqualTo(RocksDbBackend.DEFAULT_CACHE_SIZE);
              assertThat(rocks.blockSize()).isEqualTo(RocksDbBackend.DEFAULT_BLOCK_SIZE);
              assertThat(rocks.compression()).isEqualTo(RocksDbBackend.Compression.LZ4);
            });
  }

  @Test
  void rocksdb_cacheSizeTooSmall_failsNamingTheLimit(@TempDir Path dir) {
    RUNNER
        .withPropertyValues(
            "dgen.backend=rocksdb",
            "dgen.rocksdb.data-dir=" + dir.resolve("data"),
            "dgen.rocksdb.cache-size=10KB")
        .run(
            ctx ->
                assertThat(ctx)
                    .getFailure()
                    .rootCause()
                    .hasMessageContaining("cacheSize must be at least 1 MiB"));
  }

  @Test
  void rocksdb_withoutDataDir_failsNamingTheProperty() {
    RUNNER
        .withPropertyValues("dgen.backend=rocksdb")
        .run(
            ctx ->
                assertThat(ctx)
                    .getFailure()
                    .rootCause()
                    .isInstanceOf(InvalidConfigurationPropertyValueException.class)
                    .hasMessageContaining("dgen.backend")
                    .hasMessageContaining("needs dgen.rocksdb.data-dir"));
  }

  @Test
  void dataDir_withoutBackend_failsRatherThanRunInMemory(@TempDir Path dir) {
    RUNNER
        .withPropertyValues("dgen.rocksdb.data-dir=" + dir)
        .run(
            ctx ->
                assertThat(ctx)
                    .getFailure()
                    .rootCause()
                    .hasMessageContaining("dgen.rocksdb.data-dir")
                    .hasMessageContaining("set dgen.backend=rocksdb"));
  }

  @Test
  void clusterFile_withoutBackend_fails(@TempDir Path dir) {
    RUNNER
        .withPropertyValues("dgen.fdb.cluster-file=" + dir.resolve("fdb.cluster"))
        .run(
            ctx ->
                assertThat(ctx)
                    .getFailure()
                    .rootCause()
                    .hasMessageContaining("set dgen.backend=fdb"));
  }

  @Test
  void rocksdb_withoutItsModule_failsNamingTheArtifact(@TempDir Path dir) {
    RUNNER
        .withClassLoader(new FilteredClassLoader("io.dgen.backend.rocksdb."))
        .withPropertyValues("dgen.backend=rocksdb", "dgen.rocksdb.data-dir=" + dir)
        .run(
            ctx ->
                assertThat(ctx)
                    .getFailure()
                    .rootCause()
                    .hasMessageContaining("io.dgen:dgen-backend-rocksdb"));
  }

  @Test
  void fdb_withAMissingClusterFile_failsBeforeLoadingTheClient(@TempDir Path dir) {
    RUNNER
        .withPropertyValues("dgen.backend=fdb", "dgen.fdb.cluster-file=" + dir.resolve("nope"))
        .run(
            ctx ->
                assertThat(ctx)
                    .getFailure()
                    .rootCause()
                    .hasMessageContaining("dgen.fdb.cluster-file")
                    .hasMessageContaining("no such file"));
  }

  @Test
  void aValueTheRuntimeRefuses_failsNamingTheProperty() {
    for (String bad :
        new String[] {
          "dgen.worker-threads=0",
          "dgen.max-batches-in-flight=0",
          "dgen.operation-timeout=0s",
          "dgen.lease-duration=10ms",
          "dgen.buckets=0",
          "dgen.shutdown-timeout=-1s",
          "dgen.health.timeout=0s"
        }) {
      String property = bad.substring(0, bad.indexOf('='));
      RUNNER
          .withPropertyValues("dgen.backend=memory", bad)
          .run(
              ctx ->
                  assertThat(ctx)
                      .as(bad)
                      .getFailure()
                      .rootCause()
                      .isInstanceOf(InvalidConfigurationPropertyValueException.class)
                      .hasMessageContaining(property));
    }
  }

  @Test
  void aBackendBeanOfTheApplication_replacesTheAutoConfiguredOne() {
    MemoryBackend mine = MemoryBackend.create();
    RUNNER
        .withBean("myBackend", Backend.class, () -> mine)
        .run(
            ctx -> {
              assertThat(ctx).hasSingleBean(Backend.class);
              assertThat(ctx.getBean(DGen.class).backend()).isSameAs(mine);
            });
  }

  @Test
  void aDGenBeanOfTheApplication_replacesTheAutoConfiguredOne_andGetsTheLifecycle() {
    MemoryBackend backend = MemoryBackend.create();
    DGen mine = DGen.builder(backend).buckets(16).build();
    RUNNER
        .withBean("myDGen", DGen.class, () -> mine)
        .run(
            ctx -> {
              assertThat(ctx).hasSingleBean(DGen.class);
              assertThat(ctx.getBean(DGen.class)).isSameAs(mine);
              assertThat(ctx.getBean(DGenLifecycle.class).isRunning()).isTrue();
            });
    backend.close();
  }

  @Test
  void customizers_runAfterTheProperties() {
    RUNNER
        .withPropertyValues("dgen.backend=memory", "dgen.buckets=64")
        .withBean(DGenBuilderCustomizer.class, () -> builder -> builder.buckets(32))
        .run(ctx -> assertThat(ctx.getBean(DGen.class).tenant("t").bucketCount()).isEqualTo(32));
  }

  @Test
  void withoutMicrometer_theRuntimeStillStarts() {
    RUNNER
        .withClassLoader(new FilteredClassLoader(MeterRegistry.class))
        .withPropertyValues("dgen.backend=memory")
        .run(ctx -> assertThat(ctx).hasNotFailed().hasSingleBean(DGen.class));
  }

  @Test
  void withoutHealthSupport_noIndicator() {
    RUNNER
        .withClassLoader(new FilteredClassLoader(HealthIndicator.class))
        .withPropertyValues("dgen.backend=memory")
        .run(
            ctx ->
                assertThat(ctx)
                    .hasNotFailed()
                    .hasSingleBean(DGen.class)
                    .doesNotHaveBean(DGenHealthIndicator.class));
  }

  @Test
  void healthIndicator_canBeTurnedOff() {
    RUNNER
        .withPropertyValues("dgen.backend=memory", "management.health.dgen.enabled=false")
        .run(
            (AssertableApplicationContext ctx) ->
                assertThat(ctx).doesNotHaveBean(DGenHealthIndicator.class));
  }

  @Test
  void closingTheContext_closesTheRuntime_thenTheBackend() {
    MemoryBackend[] backend = new MemoryBackend[1];
    DGenLifecycle[] lifecycle = new DGenLifecycle[1];
    RUNNER
        .withPropertyValues("dgen.backend=memory")
        .run(
            ctx -> {
              backend[0] = (MemoryBackend) ctx.getBean(Backend.class);
              lifecycle[0] = ctx.getBean(DGenLifecycle.class);
            });
    assertThat(lifecycle[0].isRunning()).isFalse();
    assertThat(backend[0].toString()).contains("closed=true");
  }
}
