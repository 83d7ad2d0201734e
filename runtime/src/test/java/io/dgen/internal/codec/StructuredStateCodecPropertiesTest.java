package io.dgen.internal.codec;

import static org.assertj.core.api.Assertions.assertThat;

import com.apple.foundationdb.subspace.Subspace;
import io.dgen.backend.KeyValue;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.JsonNodeFactory;
import tools.jackson.databind.node.ObjectNode;

/**
 * Properties of the structured codec over random trees: what is decoded is what was encoded, and a
 * diff leaves the store exactly as a fresh write of the new state would (same keys and values, up
 * to the fractional index values, which are compared by their rank within their list).
 */
class StructuredStateCodecPropertiesTest {

  private static final JsonNodeFactory F = JsonNodeFactory.instance;
  private static final HexFormat HEX = HexFormat.of();

  @Property(seed = "20260401", tries = 300)
  void decodeOfEncode_isTheTree(@ForAll("trees") JsonNode tree) {
    try (CodecFixture fx = new CodecFixture()) {
      StoredState written = fx.write(null, tree);
      StoredState read = fx.read();
      assertThat(read).isNotNull();
      assertThat(read.tree()).isEqualTo(tree);
      assertThat(written.tree()).isEqualTo(tree);
      assertThat(fx.version()).containsExactly(CodecFixture.VERSION_VALUE);
    }
  }

  @Property(seed = "20260402", tries = 300)
  void diffOfAMutation_equalsAFreshWrite(@ForAll("trees") JsonNode old, @ForAll Random random) {
    JsonNode next = mutate(old, random, 0);
    assertDiffEqualsFresh(old, next, true);
    assertDiffEqualsFresh(old, next, false);
  }

  @Property(seed = "20260403", tries = 200)
  void diffBetweenUnrelatedTrees_equalsAFreshWrite(
      @ForAll("trees") JsonNode old, @ForAll("trees") JsonNode next) {
    assertDiffEqualsFresh(old, next, true);
  }

  @Property(seed = "20260404", tries = 100)
  void aChainOfDiffs_fromWhatEachWriteReturned_equalsAFreshWrite(
      @ForAll("trees") JsonNode start, @ForAll Random random) {
    try (CodecFixture diffed = new CodecFixture();
        CodecFixture fresh = new CodecFixture()) {
      StoredState s = diffed.write(null, start);
      JsonNode tree = start;
      for (int i = 0; i < 5; i++) {
        tree = mutate(tree, random, 0);
        s = diffed.write(s, tree);
        assertThat(s.tree()).isEqualTo(tree);
      }
      fresh.write(null, tree);
      assertThat(normalized(diffed.space, diffed.dump()))
          .isEqualTo(normalized(fresh.space, fresh.dump()));
      assertThat(diffed.read().tree()).isEqualTo(tree);
    }
  }

  @Property(seed = "20260405", tries = 500)
  void packedLengths_matchTheTupleLayer(
      @ForAll("names") String name, @ForAll byte[] bytes, @ForAll("unicode") String any) {
    assertThat(KeyPath.packedLength(name))
        .isEqualTo(com.apple.foundationdb.tuple.Tuple.from(name).getPackedSize());
    assertThat(KeyPath.packedLength(any))
        .isEqualTo(com.apple.foundationdb.tuple.Tuple.from(any).getPackedSize());
    assertThat(KeyPath.packedLength(bytes))
        .isEqualTo(com.apple.foundationdb.tuple.Tuple.from((Object) bytes).getPackedSize());
  }

  @Provide
  Arbitrary<String> unicode() {
    // Well-formed UTF-16 only: names with unpaired surrogates are never used in keys.
    return Arbitraries.strings()
        .all()
        .ofMaxLength(20)
        .filter(s -> s.codePoints().noneMatch(c -> c >= 0xD800 && c <= 0xDFFF));
  }

  private static void assertDiffEqualsFresh(JsonNode old, JsonNode next, boolean fromStore) {
    try (CodecFixture diffed = new CodecFixture();
        CodecFixture fresh = new CodecFixture()) {
      StoredState written = diffed.write(null, old);
      StoredState base = fromStore ? diffed.read() : written;
      StoredState after = diffed.write(base, next);
      fresh.write(null, next);
      assertThat(normalized(diffed.space, diffed.dump()))
          .as("keys after diff vs fresh write of %s -> %s", old, next)
          .isEqualTo(normalized(fresh.space, fresh.dump()));
      assertThat(after.tree()).isEqualTo(next);
      assertThat(diffed.read().tree()).isEqualTo(next);
      assertThat(diffed.version()).containsExactly(CodecFixture.VERSION_VALUE);
    }
  }

