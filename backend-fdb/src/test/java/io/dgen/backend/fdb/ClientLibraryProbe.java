package io.dgen.backend.fdb;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Opens an {@link FdbBackend} twice in a fresh JVM and prints each outcome on one line ({@code
 * OPENED}, or {@code FAILED <exception class> <message>}); run by {@link
 * NativeLibraryIsolationTest} in a child process so that loading (or failing to load) the native
 * client cannot affect the test JVM.
 */
public final class ClientLibraryProbe {

  private ClientLibraryProbe() {}

  /**
   * Runs the probe.
   *
   * @param args ignored
   * @throws IOException if the temporary cluster file cannot be written
   */
  public static void main(String[] args) throws IOException {
    Path clusterFile = Files.createTempFile("dgen-probe-", ".cluster");
    try {
      // Never contacted: connecting is lazy and the probe runs no transaction.
      Files.writeString(clusterFile, "probe:probe@127.0.0.1:4500\n");
      for (int i = 0; i < 2; i++) {
        try {
          FdbBackend.open(clusterFile).close();
          System.out.println("OPENED");
        } catch (RuntimeException | Error e) {
          System.out.println(
              "FAILED "
                  + e.getClass().getName()
                  + " "
                  + String.valueOf(e.getMessage()).replace('\n', ' '));
        }
      }
    } finally {
      Files.deleteIfExists(clusterFile);
    }
  }
}
