package io.dgen.backend.rocksdb;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.apple.foundationdb.subspace.Subspace;
import com.apple.foundationdb.tuple.Tuple;
import io.dgen.backend.BackendException;
import io.dgen.backend.ByteKeys;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The data directory of {@link RocksDbBackend}: reopen, refusals, one opener, group commit. */
class RocksDbBackendTest {

  @TempDir Path root;

  private static byte[] key(Subspace s, String name) {
    return s.pack(Tuple.from(name));
  }

  private static long counter(byte[] raw) {
    return raw == null ? 0 : ByteBuffer.wrap(raw).order(ByteOrder.LITTLE_ENDIAN).getLong();
  }

  @Test
  void reopenAfterCloseKeepsDataDirectoriesAndIncreasingVersionstamps() {
    Path dir = root.resolve("data");
    byte[] stampBefore;
    byte[] k;
    byte[] gone;
    try (RocksDbBackend b = RocksDbBackend.open(dir)) {
      Subspace app = b.directory("app", "one");
      k = key(app, "hits");
      gone = key(app, "gone");
      for (int i = 0; i < 5; i++) {
        b.run(
            tx -> {
              tx.add(k, 1);
              tx.set(gone, new byte[] {1});
              return null;
            });
      }
      b.run(
          tx -> {
            tx.clear(gone);
            return null;
          });
      stampBefore = stamp(b);
    }
    try (RocksDbBackend b = RocksDbBackend.open(dir)) {
      assertThat(b.openDirectory("app", "one").map(Subspace::getKey)).contains(prefixOf(k));
      assertThat(counter(b.run(tx -> tx.get(k)))).isEqualTo(5);
      byte[] cleared = b.run(tx -> tx.get(gone));
      assertThat(cleared).isNull();
      byte[] stampAfter = stamp(b);
      assertThat(ByteKeys.COMPARATOR.compare(stampAfter, stampBefore)).isPositive();
      // A new directory does not reuse a prefix allocated before the reopen.
      assertThat(b.directory("app", "two").getKey()).isNotEqualTo(prefixOf(k));
    }
  }

  /**
   * A sync that fails leaves the commit it failed in RocksDB's log, not known to be durable: the
   * commit may be there after a reopen, so the backend must not answer a read that would say it is
   * not (the runtime looks for its commit marker after an io_error): reads fail until a reopen,
   * which shows what survived.
   */
  @Test
  void aFailedSync_leavesTheCommitsOutcomeUnknown_readsAreRefused_andAReopenTells() {
    Path dir = root.resolve("data");
    byte[] k;
    try (RocksDbBackend b = RocksDbBackend.open(dir)) {
      k = key(b.directory("app"), "k");
      b.storage().failNextSync = true;
      assertThatThrownBy(
              () ->
                  b.run(
                      tx -> {
                        tx.set(k, new byte[] {7});
                        return null;
                      }))
          .isInstanceOfSatisfying(
              io.dgen.backend.BackendException.class,
              e -> assertThat(e.code()).isEqualTo(io.dgen.backend.BackendException.IO_ERROR));
      assertThatThrownBy(() -> b.run(tx -> tx.get(k)))
          .isInstanceOfSatisfying(
              io.dgen.backend.BackendException.class,
              e -> assertThat(e.getMessage()).contains("may or may not have applied"));
    }
    try (RocksDbBackend b = RocksDbBackend.open(dir)) {
      // the write reached the log before its sync failed: here, it survived
      byte[] value = b.run(tx -> tx.get(k));
      assertThat(value).containsExactly(7);
    }
  }

  private static byte[] prefixOf(byte[] k) {
    byte[] p = new byte[k.length - Tuple.from("hits").pack().length];
    System.arraycopy(k, 0, p, 0, p.length);
    return p;
  }

  private static byte[] stamp(RocksDbBackend b) {
    CompletableFuture<byte[]> f =
        b.run(
            tx -> {
              tx.set(b.directory("stamps").pack(Tuple.from("x")), new byte[] {1});
              return tx.getVersionstamp();
            });
    return f.join();
  }

