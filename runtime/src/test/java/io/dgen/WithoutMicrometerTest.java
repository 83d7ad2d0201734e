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
 * The runtime loads and runs with no Micrometer on the class path (it is an optional dependency): a
 * class loader that sees the test class path without Micrometer's jars runs a server end to end.
 */
class WithoutMicrometerTest {

  /** Runs in the class loader without Micrometer: a cast and a call on the memory backend. */
  public static long runAServer() {
    try (MemoryBackend backend = MemoryBackend.create();
        DGen dgen = DGen.builder(backend).build()) {
      ServerRef<TestServer.Msg> ref =
          dgen.start(
              new TestServer(new TestServer.Hooks()),
              null,
              StartOptions.builder(dgen.tenant("no-metrics")).build());
      ref.castAll(List.of(new TestServer.Add(2), new TestServer.Add(3)));
      return ref.<Long>call(new TestServer.Get());
    }
  }

  @Test
  void theRuntimeRunsWithoutMicrometerOnTheClassPath() throws Exception {
    String path =
        System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    List<URL> urls = new ArrayList<>();
    int hidden = 0;
    for (String entry : path.split(File.pathSeparator)) {
      if (entry.contains("micrometer")) {
        hidden++;
      } else if (!entry.isEmpty()) {
        urls.add(Path.of(entry).toUri().toURL());
      }
    }
    assertThat(hidden).as("Micrometer's jars on the test class path").isPositive();
    try (URLClassLoader loader =
        new URLClassLoader(urls.toArray(URL[]::new), ClassLoader.getPlatformClassLoader())) {
      assertThatThrownBy(
              () -> Class.forName("io.micrometer.core.instrument.MeterRegistry", false, loader))
          .isInstanceOf(ClassNotFoundException.class);
      Class<?> test = Class.forName(WithoutMicrometerTest.class.getName(), true, loader);
      assertThat(test).isNotSameAs(WithoutMicrometerTest.class);
      var run = test.getMethod("runAServer");
      run.setAccessible(true); // the test class is package-private, in another loader
      assertThat(run.invoke(null)).isEqualTo(5L);
    }
  }
}
