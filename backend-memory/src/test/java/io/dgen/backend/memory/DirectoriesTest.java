package io.dgen.backend.memory;

import static io.dgen.backend.memory.TestKeys.b;
import static io.dgen.backend.memory.TestKeys.get;
import static io.dgen.backend.memory.TestKeys.put;
import static io.dgen.backend.memory.TestKeys.range;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.apple.foundationdb.subspace.Subspace;
import com.apple.foundationdb.tuple.Tuple;
import io.dgen.backend.ByteKeys;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class DirectoriesTest {

  private final MemoryBackend backend = MemoryBackend.create();

  @AfterEach
  void close() {
    backend.close();
  }

  @Test
  void directory_allocatesShortDisjointPrefixes() {
    List<byte[]> prefixes = new ArrayList<>();
    for (int i = 0; i < 300; i++) {
      prefixes.add(backend.directory("tenant", "t" + i).getKey());
    }
    prefixes.add(backend.openDirectory("tenant").orElseThrow().getKey());
    for (byte[] p : prefixes) {
      assertThat(p.length).isBetween(2, 3);
      assertThat(Tuple.fromBytes(p).size()).isEqualTo(1);
      assertThat(Tuple.fromBytes(p).get(0)).isInstanceOf(Long.class);
      for (byte[] q : prefixes) {
        if (p != q) {
          assertThat(ByteKeys.startsWith(q, p)).isFalse();
        }
      }
    }
  }

  @Test
  void directory_reopensTheSamePrefixAndCreatesParents() {
    Subspace ab = backend.directory("a", "b");
    assertThat(backend.directory("a", "b").getKey()).isEqualTo(ab.getKey());
    assertThat(backend.openDirectory("a", "b").orElseThrow().getKey()).isEqualTo(ab.getKey());
    assertThat(backend.openDirectory("a")).isPresent();
    assertThat(backend.openDirectory("a").orElseThrow().getKey()).isNotEqualTo(ab.getKey());
    assertThat(backend.openDirectory("b")).isEmpty();
  }

  @Test
  void directory_concurrentCreatorsGetOneDirectory() throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(4);
    try {
      List<Callable<byte[]>> tasks = new ArrayList<>();
      for (int i = 0; i < 8; i++) {
        tasks.add(() -> backend.directory("shared", "dir").getKey());
      }
      List<byte[]> keys = new ArrayList<>();
      for (Future<byte[]> f : pool.invokeAll(tasks)) {
        keys.add(f.get());
      }
      assertThat(keys).allSatisfy(k -> assertThat(k).isEqualTo(keys.get(0)));
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void removeDirectory_removesItsKeysAndItsSubdirectoriesButNotSiblings() {
    Subspace a = backend.directory("a");
    Subspace ab = backend.directory("a", "b");
    Subspace sibling = backend.directory("a\0");
    Subspace other = backend.directory("ab");
    for (Subspace s : List.of(a, ab, sibling, other)) {
      put(backend, s.pack(Tuple.from("x")), b("v"));
    }

    assertThat(backend.removeDirectory("a")).isTrue();

    assertThat(backend.openDirectory("a")).isEmpty();
    assertThat(backend.openDirectory("a", "b")).isEmpty();
    assertThat(backend.openDirectory("a\0")).isPresent();
    assertThat(backend.openDirectory("ab")).isPresent();
    assertThat(get(backend, a.pack(Tuple.from("x")))).isNull();
    assertThat(get(backend, ab.pack(Tuple.from("x")))).isNull();
    assertThat(get(backend, sibling.pack(Tuple.from("x")))).isEqualTo(b("v"));
    assertThat(get(backend, other.pack(Tuple.from("x")))).isEqualTo(b("v"));
    assertThat(backend.removeDirectory("a")).isFalse();

    Subspace again = backend.directory("a");
    assertThat(again.getKey()).isNotEqualTo(a.getKey());
  }

  @Test
  void directory_rejectsEmptyPaths() {
    assertThatThrownBy(() -> backend.directory())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("at least one element");
    assertThatThrownBy(() -> backend.directory("a", ""))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("element 1 is empty");
    assertThatThrownBy(() -> backend.openDirectory((String) null))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> backend.removeDirectory(new String[0]))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void directory_metadataLivesUnderTheNodePrefix() {
    backend.directory("a");
    List<io.dgen.backend.KeyValue> meta =
        range(backend, new byte[] {(byte) 0xfe}, new byte[] {(byte) 0xff});
    assertThat(meta).isNotEmpty();
    assertThat(range(backend, new byte[0], new byte[] {(byte) 0xfe})).isEmpty();
  }
}