  @Test
  void foreignDirectoryIsRefusedAndLeftUntouched() throws IOException {
    Path dir = Files.createDirectories(root.resolve("foreign"));
    Files.writeString(dir.resolve("notes.txt"), "mine");
    assertThatThrownBy(() -> RocksDbBackend.open(dir))
        .isInstanceOf(DataDirectoryException.class)
        .hasMessageContaining("not a DGen RocksDB data directory")
        .hasMessageContaining("Nothing was changed");
    assertThat(listing(dir)).containsExactly("notes.txt");
    assertThat(Files.readString(dir.resolve("notes.txt"))).isEqualTo("mine");
  }

  @Test
  void otherFormatIsRefusedAndLeftUntouched() throws IOException {
    Path dir = root.resolve("data");
    RocksDbBackend.open(dir).close();
    Files.writeString(dir.resolve(RocksDbBackend.FORMAT_FILE), "dgen-rocksdb 99\n");
    List<String> before = listing(dir);
    assertThatThrownBy(() -> RocksDbBackend.open(dir))
        .isInstanceOf(DataDirectoryException.class)
        .hasMessageContaining("dgen-rocksdb 99");
    assertThat(listing(dir)).isEqualTo(before);
    assertThat(Files.readString(dir.resolve(RocksDbBackend.FORMAT_FILE)))
        .isEqualTo("dgen-rocksdb 99\n");
  }

  @Test
  void corruptedDatabaseIsRefusedAndLeftUntouched() throws IOException {
    Path dir = root.resolve("data");
    try (RocksDbBackend b = RocksDbBackend.open(dir)) {
      byte[] k = key(b.directory("app"), "k");
      b.run(
          tx -> {
            tx.set(k, new byte[] {7});
            return null;
          });
    }
    Path current = dir.resolve("db").resolve("CURRENT");
    Files.writeString(current, "MANIFEST-999999\n");
    assertThatThrownBy(() -> RocksDbBackend.open(dir))
        .isInstanceOf(DataDirectoryException.class)
        .hasMessageContaining("missing or corrupted");
    assertThat(Files.readString(current)).isEqualTo("MANIFEST-999999\n");
  }

  @Test
  void missingDatabaseUnderAMarkerIsRefused() throws IOException {
    Path dir = root.resolve("data");
    RocksDbBackend.open(dir).close();
    try (Stream<Path> files = Files.walk(dir.resolve("db"))) {
      files.sorted((a, b) -> b.compareTo(a)).forEach(p -> p.toFile().delete());
    }
    assertThatThrownBy(() -> RocksDbBackend.open(dir))
        .isInstanceOf(DataDirectoryException.class)
        .hasMessageContaining("missing or corrupted");
    assertThat(Files.exists(dir.resolve("db"))).isFalse();
  }

  @Test
  void secondOpenerInThisJvmIsRefusedUntilTheFirstCloses() {
    Path dir = root.resolve("data");
    try (RocksDbBackend first = RocksDbBackend.open(dir)) {
      assertThatThrownBy(() -> RocksDbBackend.open(dir))
          .isInstanceOf(DataDirectoryException.class)
          .hasMessageContaining("already open")
          .hasMessageContaining("FoundationDB");
      first.directory("still", "works");
    }
    try (RocksDbBackend again = RocksDbBackend.open(dir)) {
      assertThat(again.openDirectory("still", "works")).isPresent();
    }
  }

  @Test
  void secondOpenerInAnotherJvmIsRefused() throws Exception {
    Path dir = root.resolve("data");
    try (RocksDbBackend first = RocksDbBackend.open(dir)) {
      Process p =
          new ProcessBuilder(
                  Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                  "-cp",
                  System.getProperty("java.class.path"),
                  OpenOnce.class.getName(),
                  dir.toString())
              .redirectErrorStream(true)
              .start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      assertThat(p.waitFor()).as(out).isEqualTo(3);
      assertThat(out).contains("already open").contains("FoundationDB");
    }
  }

  /** A child JVM's main: opens the directory once; exit 3 on a DataDirectoryException. */
  static final class OpenOnce {
    public static void main(String[] args) {
      try (RocksDbBackend b = RocksDbBackend.open(Path.of(args[0]))) {
        System.exit(0);
      } catch (DataDirectoryException e) {
        System.out.println(e.getMessage());
        System.exit(3);
      }
    }
  }

