package io.dgen.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.apple.foundationdb.subspace.Subspace;
import io.dgen.backend.Backend;
import io.dgen.backend.ForwardingBackend;
import io.dgen.backend.Transaction;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ObjectNode;

/** One run of {@code dgen} in this JVM: its exit code and what it printed. */
record CliRun(int code, String out, String err) {

  /**
   * Fields whose values differ from run to run (versionstamps, tokens, clocks); masked outside
   * messages and states.
   */
  private static final Set<String> VOLATILE =
      Set.of("id", "holder", "at", "acquiredAt", "ageMillis", "due");

  static CliRun run(Dgen.BackendFactory factory, String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int code = Dgen.run(args, new PrintWriter(out), new PrintWriter(err), factory);
    return new CliRun(code, out.toString(), err.toString());
  }

  /** A factory handing out {@code backend}, which the CLI's close leaves open. */
  static Dgen.BackendFactory over(Backend backend) {
    return (clusterFile, dataDir) -> unclosable(backend, new AtomicInteger());
  }

  /**
   * {@code backend} behind a close that leaves it open, counting into {@code directoryWrites} the
   * directories created or removed through it.
   */
  static Backend unclosable(Backend backend, AtomicInteger directoryWrites) {
    return new ForwardingBackend(backend) {
      @Override
      public Subspace directory(String... path) {
        directoryWrites.incrementAndGet();
        return backend.directory(path);
      }

      @Override
      public boolean removeDirectory(String... path) {
        directoryWrites.incrementAndGet();
        return backend.removeDirectory(path);
      }

      @Override
      public <T> T run(Function<? super Transaction, ? extends T> body) {
        return backend.run(body);
      }

      @Override
      public <T> CompletableFuture<T> runAsync(
          Function<? super Transaction, ? extends CompletableFuture<? extends T>> body) {
        return backend.runAsync(body);
      }

      @Override
      public void close() {}
    };
  }

  CliRun ok() {
    assertThat(code).as("exit code; stderr: %s", err).isZero();
    assertThat(err).isEmpty();
    return this;
  }

  /** Asserts a failure: this exit code and one line on stderr starting with "dgen: ". */
  CliRun fails(int expected, String messagePart) {
    assertThat(code).as("exit code; stdout: %s stderr: %s", out, err).isEqualTo(expected);
    assertThat(err).startsWith("dgen: ").contains(messagePart);
    assertThat(err.strip().lines()).hasSize(1);
    return this;
  }

  /** The output as JSON with the volatile fields masked, pretty-printed. */
  String normalized() {
    JsonNode tree = Output.JSON.readTree(out);
    mask(tree);
    return Output.JSON.writeValueAsString(tree).replace("\r\n", "\n").strip() + "\n";
  }

  private static void mask(JsonNode node) {
    if (node instanceof ObjectNode o) {
      List<String> names = new ArrayList<>();
      o.properties().forEach(e -> names.add(e.getKey()));
      for (String name : names) {
        if (VOLATILE.contains(name) && !o.get(name).isNull()) {
          o.put(name, "<" + name + ">");
        } else if (!name.equals("message") && !name.equals("state")) { // user data: as it is
          mask(o.get(name));
        }
      }
    } else if (node != null && node.isArray()) {
      for (JsonNode child : node) {
        mask(child);
      }
    }
  }

  /**
   * Compares the normalized output with {@code golden/<name>.json}; with {@code
   * -Ddgen.updateGoldens=true} writes it there instead.
   */
  CliRun matchesGolden(String name) throws IOException {
    String actual = normalized();
    if (Boolean.getBoolean("dgen.updateGoldens")) {
      Path file = Path.of("src/test/resources/golden", name + ".json");
      Files.writeString(file, actual);
      return this;
    }
    try (InputStream in = CliRun.class.getResourceAsStream("/golden/" + name + ".json")) {
      assertThat(in).as("golden file golden/%s.json", name).isNotNull();
      assertThat(actual).isEqualTo(new String(in.readAllBytes(), StandardCharsets.UTF_8));
    }
    return this;
  }
}
