package io.dgen.internal.codec;

import static io.dgen.internal.codec.StructuredStateCodecPropertiesTest.normalized;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.common.collect.ImmutableMap;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JavaType;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.JsonNodeFactory;

/**
 * Writing state objects: what may be taken as unchanged without looking (deeply immutable parts of
 * the very instance stored), what must always be compared (anything that can change in place), and
 * which state objects may be shared between callbacks.
 */
class ObjectWriteTest {

  private final CodecFixture fx = new CodecFixture();

  @AfterEach
  void close() {
    fx.close();
  }

  record Names(List<String> names) {}

  record Counted(String id, String value) {
    static final AtomicInteger reads = new AtomicInteger();

    @Override
    public String value() {
      reads.incrementAndGet();
      return value;
    }
  }

  record Wide(Map<String, Counted> fields) {}

  static final class Pojo {
    public String name = "a";
    public List<String> tags = new ArrayList<>();
  }

  record Scores(Map<String, Integer> scores) {}

  // ---------------------------------------------------------------- changes in place

  /**
   * A map declared with String keys is not searched for others; a key of another class put there
   * through an unchecked cast fails the write as Jackson fails it, and nothing is written.
   */
  @Test
  @SuppressWarnings({"unchecked", "rawtypes"})
  void aMapDeclaredWithStringKeys_holdingAnotherKey_failsAsJacksonDoes_writingNothing() {
    Map<String, Integer> scores = new HashMap<>(Map.of("a", 1));
    ((Map) scores).put(7, 2);
    Scores s = new Scores(scores);
    assertThatThrownBy(() -> fx.serde.toTree(s)).isInstanceOf(RuntimeException.class);
    assertThatThrownBy(() -> fx.writeObject(null, s, Scores.class))
        .isInstanceOf(RuntimeException.class);
    assertThat(fx.dump()).hasSize(1); // the version key alone
  }

  /** A copied map whose entries are the same instances is diffed entry by entry by identity. */
  @Test
  void aCopiedMap_withOneEntryReplaced_writesThatEntryOnly() {
    Map<String, String> fields = new HashMap<>();
    for (int i = 0; i < 100; i++) {
      fields.put("f" + i, "v" + i);
    }
    record Flat(Map<String, String> fields) {}
    Flat s = new Flat(fields);
    StoredState stored = fx.writeObject(null, s, Flat.class);
    for (int i = 0; i < 3; i++) {
      Map<String, String> copy = new HashMap<>(s.fields());
      copy.put("f" + i, "changed " + i);
      s = new Flat(copy);
      Flat next = s;
      StoredState base = stored;
      long bytes = fx.bytesWritten(() -> fx.writeObject(base, next, Flat.class));
      stored = fx.read();
      assertThat(bytes).isLessThan(100);
      assertRowsAreAFreshWriteOf(s);
    }
  }

  @Test
  void aMutableListInsideARecord_changedInPlace_isWritten() {
    Names s = new Names(new ArrayList<>(List.of("a")));
    StoredState stored = fx.writeObject(null, s, Names.class);
    s.names().add("b"); // the callback's style: change in place, return the same record
    StoredState after = fx.writeObject(stored, s, Names.class);
    assertThat(after).isNotSameAs(stored);
    assertRowsAreAFreshWriteOf(s);
    // Same through an object the codec handed out.
    Names handedOut = (Names) fx.codec.state(fx.read(), type(Names.class));
    handedOut.names().add("c");
    fx.writeObject(fx.read(), handedOut, Names.class);
    assertThat(fx.read().tree().get("names")).hasSize(3);
  }

  @Test
  void aMutablePojo_changedInPlace_isWritten_everyTime() {
    Pojo p = new Pojo();
    StoredState stored = fx.writeObject(null, p, Pojo.class);
    for (int i = 0; i < 3; i++) {
      p.name = "n" + i;
      p.tags.add("t" + i);
      stored = fx.writeObject(stored, p, Pojo.class);
      assertRowsAreAFreshWriteOf(p);
    }
    assertThat(fx.read().tree().get("tags")).hasSize(3);
  }

  @Test
  void anUnmodifiableView_ofAListChangedBehindIt_isWritten() {
    List<String> backing = new ArrayList<>(List.of("a"));
    Names s = new Names(Collections.unmodifiableList(backing));
    StoredState stored = fx.writeObject(null, s, Names.class);
    backing.add("b"); // a view is not immutable: whoever holds the list can change it
    fx.writeObject(stored, s, Names.class);
    assertRowsAreAFreshWriteOf(s);
    assertThat(fx.read().tree().get("names")).hasSize(2);
  }

  @Test
  void aTreeInsideAState_changedInPlace_isWritten() {
    record WithTree(JsonNode extra) {}
    WithTree s = new WithTree(JsonNodeFactory.instance.objectNode().put("k", 1));
    StoredState stored = fx.writeObject(null, s, WithTree.class);
    ((tools.jackson.databind.node.ObjectNode) s.extra()).put("k", 2);
    fx.writeObject(stored, s, WithTree.class);
    assertThat(fx.read().tree().get("extra").get("k").intValue()).isEqualTo(2);
  }

  // ---------------------------------------------------------------- sharing

