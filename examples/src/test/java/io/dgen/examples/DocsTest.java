package io.dgen.examples;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/** Checks that keep the guide in step with the code and with itself. */
class DocsTest {

  static final Path ROOT = Path.of("").toAbsolutePath().getParent();

  /** The list of errors in getting-started names every exception of the public API. */
  @Test
  void gettingStarted_namesEveryPublicException() throws IOException {
    String guide = Files.readString(ROOT.resolve("docs/getting-started.md"));
    List<String> exceptions;
    try (Stream<Path> files = Files.list(ROOT.resolve("runtime/src/main/java/io/dgen"))) {
      exceptions =
          files
              .map(f -> f.getFileName().toString())
              .filter(n -> n.endsWith("Exception.java"))
              .map(n -> n.substring(0, n.length() - ".java".length()))
              .toList();
    }
    assertThat(exceptions).contains("DGenException", "OperationTimeoutException");
    for (String exception : exceptions) {
      assertThat(guide).as("getting-started.md names " + exception).contains("`" + exception + "`");
    }
  }

  /** The docs index links every page of docs/. */
  @Test
  void theDocsIndex_linksEveryPage() throws IOException {
    String index = Files.readString(ROOT.resolve("docs/README.md"));
    try (Stream<Path> pages = Files.list(ROOT.resolve("docs"))) {
      pages
          .map(p -> p.getFileName().toString())
          .filter(n -> n.endsWith(".md") && !n.equals("README.md"))
          .forEach(n -> assertThat(index).as("docs/README.md links " + n).contains("(" + n));
    }
  }
}