  @Test
  void concurrentCommitsShareSyncs() throws Exception {
    int threads = 8;
    int perThread = 50;
    try (RocksDbBackend b = RocksDbBackend.open(root.resolve("data"))) {
      Subspace app = b.directory("app");
      long syncsBefore = b.storage().syncs();
      ExecutorService pool = Executors.newFixedThreadPool(threads);
      CountDownLatch start = new CountDownLatch(1);
      List<Future<?>> done = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        byte[] k = key(app, "t" + t);
        done.add(
            pool.submit(
                () -> {
                  start.await();
                  for (int i = 0; i < perThread; i++) {
                    b.run(
                        tx -> {
                          tx.add(k, 1);
                          return null;
                        });
                  }
                  return null;
                }));
      }
      start.countDown();
      for (Future<?> f : done) {
        f.get();
      }
      pool.shutdown();
      long syncs = b.storage().syncs() - syncsBefore;
      assertThat(syncs).isPositive().isLessThan((long) threads * perThread);
      for (int t = 0; t < threads; t++) {
        byte[] k = key(app, "t" + t);
        assertThat(counter(b.run(tx -> tx.get(k)))).isEqualTo(perThread);
      }
    }
  }

  @Test
  void anAsyncCommit_leavesItsLogSyncToTheSyncThread_andIsVisibleOnceDurable() throws Exception {
    try (RocksDbBackend b = RocksDbBackend.open(root.resolve("data"))) {
      byte[] k = key(b.directory("app"), "k");
      CountDownLatch slowDisk = new CountDownLatch(1);
      b.storage().syncGate = slowDisk;

      CompletableFuture<Void> commit =
          b.runAsync(
              tx -> {
                tx.set(k, new byte[] {1});
                return CompletableFuture.completedFuture(null);
              });

      assertThat(commit).as("the caller's thread returned while the sync waits").isNotDone();
      assertThat(b.<byte[]>run(tx -> tx.get(k))).as("not visible before it is durable").isNull();
      slowDisk.countDown();
      commit.get(10, TimeUnit.SECONDS);
      assertThat(b.<byte[]>run(tx -> tx.get(k))).containsExactly(1);
    }
  }

  @Test
  void asyncCommitsFromOneThread_shareSyncs_andAFailedSyncFailsThem() throws Exception {
    try (RocksDbBackend b = RocksDbBackend.open(root.resolve("data"))) {
      Subspace app = b.directory("app");
      long syncsBefore = b.storage().syncs();
      List<CompletableFuture<Void>> commits = new ArrayList<>();
      for (int i = 0; i < 500; i++) {
        byte[] k = key(app, "k" + i);
        commits.add(
            b.runAsync(
                tx -> {
                  tx.add(k, 1);
                  return CompletableFuture.completedFuture(null);
                }));
      }
      CompletableFuture.allOf(commits.toArray(CompletableFuture[]::new)).get(1, TimeUnit.MINUTES);
      assertThat(b.storage().syncs() - syncsBefore).isPositive().isLessThan(500);
      for (int i = 0; i < 500; i++) {
        byte[] k = key(app, "k" + i);
        assertThat(counter(b.run(tx -> tx.get(k)))).isEqualTo(1);
      }

      b.storage().failNextSync = true;
      byte[] lost = key(app, "lost");
      CompletableFuture<Void> failed =
          b.runAsync(
              tx -> {
                tx.set(lost, new byte[] {1});
                return CompletableFuture.completedFuture(null);
              });
      assertThatThrownBy(() -> failed.get(10, TimeUnit.SECONDS))
          .cause()
          .isInstanceOfSatisfying(
              BackendException.class,
              e -> assertThat(e.code()).isEqualTo(BackendException.IO_ERROR));
      assertThatThrownBy(() -> b.run(tx -> tx.get(lost)))
          .isInstanceOfSatisfying(
              BackendException.class,
              e -> assertThat(e.getMessage()).contains("may or may not have applied"));
    }
  }

  private static List<String> listing(Path dir) throws IOException {
    try (Stream<Path> s = Files.list(dir)) {
      return s.map(p -> p.getFileName().toString()).sorted().toList();
    }
  }
}
