package io.dgen.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.dgen.backend.Backend;
import io.dgen.backend.fdb.FdbTestEnvironment;
import io.dgen.backend.rocksdb.RocksDbBackend;
import io.dgen.fdbtest.LocalFdbServer;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/** The shaded {@code dgen.jar} run as its own process, as an operator runs it. */
@ExtendWith(FdbTestEnvironment.class)
class DgenJarIT {

  private record Run(int code, String out, String err) {}

  private static Run java(String... args) throws IOException, InterruptedException {
    Path jar = Path.of(System.getProperty("dgen.jar", "target/dgen.jar"));
    assertThat(jar).as("the shaded jar (mvn package builds it)").isRegularFile();
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    FdbTestEnvironment.clientLibrary()
        .ifPresent(lib -> command.add("-D" + LocalFdbServer.CLIENT_LIBRARY_PROPERTY + "=" + lib));
    command.add("-jar");
    command.add(jar.toString());
    command.addAll(List.of(args));
    Path out = Files.createTempFile("dgen-out", ".txt");
    Path err = Files.createTempFile("dgen-err", ".txt");
    try {
      Process p =
          new ProcessBuilder(command)
              .redirectOutput(out.toFile())
              .redirectError(err.toFile())
              .start();
      assertThat(p.waitFor(120, TimeUnit.SECONDS)).as("dgen finished").isTrue();
      return new Run(
          p.exitValue(),
          Files.readString(out, StandardCharsets.UTF_8),
          Files.readString(err, StandardCharsets.UTF_8));
    } finally {
      Files.deleteIfExists(out);
      Files.deleteIfExists(err);
    }
  }

  @Test
  void help() throws Exception {
    Run r = java("--help");
    assertThat(r.code()).isZero();
    assertThat(r.out()).contains("Usage: dgen").contains("Exit codes:");
    assertThat(r.err()).isEmpty();
  }

  @Test
  void readsAnEmbeddedDataDirectory(@TempDir Path dir) throws Exception {
    try (Backend rocks = RocksDbBackend.open(dir);
        ShopFixture shop = new ShopFixture(rocks, "shop", "eu")) {
      // the fixture holds the directory: a second opener, even another process, is refused
      Run held = java("--data-dir", dir.toString(), "tenants");
      assertThat(held.code()).as(held.err()).isEqualTo(Dgen.BACKEND);
      assertThat(held.err()).contains("already open");
    }
    Run r = java("--data-dir", dir.toString(), "servers", "shop/eu", "--json");
    assertThat(r.code()).as(r.err()).isZero();
    assertThat(Output.JSON.readTree(r.out()).findValuesAsString("tuid"))
        .containsExactly(ShopFixture.CARTS, ShopFixture.ORDERS);
  }

  @Test
  void listsTenantsOfARealCluster_andFailsCleanlyOnABadClusterFile() throws Exception {
    String id = UUID.randomUUID().toString();
    try (Backend fdb = FdbTestEnvironment.openBackend()) {
      fdb.directory("dgen-cli-it", id);
      try {
        Run r =
            java(
                "--cluster-file", FdbTestEnvironment.clusterFile().toString(), "tenants", "--json");
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(Output.JSON.readTree(r.out()).findValuesAsString("tenant"))
            .contains("dgen-cli-it/" + id);
      } finally {
        fdb.removeDirectory("dgen-cli-it", id);
      }
    }
    Run bad = java("--cluster-file", "/nonexistent/fdb.cluster", "tenants");
    assertThat(bad.code()).isEqualTo(Dgen.BACKEND);
    assertThat(bad.out()).isEmpty();
    assertThat(bad.err().strip())
        .isEqualTo("dgen: cannot read cluster file /nonexistent/fdb.cluster");
  }

  @Test
  void servesTheDashboard_fromTheJar(@TempDir Path dir) throws Exception {
    try (Backend rocks = RocksDbBackend.open(dir);
        ShopFixture shop = new ShopFixture(rocks, "shop", "eu")) {
      // filled; closed before the dashboard opens the directory
    }
    Path jar = Path.of(System.getProperty("dgen.jar", "target/dgen.jar"));
    Process p =
        new ProcessBuilder(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-jar",
                jar.toString(),
                "--data-dir",
                dir.toString(),
                "ui",
                "--port",
                "0")
            .redirectErrorStream(true)
            .start();
    try (var lines =
        new java.io.BufferedReader(
            new java.io.InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
      String line = lines.readLine();
      assertThat(line)
          .startsWith("dgen ui: serving http://127.0.0.1:")
          .endsWith("(read-only; --allow-writes allows actions)");
      String base =
          line.substring(
              "dgen ui: serving ".length(), line.indexOf('/', "dgen ui: serving http://".length()));
      var http = java.net.http.HttpClient.newHttpClient();
      for (String path :
          new String[] {"/", "/tenant?t=shop/eu", "/static/live.js", "/static/dashboard.css"}) {
        var r =
            http.send(
                java.net.http.HttpRequest.newBuilder(java.net.URI.create(base + path)).build(),
                java.net.http.HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).as(path).isEqualTo(200);
      }
      var servers =
          http.send(
              java.net.http.HttpRequest.newBuilder(java.net.URI.create(base + "/tenant?t=shop/eu"))
                  .build(),
              java.net.http.HttpResponse.BodyHandlers.ofString());
      assertThat(servers.body()).contains("(&quot;orders&quot;, 1)");
    } finally {
      p.destroy();
      assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
    }
  }
}
