package io.dgen.benchmarks;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/**
 * The process's CPU time in nanoseconds, every thread included (the runtime's, the publishers', the
 * JIT's, the garbage collector's and native ones such as FoundationDB's network thread).
 *
 * <p>The JDK's {@code OperatingSystemMXBean.getProcessCpuTime} reads {@code times(2)} on Linux, in
 * clock ticks of 10 ms: a row that takes a few milliseconds of CPU (a tiny drain of 400 messages)
 * reads 0 or 10 ms depending on where the ticks fall. Here, on Linux, each thread's time on CPU is
 * read from {@code /proc/self/task/<tid>/schedstat} (nanoseconds) and summed. A thread's time is
 * counted from the first reading that sees it; the time of a thread that ended between two
 * readings, since the earlier one, is lost: the clock may undercount, never go backwards. Without
 * {@code /proc} the JDK's tick-based clock is used.
 */
final class ProcessCpu {

  private static final Path TASKS = Path.of("/proc/self/task");

  /** Each live thread's time on CPU at the last reading, by thread id. */
  private static final Map<String, Long> seen = new HashMap<>();

  private static long total;

  private ProcessCpu() {}

  /**
   * The process's CPU time: only differences between two readings mean anything.
   *
   * @return nanoseconds, or -1 if the JVM does not report it
   */
  static synchronized long nanos() {
    if (!Files.isDirectory(TASKS)) {
      return jdkNanos();
    }
    Map<String, Long> now = new HashMap<>();
    try (DirectoryStream<Path> tasks = Files.newDirectoryStream(TASKS)) {
      for (Path task : tasks) {
        long onCpu = onCpuNanos(task.resolve("schedstat"));
        if (onCpu >= 0) {
          now.put(task.getFileName().toString(), onCpu);
        }
      }
    } catch (IOException e) {
      return jdkNanos();
    }
    for (Map.Entry<String, Long> e : now.entrySet()) {
      Long before = seen.get(e.getKey());
      // a thread id seen before with more time is a new thread under a reused id
      total += before == null || before > e.getValue() ? e.getValue() : e.getValue() - before;
    }
    seen.clear();
    seen.putAll(now);
    return total;
  }

  /** The first field of a thread's schedstat: its time on CPU in nanoseconds; -1 if it ended. */
  private static long onCpuNanos(Path schedstat) {
    try {
      String s = new String(Files.readAllBytes(schedstat), StandardCharsets.US_ASCII);
      int end = s.indexOf(' ');
      return Long.parseLong(end < 0 ? s.trim() : s.substring(0, end));
    } catch (IOException | NumberFormatException e) {
      return -1;
    }
  }

  private static long jdkNanos() {
    java.lang.management.OperatingSystemMXBean os = ManagementFactory.getOperatingSystemMXBean();
    return os instanceof com.sun.management.OperatingSystemMXBean sun
        ? sun.getProcessCpuTime()
        : -1;
  }
}
