package io.dgen.fdbtest;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Comparator;
import java.util.List;
import java.util.UUID;
import java.util.stream.Stream;

/**
 * The run directories of throwaway servers and clusters: one fresh directory per start, marked with
 * its JVM's identity, and removed by a later start once that JVM is gone (closed or killed). Also
 * picks free loopback ports. Stateless; thread-safe.
 */
final class RunDirectories {

  private static final String RUN_PREFIX = "run-";
  private static final String OWNER_FILE = "owner";

  private RunDirectories() {}

  /**
   * Removes the run directories under {@code parent} whose JVM is gone, then makes a new one there
   * owned by this JVM.
   */
  static Path create(Path parent) {
    try {
      Files.createDirectories(parent);
      removeAbandoned(parent);
      String name =
          RUN_PREFIX
              + ProcessHandle.current().pid()
              + "-"
              + Long.toString(System.currentTimeMillis(), 36)
              + "-"
              + UUID.randomUUID().toString().substring(0, 8);
      Path run = Files.createDirectory(parent.resolve(name));
      Files.writeString(run.resolve(OWNER_FILE), owner(ProcessHandle.current()));
      return run;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Deletes {@code root} and everything under it; best effort (a later start retries). */
  static void deleteRecursively(Path root) {
    if (!Files.exists(root)) {
      return;
    }
    try (Stream<Path> walk = Files.walk(root)) {
      for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(p);
      }
    } catch (IOException e) {
      // best effort: a later start retries
    }
  }

  /** A loopback port free right now (another process may take it before it is bound). */
  static int freePort() {
    try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return socket.getLocalPort();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** A process's identity: its id and start time, so that a reused id is not mistaken for it. */
  private static String owner(ProcessHandle process) {
    return process.pid() + " " + process.info().startInstant().map(Instant::toString).orElse("?");
  }

  private static void removeAbandoned(Path parent) throws IOException {
    List<Path> runs;
    try (Stream<Path> list = Files.list(parent)) {
      runs = list.filter(p -> p.getFileName().toString().startsWith(RUN_PREFIX)).toList();
    }
    for (Path run : runs) {
      if (!ownerAlive(run)) {
        deleteRecursively(run);
      }
    }
  }

  private static boolean ownerAlive(Path run) {
    String recorded;
    try {
      recorded = Files.readString(run.resolve(OWNER_FILE)).trim();
    } catch (NoSuchFileException e) {
      return false;
    } catch (IOException e) {
      return true; // unreadable: leave it alone
    }
    int space = recorded.indexOf(' ');
    if (space < 0) {
      return false;
    }
    try {
      long pid = Long.parseLong(recorded.substring(0, space));
      return ProcessHandle.of(pid).map(p -> p.isAlive() && owner(p).equals(recorded)).orElse(false);
    } catch (NumberFormatException e) {
      return false;
    }
  }
}
