package io.dgen.examples;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
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

  /**
   * Every relative link of the README and the docs names a file that exists, and a heading in it.
   */
  @Test
  void everyLink_pointsToAnExistingFileAndHeading() throws IOException {
    List<String> broken = new ArrayList<>();
    for (Path page : markdownPages()) {
      Matcher link = LINK.matcher(withoutCode(Files.readString(page)));
      while (link.find()) {
        String target = link.group(1);
        if (target.matches("^[a-z]+:.*")) {
          continue; // https:, mailto:
        }
        int hash = target.indexOf('#');
        String file = hash < 0 ? target : target.substring(0, hash);
        Path resolved = file.isEmpty() ? page : page.getParent().resolve(file).normalize();
        if (!Files.exists(resolved)) {
          broken.add(ROOT.relativize(page) + ": " + target + " (no such file)");
        } else if (hash >= 0 && !anchors(resolved).contains(target.substring(hash + 1))) {
          broken.add(ROOT.relativize(page) + ": " + target + " (no such heading)");
        }
      }
    }
    assertThat(broken).isEmpty();
  }

  private static final Pattern LINK = Pattern.compile("\\]\\(([^)\\s]+)\\)");

  /** The text without fenced code blocks and inline code, where brackets are not links. */
  private static String withoutCode(String markdown) {
    return markdown.replaceAll("(?s)```.*?```", "").replaceAll("`[^`\n]*`", "");
  }

  /** The anchors GitHub gives the headings of a Markdown file. */
  private static Set<String> anchors(Path file) throws IOException {
    Set<String> anchors = new HashSet<>();
    if (!file.toString().endsWith(".md")) {
      return anchors;
    }
    String text = Files.readString(file).replaceAll("(?s)```.*?```", "");
    for (String line : text.split("\n")) {
      if (line.startsWith("#")) {
        String slug =
            line.replaceFirst("^#+\\s*", "")
                .toLowerCase(Locale.ROOT)
                .replaceAll("[^\\p{L}\\p{N} _-]", "")
                .replace(' ', '-');
        String unique = slug;
        for (int n = 1; !anchors.add(unique); n++) {
          unique = slug + "-" + n;
        }
      }
    }
    return anchors;
  }

  /** Users cannot look up an internal tracker: docs describe changes, they do not number them. */
  @Test
  void noPageNamesAnInternalTrackerNumber() throws IOException {
    List<Path> pages = markdownPages();
    pages.add(ROOT.resolve("CHANGELOG.md"));
    Pattern tracker = Pattern.compile("(?i)\\bissues? [0-9]+");
    for (Path page : pages) {
      Matcher m = tracker.matcher(Files.readString(page));
      assertThat(m.find() ? m.group() : null).as(ROOT.relativize(page).toString()).isNull();
    }
  }

  /** The README and every page under docs/. */
  private static List<Path> markdownPages() throws IOException {
    List<Path> pages = new ArrayList<>(List.of(ROOT.resolve("README.md")));
    try (Stream<Path> docs = Files.walk(ROOT.resolve("docs"))) {
      docs.filter(p -> p.toString().endsWith(".md")).sorted().forEach(pages::add);
    }
    return pages;
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
