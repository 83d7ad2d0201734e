package io.dgen.spring;

import io.dgen.DGen;
import io.dgen.backend.Backend;
import io.micrometer.core.instrument.MeterRegistry;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.beans.factory.config.BeanFactoryPostProcessor;
import org.springframework.beans.factory.support.AbstractBeanDefinition;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.annotation.Order;
import org.springframework.core.env.Environment;
import org.springframework.core.io.ResourceLoader;

/**
 * Auto-configures DGen: a {@link Backend} from {@code dgen.backend}, a {@link DGen} over it from
 * the other {@code dgen.*} properties and the {@link DGenBuilderCustomizer} beans, and the {@link
 * DGenLifecycle} that hosts the {@link DGenHosted} beans at startup and closes the runtime
 * gracefully at shutdown. With Micrometer on the class path, the context's {@code MeterRegistry}
 * records the runtime's meters; with OpenTelemetry's API, the context's {@code OpenTelemetry}
 * traces its messages.
 *
 * <p>Each bean backs off when the application declares its own of the same type: a {@code Backend}
 * bean of yours is used by the auto-configured {@code DGen}; a {@code DGen} bean of yours is hosted
 * into and closed by the lifecycle. The auto-configured backend is closed by Spring after the
 * runtime (the {@code DGen} bean depends on it), the runtime by the lifecycle.
 */
@AutoConfiguration
@ConditionalOnClass(DGen.class)
@EnableConfigurationProperties(DGenProperties.class)
public class DGenAutoConfiguration {

  /** Created by Spring. */
  public DGenAutoConfiguration() {}

  /**
   * The backend {@code dgen.backend} names, closed when the context closes.
   *
   * @param properties the {@code dgen.*} properties
   * @param resources the context's class loader, which decides which backend modules are present
   * @return the open backend
   * @throws
   *     org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException
   *     for a configuration that cannot be what was meant (e.g. {@code dgen.backend=rocksdb}
   *     without {@code dgen.rocksdb.data-dir}, or a backend whose module is absent)
   */
  @Bean(destroyMethod = "close")
  @ConditionalOnMissingBean
  public Backend dgenBackend(DGenProperties properties, ResourceLoader resources) {
    ClassLoader loader = resources.getClassLoader();
    return BackendOpener.open(
        properties, loader != null ? loader : DGenAutoConfiguration.class.getClassLoader());
  }

  /**
   * The runtime over {@code backend}: the {@code dgen.*} properties, then the customizers in order.
   * Closed by the {@link DGenLifecycle}, not by a destroy method of its own.
   *
   * @param backend the backend
   * @param properties the {@code dgen.*} properties
   * @param customizers applied after the properties
   * @return the runtime
   * @throws
   *     org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException
   *     if the runtime refuses a property's value
   */
  @Bean(destroyMethod = "")
  @ConditionalOnMissingBean
  public DGen dgen(
      Backend backend,
      DGenProperties properties,
      ObjectProvider<DGenBuilderCustomizer> customizers) {
    DGen.Builder builder = DGen.builder(backend);
    Integer workerThreads = properties.getWorkerThreads();
    if (workerThreads != null) {
      Settings.apply("dgen.worker-threads", workerThreads, builder::workerThreads);
    }
    Settings.apply(
        "dgen.max-batches-in-flight",
        properties.getMaxBatchesInFlight(),
        builder::maxBatchesInFlight);
    Settings.apply(
        "dgen.operation-timeout", properties.getOperationTimeout(), builder::operationTimeout);
    Settings.apply("dgen.state-encoding", properties.getStateEncoding(), builder::stateEncoding);
    Settings.apply("dgen.lease-duration", properties.getLeaseDuration(), builder::leaseDuration);
    Settings.apply("dgen.buckets", properties.getBuckets(), builder::buckets);
    customizers.orderedStream().forEach(c -> c.customize(builder));
    return builder.build();
  }

  /**
   * Hosts the {@link DGenHosted} beans at startup and closes the runtime at shutdown.
   *
   * @param dgen the runtime, the application's or the auto-configured one
   * @param beans the bean factory, where the hosted beans are found and made
   * @param environment resolves placeholders in {@link DGenHosted}'s attributes
   * @param properties for {@code dgen.shutdown-timeout}
   * @return the lifecycle
   */
  @Bean
  @ConditionalOnMissingBean
  public DGenLifecycle dgenLifecycle(
      DGen dgen, ListableBeanFactory beans, Environment environment, DGenProperties properties) {
    return new DGenLifecycle(dgen, beans, environment, properties.getShutdownTimeout());
  }

  /**
   * Leaves the closing of the runtime to the {@link DGenLifecycle}: removes the destroy method
   * ({@code close}) that Spring infers for the {@code DGen} bean the lifecycle closes (the only
   * one, or the primary of several). Otherwise, when the shutdown timeout expires with batches in
   * flight, Spring's destroy phase would close that bean again and wait for those batches beyond
   * {@code dgen.shutdown-timeout}. The auto-configured bean has no destroy method to begin with.
   *
   * @return the post-processor; static, so that it does not create this configuration early
   */
  @Bean
  public static BeanFactoryPostProcessor dgenClosedByTheLifecycle() {
    return factory -> {
      String[] names = factory.getBeanNamesForType(DGen.class, true, false);
      for (String name : names) {
        if (!factory.containsBeanDefinition(name)) {
          continue; // a registered singleton: Spring does not destroy it
        }
        BeanDefinition definition = factory.getBeanDefinition(name);
        if ((names.length == 1 || definition.isPrimary())
            && definition instanceof AbstractBeanDefinition d) {
          d.setDestroyMethodName(""); // none, as @Bean(destroyMethod = "") says
        }
      }
    };
  }

  /** OpenTelemetry from the context, when its API is on the class path. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "io.opentelemetry.api.OpenTelemetry")
  static class OpenTelemetryConfiguration {

    /**
     * Sets the context's {@code OpenTelemetry} (the one bean, or the primary of several) on the
     * builder, so that messages are traced through the application's SDK; without one, the
     * runtime's default applies (the global OpenTelemetry, once set).
     */
    @Bean
    @Order(0)
    DGenBuilderCustomizer dgenOpenTelemetryCustomizer(
        ObjectProvider<io.opentelemetry.api.OpenTelemetry> openTelemetry) {
      return builder -> {
        io.opentelemetry.api.OpenTelemetry o = openTelemetry.getIfUnique();
        if (o != null) {
          builder.openTelemetry(o);
        }
      };
    }
  }

  /** Micrometer from the context, when Micrometer is on the class path. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(MeterRegistry.class)
  static class MicrometerConfiguration {

    /**
     * Sets the context's {@code MeterRegistry} (the one bean, or the primary of several) on the
     * builder; does nothing without one.
     */
    @Bean
    @Order(0)
    DGenBuilderCustomizer dgenMeterRegistryCustomizer(ObjectProvider<MeterRegistry> registry) {
      return builder -> {
        MeterRegistry r = registry.getIfUnique();
        if (r != null) {
          builder.meterRegistry(r);
        }
      };
    }
  }
}
