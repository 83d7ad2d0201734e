package io.dgen.examples;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Keeps the Java code of the README and of getting-started compiled: every {@code ```java} block of
 * those pages is preceded by {@code <!-- snippet: ID -->} and must equal the region {@code //
 * snippet: ID} … {@code // end snippet} of a source in {@code io.dgen.examples.snippets}, which the
 * build compiles (and whose tests run the code). Lines of a region that end with {@code // hidden
 * from the docs} stay out of the page.
 *
 * <p>To change a snippet, change its source, then copy it into the pages with {@code mvn -B -q -pl
 * examples -am test -Dtest=DocSnippetsTest -Ddgen.snippets.update=true
 * -Dsurefire.failIfNoSpecifiedTests=false}.
 */
class DocSnippetsTest {

  private static final Path ROOT = DocsTest.ROOT;
  private static final List<String> PAGES = List.of("README.md", "docs/getting-started.md");
  private static final Path SOURCES =
      ROOT.resolve("examples/src/test/java/io/dgen/examples/snippets");
  private static final Pattern START = Pattern.compile("^\\s*// snippet: (\\S+)\\s*$");
  private static final Pattern END = Pattern.compile("^\\s*// end snippet\\s*$");
  private static final String HIDDEN = "// hidden from the docs";
  private static final Pattern MARKER = Pattern.compile("^<!-- snippet: (\\S+) -->$");

  @Test
  void everyJavaBlockOfTheReadmeAndGettingStarted_isCompiledSource() throws IOException {
    Map<String, String> regions = regions();
    boolean update = Boolean.getBoolean("dgen.snippets.update");
    List<String> problems = new ArrayList<>();
    TreeSet<String> used = new TreeSet<>();
    for (String page : PAGES) {
      Path file = ROOT.resolve(page);
      List<String> lines = new ArrayList<>(Files.readAllLines(file));
      boolean changed = false;
      for (int i = 0; i < lines.size(); i++) {
        if (!lines.get(i).equals("```java")) {
          continue;
        }
        int end = i + 1;
        while (end < lines.size() && !lines.get(end).equals("```")) {
          end++;
        }
        Matcher marker = i > 0 ? MARKER.matcher(lines.get(i - 1)) : MARKER.matcher("");
        if (!marker.matches()) {
          problems.add(page + ":" + (i + 1) + ": a java block without <!-- snippet: ID --> above");
          i = end;
          continue;
        }
        String id = marker.group(1);
        String source = regions.get(id);
        if (source == null) {
          problems.add(page + ":" + (i + 1) + ": no source region '// snippet: " + id + "'");
          i = end;
          continue;
        }
        used.add(id);
        String shown = String.join("\n", lines.subList(i + 1, end));
        if (!shown.equals(source)) {
          if (update) {
            lines.subList(i + 1, end).clear();
            lines.addAll(i + 1, List.of(source.split("\n", -1)));
            end = i + 1 + source.split("\n", -1).length;
            changed = true;
          } else {
            problems.add(
                page
                    + ":"
                    + (i + 1)
                    + ": snippet "
                    + id
                    + " differs from its source\n"
                    + diff(source, shown));
          }
        }
        i = end;
      }
      if (changed) {
        Files.writeString(file, String.join("\n", lines) + "\n");
      }
    }
    TreeSet<String> unused = new TreeSet<>(regions.keySet());
    unused.removeAll(used);
    for (String id : unused) {
      problems.add("source region " + id + " is shown on no page");
    }
    assertThat(problems)
        .as(
            "change the source, then copy it into the pages: mvn -B -q -pl examples -am test"
                + " -Dtest=DocSnippetsTest -Ddgen.snippets.update=true"
                + " -Dsurefire.failIfNoSpecifiedTests=false")
        .isEmpty();
  }

  /** The README's dependency snippets name the version the build makes. */
  @Test
  void theReadmesBuildSnippets_nameTheProjectsVersion() throws IOException {
    String pom = Files.readString(ROOT.resolve("pom.xml"));
    Matcher v =
        Pattern.compile("<artifactId>dgen-parent</artifactId>\\s*<version>([^<]+)</version>")
            .matcher(pom);
    assertThat(v.find()).isTrue();
    String version = v.group(1);
    String readme = Files.readString(ROOT.resolve("README.md"));
    assertThat(readme)
        .contains("<artifactId>dgen-bom</artifactId>\n      <version>" + version + "</version>")
        .contains("platform(\"io.dgen:dgen-bom:" + version + "\")");
  }

  /** Every region of the sources, dedented, without its hidden lines. */
  private static Map<String, String> regions() throws IOException {
    Map<String, String> regions = new LinkedHashMap<>();
    List<Path> files;
    try (Stream<Path> walk = Files.walk(SOURCES)) {
      files = walk.filter(p -> p.toString().endsWith(".java")).sorted().toList();
    }
    for (Path file : files) {
      String id = null;
      List<String> region = new ArrayList<>();
      for (String line : Files.readAllLines(file)) {
        Matcher start = START.matcher(line);
        if (id == null && start.matches()) {
          id = start.group(1);
          region.clear();
        } else if (id != null && END.matcher(line).matches()) {
          if (regions.put(id, dedent(region)) != null) {
            throw new IllegalStateException("two regions named " + id);
          }
          id = null;
        } else if (id != null && !line.stripTrailing().endsWith(HIDDEN)) {
          region.add(line.stripTrailing());
        }
      }
      if (id != null) {
        throw new IllegalStateException(file + ": region " + id + " has no '// end snippet'");
      }
    }
    return regions;
  }

  private static String dedent(List<String> region) {
    List<String> lines = new ArrayList<>(region);
    while (!lines.isEmpty() && lines.get(lines.size() - 1).isBlank()) {
      lines.remove(lines.size() - 1); // the formatter's blank line before "// end snippet"
    }
    int indent =
        lines.stream()
            .filter(l -> !l.isBlank())
            .mapToInt(l -> l.length() - l.stripLeading().length())
            .min()
            .orElse(0);
    return String.join(
        "\n", lines.stream().map(l -> l.isBlank() ? "" : l.substring(indent)).toList());
  }

  /** The first line where the page and the source part. */
  private static String diff(String source, String shown) {
    String[] a = source.split("\n", -1);
    String[] b = shown.split("\n", -1);
    for (int i = 0; i < Math.max(a.length, b.length); i++) {
      String x = i < a.length ? a[i] : "<end>";
      String y = i < b.length ? b[i] : "<end>";
      if (!x.equals(y)) {
        return "  line " + (i + 1) + " of the block\n  source: " + x + "\n  page:   " + y;
      }
    }
    return "";
  }
}