  /** Jackson decodes a list as an ArrayList: the constructor makes it immutable. */
  record Frozen(List<String> names) {
    Frozen {
      names = List.copyOf(names);
    }
  }

  @Test
  void aDeeplyImmutableState_isDecodedOnce_andShared() {
    Frozen s = new Frozen(List.of("a", "b"));
    StoredState written = fx.writeObject(null, s, Frozen.class);
    assertThat(fx.codec.state(written, type(Frozen.class))).isSameAs(s);
    StoredState read = fx.read();
    Object first = fx.codec.state(read, type(Frozen.class));
    assertThat(first).isEqualTo(s).isNotSameAs(s);
    assertThat(fx.codec.state(read, type(Frozen.class))).isSameAs(first);
    // The same record holding what Jackson decodes, an ArrayList, is not shared.
    fx.writeObject(null, new Names(List.of("a")), Names.class);
    StoredState names = fx.read();
    assertThat(fx.codec.state(names, type(Names.class)))
        .isNotSameAs(fx.codec.state(names, type(Names.class)));
  }

  @Test
  void aStateThatCanChangeInPlace_isDecodedAfreshForEveryCaller() throws Exception {
    for (Object state :
        List.of(
            new Names(new ArrayList<>(List.of("a"))),
            new Names(Collections.unmodifiableList(new ArrayList<>(List.of("a")))),
            new Pojo())) {
      StoredState written = fx.writeObject(null, state, state.getClass());
      JavaType t = type(state.getClass());
      assertThat(fx.codec.state(written, t)).isNotSameAs(state);
      StoredState read = fx.read();
      int threads = 8;
      ExecutorService pool = Executors.newFixedThreadPool(threads);
      try {
        CountDownLatch go = new CountDownLatch(1);
        List<Future<Object>> loads = new ArrayList<>();
        for (int i = 0; i < threads * 4; i++) {
          loads.add(
              pool.submit(
                  () -> {
                    go.await();
                    return fx.codec.state(read, t);
                  }));
        }
        go.countDown();
        Set<Object> distinct = Collections.newSetFromMap(new java.util.IdentityHashMap<>());
        for (Future<Object> f : loads) {
          distinct.add(f.get(10, TimeUnit.SECONDS));
        }
        assertThat(distinct).hasSize(loads.size());
      } finally {
        pool.shutdownNow();
      }
    }
  }

  @Test
  void aStateWhoseConstructorNormalizes_isNotShared_andWritesItsNormalForm() {
    record Sorted(List<String> names) {
      Sorted {
        names = names.stream().sorted().toList();
      }
    }
    JsonNode unsorted =
        JsonNodeFactory.instance
            .objectNode()
            .set("names", JsonNodeFactory.instance.arrayNode().add("b").add("a"));
    fx.write(null, unsorted);
    StoredState read = fx.read();
    Object first = fx.codec.state(read, type(Sorted.class));
    assertThat(fx.codec.state(read, type(Sorted.class))).isNotSameAs(first);
    fx.writeObject(read, first, Sorted.class);
    assertRowsAreAFreshWriteOf(first);
  }

  // ---------------------------------------------------------------- cost

  @Test
  void changingOneOf1000ImmutableEntries_readsOnlyThatEntry() {
    Map<String, Counted> fields = new LinkedHashMap<>();
    for (int i = 0; i < 1000; i++) {
      fields.put("f" + i, new Counted("f" + i, "v" + i));
    }
    Wide s = new Wide(ImmutableMap.copyOf(fields));
    StoredState stored = fx.writeObject(null, s, Wide.class);
    Map<String, Counted> changed = new HashMap<>(s.fields());
    changed.put("f7", new Counted("f7", "changed"));
    Wide next = new Wide(ImmutableMap.copyOf(changed));
    Counted.reads.set(0);
    long bytes = fx.bytesWritten(() -> fx.writeObject(stored, next, Wide.class));
    assertThat(Counted.reads.get()).as("entries looked into").isLessThanOrEqualTo(2);
    assertThat(bytes).isLessThan(200);
    assertRowsAreAFreshWriteOf(next);
  }

  @Test
  void changingOneOf1000Entries_ofAMutableMap_comparesThemAll_andWritesOne() {
    Map<String, Counted> fields = new HashMap<>();
    for (int i = 0; i < 1000; i++) {
      fields.put("f" + i, new Counted("f" + i, "v" + i));
    }
    Wide s = new Wide(fields);
    StoredState stored = fx.writeObject(null, s, Wide.class);
    fields.put("f7", new Counted("f7", "changed")); // in place
    long bytes = fx.bytesWritten(() -> fx.writeObject(stored, s, Wide.class));
    assertThat(bytes).isLessThan(200);
    assertRowsAreAFreshWriteOf(s);
  }

  // ---------------------------------------------------------------- helpers

  private JavaType type(Class<?> c) {
    return fx.serde.type(c);
  }

  private void assertRowsAreAFreshWriteOf(Object state) {
    try (CodecFixture fresh = new CodecFixture()) {
      fresh.write(null, fx.serde.toTree(state));
      assertThat(normalized(fx.space, fx.dump())).isEqualTo(normalized(fresh.space, fresh.dump()));
    }
  }
}
