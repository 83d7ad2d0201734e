package io.dgen.spring;

import io.dgen.DGen;

/**
 * Adjusts the auto-configured {@link DGen}'s builder after the {@code dgen.*} properties are
 * applied: for what properties cannot say (a {@code DGenListener}, an executor, an {@code
 * ObjectMapper}, a clock). Declare one or more as beans; they run in their {@code @Order}.
 *
 * <pre>{@code
 * @Bean
 * DGenBuilderCustomizer fencedLocks(MyListener listener) {
 *   return builder -> builder.listener(listener);
 * }
 * }</pre>
 *
 * <p>Not used when the application declares its own {@link DGen} bean. The starter's Micrometer
 * customizer (order 0) sets the context's {@code MeterRegistry}; customizers with a later order may
 * replace it.
 */
@FunctionalInterface
public interface DGenBuilderCustomizer {

  /**
   * Adjusts {@code builder}; called once, on the thread that creates the {@link DGen} bean.
   *
   * @param builder the builder, with the properties applied
   */
  void customize(DGen.Builder builder);
}
