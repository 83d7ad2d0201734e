package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dgen.backend.memory.MemoryBackend;
import java.io.File;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The runtime loads and runs with neither Micrometer nor OpenTelemetry on the class path (both are
 * optional dependencies): a class loader that sees the test class path without their jars runs a
 * server end to end.
 */
class WithoutOptionalDependenciesTest {

  /**
   * Runs in the class loader without the optional jars: a cast, a castAll, a timer and a call on
   * the memory backend (every publish captures a trace context where it encodes).
   */
  public static long runAServer() {
    try (MemoryBackend backend = MemoryBackend.create();
        DGen dgen = DGen.builder(backend).build()) {
      ServerRef<TestServer.Msg> ref =
          dgen.start(
              new TestServer(new TestServer.Hooks()),
              null,
              StartOptions.builder(dgen.tenant("no-metrics")).build());
      ref.castAll(List.of(new TestServer.Add(2), new TestServer.Add(3)));
      ref.cast(new TestServer.Add(4));
      ref.castAfter(new TestServer.Add(6), java.time.Duration.ZERO);
      org.awaitility.Awaitility.await()
          .atMost(java.time.Duration.ofSeconds(30))
          .until(() -> ref.<Long>call(new TestServer.Get()) == 15L);
      return ref.<Long>call(new TestServer.Get());
    }
  }

  @Test
  void theRuntimeRunsWithoutMicrometerOrOpenTelemetryOnTheClassPath() throws Exception {
    String path =
        System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    List<URL> urls = new ArrayList<>();
    int hidden = 0;
    for (String entry : path.split(File.pathSeparator)) {
      if (entry.contains("micrometer") || entry.contains("opentelemetry")) {
        hidden++;
      } else if (!entry.isEmpty()) {
        urls.add(Path.of(entry).toUri().toURL());
      }
    }
    assertThat(hidden)
        .as("Micrometer's and OpenTelemetry's jars on the class path")
        .isGreaterThan(1);
    try (URLClassLoader loader =
        new URLClassLoader(urls.toArray(URL[]::new), ClassLoader.getPlatformClassLoader())) {
      assertThatThrownBy(
              () -> Class.forName("io.micrometer.core.instrument.MeterRegistry", false, loader))
          .isInstanceOf(ClassNotFoundException.class);
      assertThatThrownBy(() -> Class.forName("io.opentelemetry.api.OpenTelemetry", false, loader))
          .isInstanceOf(ClassNotFoundException.class);
      Class<?> test = Class.forName(WithoutOptionalDependenciesTest.class.getName(), true, loader);
      assertThat(test).isNotSameAs(WithoutOptionalDependenciesTest.class);
      var run = test.getMethod("runAServer");
      run.setAccessible(true); // the test class is package-private, in another loader
      assertThat(run.invoke(null)).isEqualTo(15L);
    }
  }
}
