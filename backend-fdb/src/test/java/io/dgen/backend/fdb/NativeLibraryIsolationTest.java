package io.dgen.backend.fdb;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import com.apple.foundationdb.Database;
import io.dgen.backend.Backend;
import java.io.IOException;
import java.io.InputStream;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * The native client is loaded only when a backend is opened: the runtime and the memory backend can
 * load and use every other class of this module on a machine without {@code libfdb_c}, and opening
 * without it fails with an error that says what to install.
 */
class NativeLibraryIsolationTest {

  /** A class loader of its own, so the test JVM's earlier class loading cannot hide anything. */
  private static final class IsolatedLoader extends URLClassLoader {
    IsolatedLoader(URL[] urls) {
      super(urls, ClassLoader.getPlatformClassLoader());
    }

    boolean isLoaded(String name) {
      return findLoadedClass(name) != null;
    }
  }

  @Test
  void usingTheBackendsClassesWithoutOpeningNeverLoadsFdb() throws Exception {
    try (IsolatedLoader loader = new IsolatedLoader(classPath())) {
      Class<?> probe = Class.forName(NativeFreeProbe.class.getName(), true, loader);
      ((Runnable) probe.getConstructor().newInstance()).run();

      assertThat(probe.getClassLoader()).isSameAs(loader);
      assertThat(loader.isLoaded(FdbBackend.class.getName())).isTrue();
      assertThat(loader.isLoaded(FdbBackend.Builder.class.getName())).isTrue();
      assertThat(loader.isLoaded(FdbTransaction.class.getName())).isTrue();
      assertThat(loader.isLoaded("com.apple.foundationdb.FDB")).isFalse();
      assertThat(loader.isLoaded(FdbNative.class.getName())).isFalse();
    }
  }

  @Test
  void openWithoutTheClientLibraryFailsWithInstallInstructions() throws Exception {
    List<String> outcomes = runInChildJvm(ClientLibraryProbe.class);

    assumeFalse(
        outcomes.contains("OPENED"),
        "libfdb_c is installed here, so the missing-library error cannot be observed");
    assertThat(outcomes)
        .hasSize(2)
        .allSatisfy(
            line ->
                assertThat(line)
                    .startsWith("FAILED java.lang.IllegalStateException")
                    .contains(System.mapLibraryName("fdb_c"))
                    .contains("Installing the FoundationDB client")
                    .contains("docs/operations.md"));
  }

  private static List<String> runInChildJvm(Class<?> main)
      throws IOException, InterruptedException {
    String classPath =
        Arrays.stream(classPath())
            .map(url -> urlToPath(url).toString())
            .collect(Collectors.joining(java.io.File.pathSeparator));
    Path java = Path.of(System.getProperty("java.home"), "bin", "java");
    ProcessBuilder builder =
        new ProcessBuilder(java.toString(), "-cp", classPath, main.getName())
            .redirectError(ProcessBuilder.Redirect.DISCARD);
    // A library found only through these (or FDB_LIBRARY_PATH_FDB_C, which the child does not
    // get) is not installed: the child must not see it.
    builder.environment().remove("LD_LIBRARY_PATH");
    builder.environment().remove("DYLD_LIBRARY_PATH");
    Process process = builder.start();
    String stdout;
    try (InputStream in = process.getInputStream()) {
      stdout = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    assertThat(process.waitFor(60, TimeUnit.SECONDS)).as("child JVM finished").isTrue();
    return stdout
        .lines()
        .filter(line -> line.startsWith("OPENED") || line.startsWith("FAILED"))
        .toList();
  }

  /** This module's classes and tests, the SPI, fdb-java and JSpecify: nothing else. */
  private static URL[] classPath() {
    return new URL[] {
      location(FdbBackend.class),
      location(NativeFreeProbe.class),
      location(Backend.class),
      location(Database.class),
      location(Nullable.class)
    };
  }

  private static URL location(Class<?> type) {
    return type.getProtectionDomain().getCodeSource().getLocation();
  }

  private static Path urlToPath(URL url) {
    try {
      return Path.of(url.toURI());
    } catch (java.net.URISyntaxException e) {
      throw new IllegalStateException(e);
    }
  }
}
