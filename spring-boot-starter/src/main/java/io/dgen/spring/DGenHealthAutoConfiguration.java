package io.dgen.spring;

import io.dgen.DGen;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.context.annotation.Bean;

/**
 * Auto-configures the {@link DGenHealthIndicator} when Spring Boot's health support (which Actuator
 * brings) is on the class path. Turn it off with {@code management.health.dgen.enabled= false};
 * replace it with a bean named {@code dgenHealthIndicator}.
 */
@AutoConfiguration(
    after = DGenAutoConfiguration.class,
    beforeName =
        "org.springframework.boot.health.autoconfigure.contributor.HealthContributorAutoConfiguration")
@ConditionalOnClass({DGen.class, HealthIndicator.class})
@ConditionalOnBean({DGen.class, DGenLifecycle.class})
@ConditionalOnEnabledHealthIndicator("dgen")
public class DGenHealthAutoConfiguration {

  /** Created by Spring. */
  public DGenHealthAutoConfiguration() {}

  /**
   * The indicator, reported as {@code dgen}.
   *
   * @param dgen the runtime
   * @param lifecycle its lifecycle
   * @param properties for {@code dgen.health.timeout} and {@code dgen.lease-duration}
   * @return the indicator
   */
  @Bean
  @ConditionalOnMissingBean(name = "dgenHealthIndicator")
  public DGenHealthIndicator dgenHealthIndicator(
      DGen dgen, DGenLifecycle lifecycle, DGenProperties properties) {
    return new DGenHealthIndicator(
        dgen, lifecycle, properties.getHealth().getTimeout(), properties.getLeaseDuration());
  }
}
