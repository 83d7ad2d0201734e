package io.dgen.examples;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.Node;
import org.w3c.dom.NodeList;

/**
 * What a company adopting DGen relies on in the build files: the BOM lists every published module
 * at the project's version, and every published module ships its sources and Javadoc and names its
 * Java module. A module is published unless its pom sets {@code maven.deploy.skip}.
 */
class BuildFilesTest {

  private static final Path ROOT = DocsTest.ROOT;

  @Test
  void theBomListsEveryPublishedModule_atTheProjectsVersion() throws Exception {
    Document root = read(ROOT.resolve("pom.xml"));
    Document bom = read(ROOT.resolve("bom/pom.xml"));
    assertThat(child(bom.getDocumentElement(), "parent"))
        .as("the BOM has no parent: importing it must pin DGen's artifacts only")
        .isNull();
    assertThat(text(bom.getDocumentElement(), "version"))
        .isEqualTo(text(root.getDocumentElement(), "version"));

    Set<String> listed = new TreeSet<>();
    for (Element dependency : all(bom, "dependency")) {
      assertThat(text(dependency, "groupId")).isEqualTo("io.dgen");
      assertThat(text(dependency, "version")).isEqualTo("${project.version}");
      listed.add(text(dependency, "artifactId"));
    }
    assertThat(listed).containsExactlyInAnyOrderElementsOf(publishedArtifacts(root));
  }

  @Test
  void everyPublishedModule_shipsSourcesAndJavadoc_andNamesItsModule() throws Exception {
    for (String module : modules(read(ROOT.resolve("pom.xml")))) {
      String pom = Files.readString(ROOT.resolve(module).resolve("pom.xml"));
      if (module.equals("bom") || pom.contains("<maven.deploy.skip>true")) {
        continue;
      }
      assertThat(pom)
          .as(module)
          .contains("<artifactId>maven-source-plugin</artifactId>")
          .contains("<artifactId>maven-javadoc-plugin</artifactId>")
          .containsPattern("<Automatic-Module-Name>io\\.dgen\\.[a-z.]+</Automatic-Module-Name>");
    }
  }

  private static Set<String> publishedArtifacts(Document root) throws Exception {
    Set<String> published = new TreeSet<>();
    for (String module : modules(root)) {
      Path pom = ROOT.resolve(module).resolve("pom.xml");
      if (!module.equals("bom") && !Files.readString(pom).contains("<maven.deploy.skip>true")) {
        published.add(text(read(pom).getDocumentElement(), "artifactId"));
      }
    }
    return published;
  }

  private static List<String> modules(Document root) {
    List<String> modules = new ArrayList<>();
    for (Element m : all(root, "module")) {
      modules.add(m.getTextContent().trim());
    }
    return modules;
  }

  private static Document read(Path pom) throws Exception {
    return DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(pom.toFile());
  }

  private static List<Element> all(Document doc, String tag) {
    NodeList nodes = doc.getElementsByTagName(tag);
    List<Element> elements = new ArrayList<>();
    for (int i = 0; i < nodes.getLength(); i++) {
      elements.add((Element) nodes.item(i));
    }
    return elements;
  }

  private static Element child(Element parent, String tag) {
    for (Node n = parent.getFirstChild(); n != null; n = n.getNextSibling()) {
      if (n instanceof Element e && e.getTagName().equals(tag)) {
        return e;
      }
    }
    return null;
  }

  private static String text(Element parent, String tag) {
    Element e = child(parent, tag);
    return e == null ? null : e.getTextContent().trim();
  }
}
