package io.dgen.backend.rocksdb;

import static org.assertj.core.api.Assertions.assertThat;

import io.dgen.backend.BackendException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A full disk: on a small tmpfs, commits fail with {@code io_error} naming the cause, nothing
 * acknowledged is lost, reads go on, and once space is freed the next commit succeeds without a
 * reopen. Mounting a tmpfs needs root (CI containers run as root); elsewhere the test is skipped
 * with that reason.
 */
class FullDiskTest {

  @TempDir Path root;

  private Path mount;
  private boolean mounted;

  @BeforeEach
  void mountSmallDisk() throws Exception {
    mount = root.resolve("disk");
    Files.createDirectories(mount);
    Process p =
        new ProcessBuilder("mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", mount.toString())
            .redirectErrorStream(true)
            .start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    mounted = p.waitFor(30, TimeUnit.SECONDS) && p.exitValue() == 0;
    Assumptions.assumeTrue(mounted, "needs to mount a 24 MB tmpfs (root): " + out.strip());
  }

  @AfterEach
  void unmount() throws Exception {
    if (mounted) {
      new ProcessBuilder("umount", mount.toString()).start().waitFor(30, TimeUnit.SECONDS);
    }
  }

  private static byte[] get(RocksDbBackend backend, int i) {
    return backend.run(tx -> tx.get(k(i)));
  }

  private static byte[] k(int i) {
    return ("k" + i).getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void fullDisk_failsCommitsClearly_losesNothingAcknowledged_andRecoversOnceSpaceIsFreed()
      throws IOException {
    Path dir = mount.resolve("data");
    byte[] value = new byte[10_000];
    new Random(1).nextBytes(value);
    int acked = 0;
    try (RocksDbBackend backend = RocksDbBackend.open(dir)) {
      Path filler = mount.resolve("filler");
      long free = Files.getFileStore(mount).getUsableSpace();
      Files.write(filler, new byte[(int) Math.max(0, free - (2 << 20))]);

      BackendException full = null;
      while (full == null && acked < 10_000) {
        int n = acked;
        try {
          backend.run(
              tx -> {
                tx.set(k(n), value);
                return null;
              });
          acked++;
        } catch (BackendException e) {
          full = e;
        }
      }
      assertThat(full).isNotNull();
      assertThat(full.code()).isEqualTo(BackendException.IO_ERROR);
      assertThat(full.getMessage()).contains("No space left on device");
      // Reads go on, and show every acknowledged commit and not the failed one.
      int failed = acked;
      assertThat(get(backend, failed)).isNull();
      assertThat(get(backend, failed - 1)).isEqualTo(value);
      Files.delete(filler);
      // The next commit reopens RocksDB (its log refuses writes after a failed one) and succeeds.
      for (int i = 0; i < 20; i++) {
        int n = acked;
        backend.run(
            tx -> {
              tx.set(k(n), value);
              return null;
            });
        acked++;
      }
      assertThat(get(backend, failed)).isEqualTo(value);
      assertThat(get(backend, 0)).isEqualTo(value);
    }
    try (RocksDbBackend backend = RocksDbBackend.open(dir)) {
      for (int i = 0; i < acked; i++) {
        int n = i;
        assertThat(get(backend, n)).as("key %s", n).isEqualTo(value);
      }
      int next = acked;
      assertThat(get(backend, next)).isNull();
    }
  }
}