  /**
   * The rows as "key = value" lines, each key a tuple relative to the state subspace with every
   * fractional index replaced by its rank among the indexes of its list.
   */
  static List<String> normalized(Subspace space, List<KeyValue> rows) {
    List<List<Object>> keys = new ArrayList<>();
    Map<List<Object>, TreeSet<String>> lists = new HashMap<>();
    for (KeyValue kv : rows) {
      List<Object> items = new ArrayList<>();
      for (Object o : space.unpack(kv.key()).getItems()) {
        items.add(o instanceof byte[] b ? "b:" + HEX.formatHex(b) : o);
      }
      keys.add(items);
      for (int j = 0; j < items.size(); j++) {
        if (items.get(j) instanceof String s && s.startsWith("b:")) {
          lists.computeIfAbsent(items.subList(0, j), k -> new TreeSet<>()).add(s);
        }
      }
    }
    List<String> out = new ArrayList<>();
    for (int i = 0; i < rows.size(); i++) {
      List<Object> items = keys.get(i);
      List<Object> norm = new ArrayList<>(items);
      for (int j = 0; j < items.size(); j++) {
        if (items.get(j) instanceof String s && s.startsWith("b:")) {
          norm.set(j, "#" + lists.get(items.subList(0, j)).headSet(s).size());
        }
      }
      out.add(norm + " = " + HEX.formatHex(rows.get(i).value()));
    }
    return out;
  }

  // ---------------------------------------------------------------- generators

  @Provide
  Arbitrary<JsonNode> trees() {
    return node(3);
  }

  private static Arbitrary<JsonNode> node(int depth) {
    if (depth == 0) {
      return scalar();
    }
    return Arbitraries.frequencyOf(
        Tuple.of(3, scalar()),
        Tuple.of(3, object(depth - 1)),
        Tuple.of(1, plainArray(depth - 1)),
        Tuple.of(2, components(depth - 1)));
  }

  @Provide
  Arbitrary<String> names() {
    return nameStrings();
  }

  private static Arbitrary<String> nameStrings() {
    return Arbitraries.oneOf(
        Arbitraries.strings().withChars("abcxyz_").ofMinLength(0).ofMaxLength(4),
        Arbitraries.of(
            "id", "m", "l", "t", "v", "", "\u0000", "é", "€", "\uD83D\uDE00", "a\u0000b"));
  }

  private static Arbitrary<JsonNode> scalar() {
    return Arbitraries.oneOf(
        Arbitraries.integers().map(F::numberNode),
        Arbitraries.longs().between(1L << 40, Long.MAX_VALUE).map(F::numberNode),
        Arbitraries.doubles().between(-1e9, 1e9).map(F::numberNode),
        Arbitraries.bigDecimals()
            .between(BigDecimal.valueOf(-1000), BigDecimal.valueOf(1000))
            .ofScale(3)
            .map(F::numberNode),
        nameStrings().map(F::stringNode),
        Arbitraries.strings().ofMaxLength(40).map(F::stringNode),
        Arbitraries.of(true, false).map(F::booleanNode),
        Arbitraries.just(F.nullNode()),
        Arbitraries.bytes().array(byte[].class).ofMaxSize(8).map(F::binaryNode));
  }

  private static Arbitrary<JsonNode> object(int depth) {
    return Arbitraries.maps(nameStrings(), Arbitraries.lazy(() -> node(depth)))
        .ofMaxSize(4)
        .map(
            m -> {
              ObjectNode o = F.objectNode();
              m.forEach(o::set);
              return o;
            });
  }

  private static Arbitrary<JsonNode> plainArray(int depth) {
    return Arbitraries.lazy(() -> node(depth))
        .list()
        .ofMaxSize(4)
        .map(
            l -> {
              ArrayNode a = F.arrayNode();
              l.forEach(a::add);
              return a;
            });
  }

  private static Arbitrary<JsonNode> components(int depth) {
    Arbitrary<ObjectNode> item =
        Arbitraries.maps(nameStrings(), Arbitraries.lazy(() -> node(depth)))
            .ofMaxSize(3)
            .flatMap(
                fields ->
                    nameStrings()
                        .map(
                            id -> {
                              ObjectNode o = F.objectNode();
                              fields.forEach(o::set);
                              o.put("id", id);
                              return o;
                            }));
    return item.list()
        .ofMaxSize(6)
        .uniqueElements(o -> o.get("id").stringValue())
        .map(
            l -> {
              ArrayNode a = F.arrayNode();
              l.forEach(a::add);
              return a;
            });
  }

