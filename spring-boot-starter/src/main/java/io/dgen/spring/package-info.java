/**
 * Spring Boot auto-configuration for DGen: the {@code dgen.*} properties ({@link
 * io.dgen.spring.DGenProperties}), the {@code Backend} and {@code DGen} beans ({@link
 * io.dgen.spring.DGenAutoConfiguration}), servers hosted by annotation ({@link
 * io.dgen.spring.DGenHosted}), graceful shutdown ({@link io.dgen.spring.DGenLifecycle}) and the
 * Actuator health indicator ({@link io.dgen.spring.DGenHealthIndicator}). See {@code
 * docs/spring.md}.
 */
@NullMarked
package io.dgen.spring;

import org.jspecify.annotations.NullMarked;
