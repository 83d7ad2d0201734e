package io.dgen.internal;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;
import static org.assertj.core.api.Assertions.assertThat;

import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.library.dependencies.SliceAssignment;
import com.tngtech.archunit.library.dependencies.SliceIdentifier;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The guard of the runtime's inside ({@code docs/architecture.md}): the packages under {@code
 * io.dgen.internal} form layers, each using only the layers below it, with no cycle between
 * packages nor between the top-level classes of one package; only the API packages reach into them.
 * A new upward dependency fails the build here, naming the classes.
 */
class ArchitectureTest {

  /**
   * The layers, top to bottom: a package may use the packages below it, never one above. The root
   * ({@code io.dgen.internal} itself) holds the composition root alone.
   */
  static final List<String> LAYERS =
      List.of(
          "", // RuntimeCore: builds everything below and hands each its services
          "hosting",
          "atomic",
          "process",
          "consume",
          "lock",
          "behaviour",
          "idempotency",
          "tenant",
          "calls",
          "timers",
          "state",
          "queue",
          "commit",
          "doorbell",
          "limits",
          "keys",
          "base",
          "observe",
          "codec");

  private static JavaClasses runtime;

  @BeforeAll
  static void importRuntime() {
    runtime =
        new ClassFileImporter()
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
            .importPackages("io.dgen");
  }

  private static String pkg(String layer) {
    return layer.isEmpty() ? "io.dgen.internal" : "io.dgen.internal." + layer;
  }

  @Test
  void eachLayerUsesOnlyTheLayersBelowIt() {
    for (int i = 1; i < LAYERS.size(); i++) {
      String[] above =
          LAYERS.subList(0, i).stream().map(ArchitectureTest::pkg).toArray(String[]::new);
      noClasses()
          .that()
          .resideInAPackage(pkg(LAYERS.get(i)) + "..")
          .should()
          .dependOnClassesThat()
          .resideInAnyPackage(above)
          .because("io.dgen.internal." + LAYERS.get(i) + " lies below " + Arrays.toString(above))
          .check(runtime);
    }
  }

  @Test
  void everyInternalPackageIsALayer() {
    classes()
        .that()
        .resideInAPackage("io.dgen.internal..")
        .should()
        .resideInAnyPackage(
            LAYERS.stream().map(l -> l.isEmpty() ? pkg(l) : pkg(l) + "..").toArray(String[]::new))
        .because("a new package gets its place in ArchitectureTest.LAYERS and docs/architecture.md")
        .check(runtime);
  }

  @Test
  void noCyclesBetweenPackages() {
    slices().matching("io.dgen.internal.(**)").should().beFreeOfCycles().check(runtime);
  }

  /**
   * Inside a package too: its top-level classes (with their nested ones) use each other one way.
   */
  @Test
  void noCyclesBetweenTheClassesOfAPackage() {
    slices()
        .assignedFrom(
            new SliceAssignment() {
              @Override
              public SliceIdentifier getIdentifierOf(JavaClass c) {
                if (!c.getPackageName().startsWith("io.dgen.internal")
                    || c.getPackageName().startsWith("io.dgen.internal.codec")) {
                  return SliceIdentifier.ignore();
                }
                String top = c.getName();
                int nested = top.indexOf('$');
                return SliceIdentifier.of(nested < 0 ? top : top.substring(0, nested));
              }

              @Override
              public String getDescription() {
                return "the top-level classes of io.dgen.internal's packages";
              }
            })
        .should()
        .beFreeOfCycles()
        .check(runtime);
  }

  @Test
  void onlyTheApiPackagesReachIntoTheInternals() {
    noClasses()
        .that()
        .resideOutsideOfPackages("io.dgen", "io.dgen.admin", "io.dgen.internal..")
        .should()
        .dependOnClassesThat()
        .resideInAPackage("io.dgen.internal..")
        .check(runtime);
  }

  /**
   * The sources too: an import of a class above, which only a Javadoc link needs (the bytecode, and
   * so the rules above, never see it), still points up the layers for a reader.
   */
  @Test
  void noSourceImportsAClassAboveItsPackage() throws IOException {
    Path main = Path.of("src/main/java/io/dgen/internal");
    Pattern internalImport =
        Pattern.compile(
            "^import (?:static )?io\\.dgen\\.internal\\.(?:([a-z]\\w*)\\.)?[A-Z]",
            Pattern.MULTILINE);
    List<String> upward = new ArrayList<>();
    try (Stream<Path> files = Files.walk(main)) {
      for (Path file : files.filter(f -> f.toString().endsWith(".java")).toList()) {
        String layer = main.relativize(file.getParent()).toString().replace('/', '.');
        int rank = rankOf(layer);
        Matcher m = internalImport.matcher(Files.readString(file));
        while (m.find()) {
          String imported = m.group(1) == null ? "" : m.group(1);
          if (rankOf(imported) < rank) {
            upward.add(main.relativize(file) + " imports from " + pkg(imported));
          }
        }
      }
    }
    assertThat(upward).as("imports of classes above the importing package").isEmpty();
  }

  private static int rankOf(String layer) {
    String top = layer.contains(".") ? layer.substring(0, layer.indexOf('.')) : layer;
    int rank = LAYERS.indexOf(top);
    assertThat(rank).as("layer of package %s", layer).isNotNegative();
    return rank;
  }

  /** Each package says what it owns and what it may use, and is marked internal. */
  @Test
  void everyInternalPackageHasAPackageInfoMarkedInternal() throws IOException {
    Path main = Path.of("src/main/java/io/dgen/internal");
    List<String> missing = new ArrayList<>();
    try (Stream<Path> dirs = Files.walk(main)) {
      for (Path dir : dirs.filter(Files::isDirectory).toList()) {
        Path info = dir.resolve("package-info.java");
        if (!Files.exists(info) || !Files.readString(info).contains("@InternalApi")) {
          missing.add(main.relativize(dir).toString());
        }
      }
    }
    assertThat(missing).as("packages without a package-info marked @InternalApi").isEmpty();
  }
}
