package io.dgen.backend.rocksdb;

import static org.assertj.core.api.Assertions.assertThat;

import com.apple.foundationdb.subspace.Subspace;
import com.apple.foundationdb.tuple.Tuple;
import io.dgen.backend.ByteKeys;
import io.dgen.backend.KeyValue;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Directories written by the backend before reads were served from disk (format {@code dgen-rocksdb
 * 1}, whose key layout this version keeps) open unchanged: {@code src/test/resources/format-1}
 * holds two, made by that backend's code with {@code GenFormat1.java.txt}, one closed cleanly (its
 * data in a table file) and one halted without a close (its data only in the write-ahead log,
 * replayed at open).
 */
class FormatOneCompatibilityTest {

  /** The versionstamp the old backend gave its last commit: versions continue above it. */
  private static final byte[] LAST_STAMP = {0, 0, 0, 0, 0, 0, 0, (byte) 0xcd, 0, 0};

  @TempDir Path root;

  @ParameterizedTest
  @ValueSource(strings = {"closed", "halted"})
  void aFormatOneDirectory_opensAndReadsEveryKeyFromDisk(String fixture) throws Exception {
    Path dir = copy(fixture);
    try (RocksDbBackend b = RocksDbBackend.open(dir)) {
      assertThat(b.keysInMemory()).isZero();
      Subspace app = b.openDirectory("app", "one").orElseThrow();
      List<KeyValue> items =
          b.run(
              tx ->
                  tx.getRange(
                      app.range(Tuple.from("item")).begin, app.range(Tuple.from("item")).end));
      // 200 written, 100..149 cleared by a range clear, 3 by a point clear
      assertThat(items).hasSize(149);
      assertThat(Tuple.fromBytes(items.get(0).value()).getLong(1)).isEqualTo(0L);
      assertThat(Tuple.fromBytes(items.get(148).value()).getLong(1)).isEqualTo(199L);
      byte[] hits = b.run(tx -> tx.get(app.pack(Tuple.from("hits"))));
      assertThat(ByteBuffer.wrap(hits).order(ByteOrder.LITTLE_ENDIAN).getLong()).isEqualTo(7);
      byte[] stamp = b.run(tx -> tx.get(app.pack(Tuple.from("stamp"))));
      assertThat(stamp).isEqualTo(LAST_STAMP);

      b.run(
          tx -> {
            tx.setVersionstampedValue(app.pack(Tuple.from("stamp")), new byte[0]);
            tx.add(app.pack(Tuple.from("hits")), 1);
            return null;
          });
      byte[] next = b.run(tx -> tx.get(app.pack(Tuple.from("stamp"))));
      assertThat(ByteKeys.COMPARATOR.compare(next, LAST_STAMP)).isPositive();
      // A directory made now does not reuse the old one's prefix.
      assertThat(b.directory("app", "two").getKey()).isNotEqualTo(app.getKey());
    }
    try (RocksDbBackend b = RocksDbBackend.open(dir)) {
      Subspace app = b.openDirectory("app", "one").orElseThrow();
      byte[] hits = b.run(tx -> tx.get(app.pack(Tuple.from("hits"))));
      assertThat(ByteBuffer.wrap(hits).order(ByteOrder.LITTLE_ENDIAN).getLong()).isEqualTo(8);
    }
  }

  private Path copy(String fixture) throws IOException, URISyntaxException {
    Path from = Path.of(getClass().getResource("/format-1/" + fixture).toURI());
    Path to = root.resolve(fixture);
    try (Stream<Path> files = Files.walk(from)) {
      files.forEach(
          f -> {
            try {
              Path t = to.resolve(from.relativize(f).toString());
              if (Files.isDirectory(f)) {
                Files.createDirectories(t);
              } else {
                Files.copy(f, t);
              }
            } catch (IOException e) {
              throw new UncheckedIOException(e);
            }
          });
    }
    return to;
  }
}
