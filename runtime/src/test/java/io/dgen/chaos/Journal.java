package io.dgen.chaos;

import java.io.FileOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * An append-only record of a client's operations, one line per event, written with one system call
 * per line so that a JVM killed with {@code SIGKILL} loses at most the line it was writing (the
 * kernel keeps what was written). Thread-safe.
 *
 * <p>A line is {@code epochMillis kind id field...}, space-separated; ids and fields hold no
 * spaces. Kinds:
 *
 * <ul>
 *   <li>{@code S op id server [detail]}: an operation is about to be sent;
 *   <li>{@code R id outcome [detail]}: its outcome ({@link Outcome});
 *   <li>{@code C id true|false|error}: a cancel of timer {@code id} returned;
 *   <li>{@code E id event}: something happened to message {@code id} in a callback ({@code
 *       locked-start}, {@code locked-end}, {@code dead-letter}, {@code fenced});
 *   <li>{@code M - counts}: the client's meters so far ({@link ClientMetrics}).
 * </ul>
 */
final class Journal implements AutoCloseable {

  /** The outcome of an operation, as the client saw it. */
  enum Outcome {
    /** Acknowledged: the cast is queued, the call replied with its id, the timer is stored. */
    OK,
    /** A call that replied something other than its id. */
    WRONG,
    /** {@code CallTimeoutException}: the call may still execute. */
    TIMEOUT,
    /** Any other error: the outcome is unknown. */
    ERROR
  }

  /** One parsed line. */
  record Line(long at, String kind, String id, List<String> fields, String source) {
    String field(int i) {
      return i < fields.size() ? fields.get(i) : "";
    }
  }

  private final FileOutputStream out;

  Journal(Path file) {
    try {
      Files.createDirectories(file.toAbsolutePath().getParent());
      this.out = new FileOutputStream(file.toFile(), true);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  void sent(String op, String id, int server, String detail) {
    write("S", id, op, Integer.toString(server), detail);
  }

  void result(String id, Outcome outcome, String detail) {
    write("R", id, outcome.name(), detail);
  }

  void cancelled(String id, String result) {
    write("C", id, result);
  }

  void event(String id, String event) {
    write("E", id, event);
  }

  /** A snapshot of cumulative counts, {@code name=count,...} ({@link ClientMetrics}). */
  void metrics(String counts) {
    write("M", "-", counts);
  }

  private void write(String kind, String id, String... fields) {
    StringBuilder line = new StringBuilder();
    line.append(System.currentTimeMillis()).append(' ').append(kind).append(' ').append(id);
    for (String f : fields) {
      if (!f.isEmpty()) {
        line.append(' ').append(f.replace(' ', '_').replace('\n', '_'));
      }
    }
    line.append('\n');
    byte[] bytes = line.toString().getBytes(StandardCharsets.UTF_8);
    synchronized (this) {
      try {
        out.write(bytes);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
  }

  @Override
  public void close() {
    try {
      out.close();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * Every line of every file given, in file order. A line cut short by a kill is never a complete
   * line: the last line of a file is taken only if it ends with a newline.
   */
  static List<Line> read(List<Path> files) {
    List<Line> lines = new ArrayList<>();
    for (Path file : files) {
      try {
        parse(Files.readString(file, StandardCharsets.UTF_8), file, lines);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
    return lines;
  }

  /** Parses the complete lines of {@code text}; returns how many characters they took. */
  private static int parse(String text, Path file, List<Line> into) {
    String source = file.getFileName().toString();
    int start = 0;
    for (int end = text.indexOf('\n'); end >= 0; end = text.indexOf('\n', start)) {
      String[] parts = text.substring(start, end).split(" ");
      start = end + 1;
      if (parts.length >= 3) {
        into.add(
            new Line(
                Long.parseLong(parts[0]),
                parts[1],
                parts[2],
                List.copyOf(Arrays.asList(parts).subList(3, parts.length)),
                source));
      }
    }
    return start;
  }

  /** Reads the lines appended to a journal since the last call. Not thread-safe. */
  static final class Tail {
    private final Path file;
    private long offset;

    Tail(Path file) {
      this.file = file;
    }

    List<Line> readNew() throws IOException {
      if (!Files.exists(file)) {
        return List.of();
      }
      try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(file)) {
        long size = ch.size();
        if (size <= offset) {
          return List.of();
        }
        java.nio.ByteBuffer buf = java.nio.ByteBuffer.allocate((int) (size - offset));
        while (buf.hasRemaining() && ch.read(buf, offset + buf.position()) > 0) {
          // read to the end
        }
        String text = new String(buf.array(), 0, buf.position(), StandardCharsets.UTF_8);
        List<Line> lines = new ArrayList<>();
        int used = parse(text, file, lines);
        offset += text.substring(0, used).getBytes(StandardCharsets.UTF_8).length;
        return lines;
      }
    }
  }

  /** A short description of {@code e} for a journal field: its class and, for a backend, code. */
  static String describe(Throwable e) {
    Throwable t = e;
    while ((t instanceof java.util.concurrent.CompletionException
            || t instanceof java.util.concurrent.ExecutionException)
        && t.getCause() != null) {
      t = t.getCause();
    }
    if (t instanceof io.dgen.BackendFailureException f) {
      t = f.backendCause(); // classified by the backend's error, as before it was wrapped
    }
    String name = t.getClass().getSimpleName();
    if (t instanceof io.dgen.backend.BackendException b) {
      return name + ":" + b.code();
    }
    return name;
  }
}
