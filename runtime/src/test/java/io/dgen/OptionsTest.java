package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import org.junit.jupiter.api.Test;

/**
 * {@link StartOptions} and {@link HostOptions}: the options both have chain with each one's own in
 * any order, and bad values are refused when set or built. Options that do not apply (a name for a
 * hosted kind, an expiry for a started process) are not refused here: neither builder has them.
 */
class OptionsTest extends RuntimeTestBase {

  /** The options every server has, set the same way on either builder. */
  private static <B extends ServerOptions.Builder<B, ?>> B common(B builder) {
    return builder
        .consumeK(8)
        .cache(false)
        .deadLetterThreshold(3)
        .lockTimeout(Duration.ofSeconds(30))
        .callTimeout(Duration.ofSeconds(9))
        .allowTypes(String.class)
        .idempotencyRetention(Duration.ofHours(2))
        .concurrencyLimit("gate");
  }

  private static void assertCommon(ServerOptions o, Tenant tenant) {
    assertThat(o.tenant()).isEqualTo(tenant);
    assertThat(o.consumeK()).isEqualTo(8);
    assertThat(o.cache()).isFalse();
    assertThat(o.deadLetterThreshold()).isEqualTo(OptionalInt.of(3));
    assertThat(o.lockTimeout()).contains(Duration.ofSeconds(30));
    assertThat(o.callTimeout()).isEqualTo(Duration.ofSeconds(9));
    assertThat(o.allowedTypes()).isEqualTo(List.of(String.class));
    assertThat(o.idempotencyRetention()).isEqualTo(Duration.ofHours(2));
    assertThat(o.concurrencyLimit()).contains("gate");
    assertThat(o.rateLimit()).isEmpty();
  }

  @Test
  void startOptions_takeTheCommonOptions_andTheirOwn_inAnyOrder() {
    StartOptions o = common(StartOptions.builder(tenant).name("n")).reset(true).build();
    assertCommon(o, tenant);
    assertThat(o.name()).contains("n");
    assertThat(o.reset()).isTrue();
    assertThat(o.consume()).isTrue();
  }

  @Test
  void hostOptions_takeTheCommonOptions_andTheirOwn_inAnyOrder() {
    HostOptions o =
        common(HostOptions.builder(tenant).idleTimeout(Duration.ofMinutes(10)))
            .holdBuckets(false)
            .expireAfter(Duration.ofHours(1))
            .build();
    assertCommon(o, tenant);
    assertThat(o.idleTimeout()).isEqualTo(Duration.ofMinutes(10));
    assertThat(o.holdsBuckets()).isFalse();
    assertThat(o.expireAfter()).contains(Duration.ofHours(1));
  }

  @Test
  void hostOptions_defaults() {
    HostOptions o = HostOptions.builder(tenant).build();
    assertThat(o.idleTimeout()).isEqualTo(Duration.ofSeconds(60));
    assertThat(o.holdsBuckets()).isTrue();
    assertThat(o.expireAfter()).isEqualTo(Optional.empty());
    assertThat(o.consumeK()).isEqualTo(1);
    assertThat(o.callTimeout()).isEqualTo(Duration.ofSeconds(5));
  }

  @Test
  void badHostOptions_failFast() {
    HostOptions.Builder b = HostOptions.builder(tenant);
    assertThatThrownBy(() -> b.idleTimeout(Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("idleTimeout must be positive");
    assertThatThrownBy(() -> b.idleTimeout(Duration.ofSeconds(-1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("idleTimeout must be positive");
    assertThatThrownBy(() -> b.consumeK(0)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> HostOptions.builder(null)).isInstanceOf(NullPointerException.class);
  }

  @Test
  void aConcurrencyLimitWithoutALockTimeout_isRefusedByEitherBuilder() {
    assertThatThrownBy(() -> StartOptions.builder(tenant).concurrencyLimit("gate").build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("needs a lockTimeout");
    assertThatThrownBy(() -> HostOptions.builder(tenant).concurrencyLimit("gate").build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("needs a lockTimeout");
  }
}