  // ---------------------------------------------------------------- mutations

  /** A copy of {@code node} with random edits: changed, added and removed fields and items. */
  static JsonNode mutate(JsonNode node, Random r, int depth) {
    if (depth > 0 && r.nextInt(10) == 0) {
      return randomTree(r, 2);
    }
    if (node.isObject()) {
      ObjectNode out = F.objectNode();
      for (Map.Entry<String, JsonNode> e : node.properties()) {
        int roll = r.nextInt(10);
        if (roll == 0) {
          continue; // removed
        }
        out.set(e.getKey(), roll < 4 ? mutate(e.getValue(), r, depth + 1) : e.getValue());
      }
      if (r.nextInt(4) == 0) {
        out.set(randomName(r), randomTree(r, 2));
      }
      return out;
    }
    if (node.isArray()) {
      List<JsonNode> items = new ArrayList<>();
      node.forEach(items::add);
      boolean components = isComponents(node);
      for (int i = 0; i < items.size(); i++) {
        if (r.nextInt(3) == 0) {
          JsonNode changed = mutate(items.get(i), r, depth + 1);
          if (components && !(changed.isObject() && changed.has("id"))) {
            changed = ((ObjectNode) items.get(i).deepCopy()).put("extra", r.nextInt());
          }
          items.set(i, changed);
        }
      }
      if (!items.isEmpty() && r.nextBoolean()) {
        items.add(r.nextInt(items.size()), items.remove(r.nextInt(items.size()))); // move
      }
      if (!items.isEmpty() && r.nextInt(4) == 0) {
        items.remove(r.nextInt(items.size()));
      }
      if (r.nextInt(3) == 0) {
        JsonNode added = components ? randomItem(r, ids(items)) : randomTree(r, 1);
        items.add(r.nextInt(items.size() + 1), added);
      }
      ArrayNode out = F.arrayNode();
      items.forEach(out::add);
      return out;
    }
    return r.nextInt(3) == 0 ? randomScalar(r) : node;
  }

  private static boolean isComponents(JsonNode array) {
    Set<String> ids = new HashSet<>();
    for (JsonNode item : array) {
      JsonNode id = item.get("id");
      if (!item.isObject() || id == null || !id.isString() || !ids.add(id.stringValue())) {
        return false;
      }
    }
    return true;
  }

  private static Set<String> ids(List<JsonNode> items) {
    Set<String> ids = new HashSet<>();
    for (JsonNode item : items) {
      JsonNode id = item.get("id");
      if (id != null && id.isString()) {
        ids.add(id.stringValue());
      }
    }
    return ids;
  }

  private static ObjectNode randomItem(Random r, Set<String> taken) {
    String id;
    do {
      id = "new-" + r.nextInt(1000);
    } while (taken.contains(id));
    ObjectNode o = F.objectNode();
    o.set(randomName(r), randomTree(r, 1));
    return o.put("id", id);
  }

  private static String randomName(Random r) {
    String[] names = {"a", "b", "id", "m", "t", "", "\u0000", "é", "\uD83D\uDE00", "zz"};
    return names[r.nextInt(names.length)];
  }

  private static JsonNode randomTree(Random r, int depth) {
    int kind = depth == 0 ? 0 : r.nextInt(4);
    if (kind == 1) {
      ObjectNode o = F.objectNode();
      for (int i = r.nextInt(3); i > 0; i--) {
        o.set(randomName(r), randomTree(r, depth - 1));
      }
      return o;
    }
    if (kind == 2) {
      ArrayNode a = F.arrayNode();
      Set<String> taken = new HashSet<>();
      for (int i = r.nextInt(3); i > 0; i--) {
        ObjectNode item = randomItem(r, taken);
        taken.add(item.get("id").stringValue());
        a.add(item);
      }
      return a;
    }
    if (kind == 3) {
      return F.arrayNode().add(randomScalar(r)).add(randomScalar(r));
    }
    return randomScalar(r);
  }

  private static JsonNode randomScalar(Random r) {
    switch (r.nextInt(6)) {
      case 0:
        return F.numberNode(r.nextInt());
      case 1:
        return F.stringNode("s" + r.nextInt(100));
      case 2:
        return F.booleanNode(r.nextBoolean());
      case 3:
        return F.nullNode();
      case 4:
        return F.numberNode(r.nextDouble());
      default:
        return F.numberNode((1L << 41) + r.nextInt(1000));
    }
  }
}
