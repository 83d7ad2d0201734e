package io.dgen;

import io.dgen.backend.fdb.FdbTestEnvironment;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Starts a child JVM on this test's class path that works on the tests' FoundationDB cluster: it
 * runs {@code main} with the cluster file as its first argument, loads the client library the tests
 * use, and writes its output (standard error too) to a file.
 */
final class FdbChildJvm {

  private FdbChildJvm() {}

  /**
   * @param main the class whose {@code main} runs
   * @param out where its output goes (the directory is made)
   * @param jvmOptions options besides the heap's (256 MB)
   * @param args its arguments after the cluster file
   */
  static Process start(Class<?> main, Path out, List<String> jvmOptions, String... args)
      throws IOException {
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    command.add("-Xmx256m");
    command.addAll(jvmOptions);
    FdbTestEnvironment.clientLibrary()
        .ifPresent(lib -> command.add("-DFDB_LIBRARY_PATH_FDB_C=" + lib));
    command.add("-cp");
    command.add(System.getProperty("java.class.path"));
    command.add(main.getName());
    command.add(FdbTestEnvironment.clusterFile().toString());
    command.addAll(List.of(args));
    Files.createDirectories(out.getParent());
    return new ProcessBuilder(command)
        .redirectErrorStream(true)
        .redirectOutput(out.toFile())
        .start();
  }
}
