package io.dgen.backend.fdb;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Executor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class FdbBackendBuilderTest {

  @Test
  void defaults_matchFoundationDbs() {
    FdbBackend.Settings settings = FdbBackend.builder().settings();

    assertThat(settings.clusterFile()).isNull();
    assertThat(settings.apiVersion()).isEqualTo(730);
    assertThat(settings.transactionTimeoutMillis()).isZero();
    assertThat(settings.retryLimit()).isEqualTo(-1);
    assertThat(settings.maxWatches()).isEqualTo(10_000);
    assertThat(settings.automaticIdempotency()).isFalse();
    assertThat(settings.executor()).isNull();
  }

  @Test
  void setters_areApplied() {
    Executor direct = Runnable::run;
    FdbBackend.Settings settings =
        FdbBackend.builder()
            .clusterFile(Path.of("/tmp/x.cluster"))
            .apiVersion(720)
            .transactionTimeout(Duration.ofSeconds(3))
            .retryLimit(0)
            .maxWatches(1_000_000)
            .automaticIdempotency(true)
            .executor(direct)
            .settings();

    assertThat(settings.clusterFile()).isEqualTo(Path.of("/tmp/x.cluster"));
    assertThat(settings.apiVersion()).isEqualTo(720);
    assertThat(settings.transactionTimeoutMillis()).isEqualTo(3_000);
    assertThat(settings.retryLimit()).isZero();
    assertThat(settings.maxWatches()).isEqualTo(1_000_000);
    assertThat(settings.automaticIdempotency()).isTrue();
    assertThat(settings.executor()).isSameAs(direct);
    assertThat(settings.describe()).contains("x.cluster").contains("apiVersion=720");
  }

  @ParameterizedTest
  @ValueSource(ints = {0, 510, 619, 731, 800})
  void apiVersion_outsideTheSupportedRangeIsRejected(int version) {
    assertThatThrownBy(() -> FdbBackend.builder().apiVersion(version))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("620")
        .hasMessageContaining("730");
  }

  @ParameterizedTest
  @ValueSource(ints = {620, 710, 730})
  void apiVersion_insideTheRangeIsAccepted(int version) {
    assertThat(FdbBackend.builder().apiVersion(version).settings().apiVersion()).isEqualTo(version);
  }

  @Test
  void transactionTimeout_rejectsNegativeAndSubMillisecondValues() {
    assertThatThrownBy(() -> FdbBackend.builder().transactionTimeout(Duration.ofMillis(-1)))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> FdbBackend.builder().transactionTimeout(Duration.ofNanos(10)))
        .isInstanceOf(IllegalArgumentException.class);
    assertThat(
            FdbBackend.builder()
                .transactionTimeout(Duration.ZERO)
                .settings()
                .transactionTimeoutMillis())
        .isZero();
  }

  @Test
  void retryLimit_belowMinusOneIsRejected() {
    assertThatThrownBy(() -> FdbBackend.builder().retryLimit(-2))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @ParameterizedTest
  @ValueSource(ints = {-1, 1_000_001})
  void maxWatches_outsideFoundationDbsRangeIsRejected(int max) {
    assertThatThrownBy(() -> FdbBackend.builder().maxWatches(max))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("1000000");
  }

  @Test
  void open_missingClusterFileFailsBeforeLoadingTheClient(@TempDir Path dir) {
    Path missing = dir.resolve("absent.cluster");

    assertThatThrownBy(() -> FdbBackend.open(missing))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("absent.cluster");
  }
}
