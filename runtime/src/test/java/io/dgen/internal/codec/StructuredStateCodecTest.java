package io.dgen.internal.codec;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.StateTooLargeException;
import io.dgen.StoreAsTerm;
import io.dgen.UndecodableDataException;
import io.dgen.backend.KeyValue;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.JsonNodeFactory;
import tools.jackson.databind.node.ObjectNode;

class StructuredStateCodecTest {

  private static final JsonNodeFactory F = JsonNodeFactory.instance;

  private final CodecFixture fx = new CodecFixture();

  @AfterEach
  void close() {
    fx.close();
  }

  // ---------------------------------------------------------------- shapes

  @Test
  void emptyContainers_roundTripUnambiguously() {
    for (JsonNode tree :
        List.of(
            F.objectNode(),
            F.arrayNode(),
            obj("a", F.objectNode(), "b", F.arrayNode(), "c", F.nullNode()),
            F.arrayNode().add(obj("id", F.stringNode("x"), "l", F.arrayNode())))) {
      StoredState written = fx.write(null, tree);
      StoredState read = fx.read();
      assertThat(read).isNotNull();
      assertThat(read.tree()).isEqualTo(tree);
      assertThat(written.tree()).isEqualTo(tree);
    }
  }

  @Test
  void scalarsAtTheTop_areOneTerm() {
    for (JsonNode tree :
        List.of(F.numberNode(5), F.stringNode("x"), F.nullNode(), F.booleanNode(true))) {
      fx.write(null, tree);
      assertThat(stateKeys()).containsExactly(Tuple.from("t", 0L), V);
      assertThat(fx.read().tree()).isEqualTo(tree);
    }
  }

  @Test
  void aSmallState_producesTheDocumentedKeys() {
    ObjectNode state =
        obj(
            "owner",
            F.stringNode("ada"),
            "tags",
            F.arrayNode().add("a").add("b"),
            "limits",
            obj("daily", F.numberNode(100)),
            "items",
            F.arrayNode()
                .add(obj("id", F.stringNode("k1"), "qty", F.numberNode(2)))
                .add(obj("id", F.stringNode("k2"), "qty", F.numberNode(5))));
    fx.write(null, state);
    List<String> lines = fx.keyLines();
    System.out.println("keys of " + state);
    lines.forEach(System.out::println);
    assertThat(stateKeys())
        .containsExactly(
            Tuple.from("m"),
            Tuple.from("m", "items", "l"),
            Tuple.from("m", "items", "l", new byte[] {86}, "k1", "m"),
            Tuple.from("m", "items", "l", new byte[] {86}, "k1", "m", "id", "t", 0L),
            Tuple.from("m", "items", "l", new byte[] {86}, "k1", "m", "qty", "t", 0L),
            Tuple.from("m", "items", "l", new byte[] {(byte) 171}, "k2", "m"),
            Tuple.from("m", "items", "l", new byte[] {(byte) 171}, "k2", "m", "id", "t", 0L),
            Tuple.from("m", "items", "l", new byte[] {(byte) 171}, "k2", "m", "qty", "t", 0L),
            Tuple.from("m", "limits", "m"),
            Tuple.from("m", "limits", "m", "daily", "t", 0L),
            Tuple.from("m", "owner", "t", 0L),
            Tuple.from("m", "tags", "t", 0L),
            Tuple.from("v"));
    assertThat(fx.read().tree()).isEqualTo(state);
  }

  @Test
  void arraysWithoutUniqueStringIds_areTerms() {
    List<JsonNode> lists =
        List.of(
            F.arrayNode().add(obj("id", F.numberNode(1))),
            F.arrayNode().add(obj("id", F.stringNode("a"))).add(obj("id", F.stringNode("a"))),
            F.arrayNode().add(obj("id", F.stringNode("a"))).add(F.numberNode(3)),
            F.arrayNode().add(obj("name", F.stringNode("a"))));
    for (JsonNode list : lists) {
      fx.write(null, obj("x", list));
      assertThat(stateKeys()).contains(Tuple.from("m", "x", "t", 0L));
      assertThat(fx.read().tree()).isEqualTo(obj("x", list));
    }
  }

  @Test
  void write_leavesTheVersionKeyAlone_evenWhenClearingEverything() {
    StoredState s = fx.write(null, bigAssigns(10));
    s = fx.write(s, F.numberNode(1)); // shape change at the root
    s = fx.write(null, bigList(10)); // unknown old: clears the whole subspace
    fx.write(s, F.objectNode());
    assertThat(fx.version()).containsExactly(CodecFixture.VERSION_VALUE);
  }

  @Test
  void write_returnsOldAndWritesNothing_whenUnchanged() {
    StoredState s = fx.write(null, bigAssigns(50));
    StoredState read = fx.read();
    long bytes = fx.bytesWritten(() -> assertThat(fx.write(read, bigAssigns(50))).isSameAs(read));
    assertThat(bytes).isZero();
    assertThat(fx.write(s, bigAssigns(50))).isSameAs(s);
  }

  @Test
  void smallLongs_readBackAsInts_doNotCountAsChanges() {
    ObjectNode longs = F.objectNode();
    for (int i = 0; i < 20; i++) {
      longs.put("f" + i, (long) i);
    }
    fx.write(null, longs);
    StoredState read = fx.read();
    assertThat(read.tree().get("f3").isInt()).isTrue(); // what Smile gives back
    long bytes = fx.bytesWritten(() -> fx.write(read, longs.deepCopy()));
    assertThat(bytes).isZero();
  }

  @Test
  void changeOfShape_clearsAndRewritesThatSubtree() {
    StoredState s = fx.write(null, obj("a", obj("x", F.numberNode(1), "y", F.numberNode(2))));
    s = fx.write(s, obj("a", F.arrayNode().add(1)));
    assertThat(stateKeys()).containsExactly(Tuple.from("m"), Tuple.from("m", "a", "t", 0L), V);
    s = fx.write(s, obj("a", F.arrayNode().add(obj("id", F.stringNode("i")))));
    assertThat(fx.read().tree()).isEqualTo(s.tree());
    assertThat(stateKeys()).doesNotContain(Tuple.from("m", "a", "t", 0L));
  }

  @Test
  void removedFieldsAndItems_areCleared() {
    StoredState s = fx.write(null, obj("keep", F.numberNode(1), "drop", bigList(3)));
    s = fx.write(s, obj("keep", F.numberNode(1)));
    assertThat(stateKeys()).containsExactly(Tuple.from("m"), Tuple.from("m", "keep", "t", 0L), V);
    s = fx.write(s, obj("keep", F.numberNode(1), "l", bigList(5)));
    ArrayNode three = bigList(5);
    three.remove(1);
    three.remove(2);
    fx.write(s, obj("keep", F.numberNode(1), "l", three));
    assertThat(fx.read().tree()).isEqualTo(obj("keep", F.numberNode(1), "l", three));
    // ("m", "l", "l", index, id, "m"): one marker per remaining item
    assertThat(stateKeys().stream().filter(t -> t.size() == 6)).hasSize(3);
  }

  @Test
  void termsShrink_clearTheirSurplusChunks() {
    StoredState s = fx.write(null, obj("blob", F.stringNode("x".repeat(350_000))));
    assertThat(stateKeys()).hasSize(2 + 4);
    fx.write(s, obj("blob", F.stringNode("y".repeat(150_000))));
    assertThat(stateKeys()).hasSize(2 + 2);
    assertThat(fx.read().tree().get("blob").stringValue()).hasSize(150_000);
  }

  @Test
  void veryLongFieldNamesOrIds_makeTheirContainerATerm_andKeysStayUnderTheLimit() {
    String longName = "n".repeat(9_500);
    ObjectNode state =
        obj(
            "short",
            F.numberNode(1),
            "wide",
            obj(longName, F.numberNode(2)),
            "list",
            F.arrayNode().add(obj("id", F.stringNode(longName))));
    fx.write(null, state);
    assertThat(stateKeys())
        .contains(
            Tuple.from("m", "short", "t", 0L),
            Tuple.from("m", "wide", "t", 0L),
            Tuple.from("m", "list", "t", 0L));
    assertThat(fx.dump()).allSatisfy(kv -> assertThat(kv.key().length).isLessThan(10_000));
    assertThat(fx.read().tree()).isEqualTo(state);
  }

  @Test
  void decode_refusesKeysOfAnotherLayout() {
    fx.backend.run(
        tx -> {
          tx.set(fx.space.pack(Tuple.from("x", 1)), new byte[] {1});
          return null;
        });
    assertThatThrownBy(fx::read)
        .isInstanceOf(UndecodableDataException.class)
        .hasMessageContaining("unknown tag 'x'");
  }

  @Test
  void decode_givesNull_whenOnlyTheVersionKeyIsStored() {
    assertThat(fx.read()).isNull();
  }

  // ---------------------------------------------------------------- costs

  @Test
  void oneFieldChange_inA1000FieldState_writesUnderOnePercentOfTheState() {
    ObjectNode state = bigAssigns(1_000);
    long whole = fx.bytesWritten(() -> fx.write(null, state));
    StoredState stored = fx.read();
    ObjectNode changed = state.deepCopy();
    changed.put("field0500", "changed value of field 500");
    long diff = fx.bytesWritten(() -> fx.write(stored, changed));
    System.out.printf(
        "assigns 1000 fields: whole=%d bytes, one-field diff=%d bytes (%.3f%%)%n",
        whole, diff, 100.0 * diff / whole);
    assertThat(diff).isPositive().isLessThan(whole / 100);
    assertThat(fx.read().tree()).isEqualTo(changed);
  }

  @Test
  void moveOrEditOneItem_inA1000ItemList_writesUnderTwoPercentOfTheList() {
    ObjectNode state = obj("items", bigList(1_000));
    long whole = fx.bytesWritten(() -> fx.write(null, state));
    StoredState s0 = fx.read();

    ObjectNode edited = state.deepCopy();
    ((ObjectNode) edited.get("items").get(700)).put("qty", 12345);
    long edit = fx.bytesWritten(() -> fx.write(s0, edited));

    StoredState s1 = fx.read();
    ObjectNode moved = edited.deepCopy();
    ArrayNode items = (ArrayNode) moved.get("items");
    JsonNode item = items.remove(500);
    items.insert(10, item);
    long move = fx.bytesWritten(() -> fx.write(s1, moved));

    StoredState s2 = fx.read();
    ObjectNode inserted = moved.deepCopy();
    ((ArrayNode) inserted.get("items")).insert(333, item(5_000));
    long insert = fx.bytesWritten(() -> fx.write(s2, inserted));

    StoredState s3 = fx.read();
    ObjectNode removed = inserted.deepCopy();
    ((ArrayNode) removed.get("items")).remove(900);
    long remove = fx.bytesWritten(() -> fx.write(s3, removed));

    System.out.printf(
        "components 1000 items: whole=%d bytes, edit=%d (%.3f%%), move=%d (%.3f%%),"
            + " insert=%d (%.3f%%), remove=%d (%.3f%%)%n",
        whole,
        edit,
        100.0 * edit / whole,
        move,
        100.0 * move / whole,
        insert,
        100.0 * insert / whole,
        remove,
        100.0 * remove / whole);
    assertThat(edit).isPositive().isLessThan(whole / 50);
    assertThat(move).isPositive().isLessThan(whole / 50);
    assertThat(insert).isPositive().isLessThan(whole / 50);
    assertThat(remove).isPositive().isLessThan(whole / 50);
    assertThat(fx.read().tree()).isEqualTo(removed);
  }

  @Test
  void aOneMegabyteTerm_roundTripsAsAtLeastTenChunks() {
    byte[] data = new byte[1_000_000];
    for (int i = 0; i < data.length; i++) {
      data[i] = (byte) (i * 31 + (i >>> 8));
    }
    JsonNode state = F.binaryNode(data);
    fx.write(null, state);
    List<KeyValue> chunks = fx.dump().stream().filter(kv -> kv.value().length > 1).toList();
    System.out.printf("1 MB byte[] term: %d chunks%n", chunks.size());
    assertThat(chunks).hasSizeGreaterThanOrEqualTo(10);
    assertThat(chunks).allSatisfy(kv -> assertThat(kv.value().length).isLessThanOrEqualTo(100_000));
    assertThat(fx.read().tree().binaryValue()).isEqualTo(data);
  }

  // ---------------------------------------------------------------- limits

  @Test
  void aStateTooLargeForOneTransaction_failsClearly_andWritesNothing() {
    ObjectNode small = obj("a", F.numberNode(1));
    StoredState s = fx.write(null, small);
    List<KeyValue> before = fx.dump();
    ObjectNode huge = small.deepCopy();
    for (int i = 0; i < 10; i++) {
      huge.put("blob" + i, "x".repeat(1_000_000));
    }
    assertThatThrownBy(() -> fx.write(s, huge))
        .isInstanceOf(StateTooLargeException.class)
        .hasMessageContaining("exceeds the 9000000-byte budget")
        .hasMessageContaining("largest part=\"blob")
        .satisfies(
            e -> {
              StateTooLargeException t = (StateTooLargeException) e;
              assertThat(t.encodedBytes()).isGreaterThan(10_000_000);
              assertThat(t.limitBytes()).isEqualTo(9_000_000);
            });
    assertThatThrownBy(() -> fx.write(null, huge)).isInstanceOf(StateTooLargeException.class);
    assertThat(fx.dump()).isEqualTo(before);
    assertThat(fx.read().tree()).isEqualTo(small);
  }

  @Test
  void aLargeStateGrownBySmallChanges_keepsWorking() {
    StoredState s = fx.write(null, F.objectNode());
    ObjectNode state = F.objectNode();
    for (int i = 0; i < 12; i++) {
      state.put("blob" + i, String.valueOf(i).repeat(900_000));
      s = fx.write(s, state.deepCopy());
    }
    assertThat(fx.read().tree()).isEqualTo(state);
  }

  // ---------------------------------------------------------------- @StoreAsTerm

  record Cell(String id, int value) {}

  @StoreAsTerm
  record Matrix(List<List<Integer>> rows, Map<String, Integer> meta) {}

  sealed interface Shape permits Circle, Square {}

  record Circle(@StoreAsTerm Map<String, Integer> style) implements Shape {}

  record Square(Map<String, Integer> style, int side) implements Shape {}

  record Annotated(
      Map<String, Integer> plain,
      @StoreAsTerm Map<String, Integer> packed,
      List<Cell> cells,
      @StoreAsTerm List<Cell> packedCells,
      Matrix matrix,
      Map<String, Matrix> matrices,
      Shape shape) {}

  @Test
  void storeAsTerm_onComponentsAndTypes_keepsThosePartsOneTerm() {
    Annotated state =
        new Annotated(
            Map.of("a", 1, "b", 2),
            Map.of("a", 1, "b", 2),
            List.of(new Cell("c1", 1)),
            List.of(new Cell("c1", 1)),
            new Matrix(List.of(List.of(1)), Map.of("k", 1)),
            Map.of("m", new Matrix(List.of(), Map.of())),
            new Square(Map.of("w", 1), 3));
    JsonNode tree = fx.serde.toTree(state);
    fx.write(null, tree, fx.serde.type(Annotated.class));
    List<Tuple> keys = stateKeys();
    assertThat(keys)
        .contains(
            Tuple.from("m", "plain", "m", "a", "t", 0L),
            Tuple.from("m", "packed", "t", 0L),
            Tuple.from("m", "cells", "l"),
            Tuple.from("m", "packedCells", "t", 0L),
            Tuple.from("m", "matrix", "t", 0L),
            Tuple.from("m", "matrices", "m", "m", "t", 0L),
            // Circle's annotated "style" applies to every Shape's "style"
            Tuple.from("m", "shape", "m", "style", "t", 0L),
            Tuple.from("m", "shape", "m", "side", "t", 0L));
    assertThat(fx.read().tree()).isEqualTo(tree);
  }

  @Test
  void storeAsTerm_addedLater_rewritesThePartInItsNewShape() {
    record Plain(Map<String, Integer> packed) {}
    JsonNode tree = fx.serde.toTree(new Plain(Map.of("a", 1)));
    StoredState s = fx.write(null, tree, fx.serde.type(Plain.class));
    assertThat(stateKeys()).contains(Tuple.from("m", "packed", "m", "a", "t", 0L));
    fx.write(s, tree, fx.serde.type(Annotated.class)); // same field name, now annotated
    assertThat(stateKeys()).containsExactly(Tuple.from("m"), Tuple.from("m", "packed", "t", 0L), V);
  }

  @StoreAsTerm
  record WholeTerm(Map<String, Integer> a) {}

  record Renamed(
      @com.fasterxml.jackson.annotation.JsonProperty("renamed") @StoreAsTerm
          Map<String, Integer> original) {}

  @Test
  void storeAsTerm_onTheStateType_keepsTheWholeStateOneTerm_andFollowsJsonNames() {
    fx.write(null, fx.serde.toTree(new WholeTerm(Map.of("x", 1))), fx.serde.type(WholeTerm.class));
    assertThat(stateKeys()).containsExactly(Tuple.from("t", 0L), V);
    fx.write(null, fx.serde.toTree(new Renamed(Map.of("x", 1))), fx.serde.type(Renamed.class));
    assertThat(stateKeys())
        .containsExactly(Tuple.from("m"), Tuple.from("m", "renamed", "t", 0L), V);
  }

  // ---------------------------------------------------------------- switching encodings

  @Test
  void encodingsReadEachOther_andTheFirstWriteLeavesNoStaleKeys() {
    ObjectNode state = obj("items", bigList(20), "n", F.numberNode(1));
    fx.codec = new TermStateCodec(fx.serde);
    fx.write(null, state);
    assertThat(stateKeys()).containsExactly(Tuple.from("t", 0L), V);

    fx.codec = new StructuredStateCodec(fx.serde);
    StoredState read = fx.read();
    assertThat(read.tree()).isEqualTo(state);
    ObjectNode next = state.deepCopy().put("n", 2);
    fx.write(read, next);
    assertThat(stateKeys()).doesNotContain(Tuple.from("t", 0L)).contains(Tuple.from("m"));

    fx.codec = new TermStateCodec(fx.serde);
    StoredState back = fx.read();
    assertThat(back.tree()).isEqualTo(next);
    fx.write(back, next.deepCopy().put("n", 3));
    assertThat(stateKeys()).containsExactly(Tuple.from("t", 0L), V);
    assertThat(fx.version()).containsExactly(CodecFixture.VERSION_VALUE);
  }

  // ---------------------------------------------------------------- rebalancing

  @Test
  void repeatedInsertionsIntoOneGap_rebalanceTheList_andKeepIndexesBounded() {
    ArrayNode items = F.arrayNode();
    items.add(item(0));
    items.add(item(1));
    StoredState s = fx.write(null, obj("l", items));
    long rebalances = 0;
    for (int i = 2; i < 700; i++) {
      items.insert(1, item(i));
      ObjectNode next = obj("l", items.deepCopy());
      StoredState[] holder = {s};
      long bytes = fx.bytesWritten(() -> holder[0] = fx.write(holder[0], next));
      s = holder[0];
      if (bytes > 2_000) {
        rebalances++;
      }
    }
    assertThat(rebalances).isBetween(1L, 3L); // about one per 450 insertions into one gap
    int longest =
        stateKeys().stream()
            .filter(t -> t.size() > 3)
            .mapToInt(t -> t.getBytes(3).length)
            .max()
            .orElseThrow();
    assertThat(longest).isLessThanOrEqualTo(FractionalIndex.MAX_LENGTH);
    assertThat(s.tree()).isEqualTo(obj("l", items));
  }

  @Test
  void longestIncreasingRun_keepsAllButTheMovedItem() {
    boolean[] keep = ListDiff.longestIncreasingRun(new int[] {0, 1, 5, 2, 3, 4, -1});
    assertThat(keep).containsExactly(true, true, false, true, true, true, false);
  }

  // ---------------------------------------------------------------- helpers

  private static final Tuple V = Tuple.from("v");

  private List<Tuple> stateKeys() {
    List<Tuple> out = new ArrayList<>();
    for (KeyValue kv : fx.dump()) {
      out.add(fx.space.unpack(kv.key()));
    }
    return out;
  }

  static ObjectNode obj(Object... kv) {
    Map<String, JsonNode> m = new LinkedHashMap<>();
    for (int i = 0; i < kv.length; i += 2) {
      m.put((String) kv[i], (JsonNode) kv[i + 1]);
    }
    return new ObjectNode(F, m);
  }

  // ---------------------------------------------------------------- diff or whole

  /** A state of {@code n} fields, every one of them holding {@code round}'s value. */
  private static ObjectNode everyField(int n, int round) {
    ObjectNode o = F.objectNode();
    for (int i = 0; i < n; i++) {
      o.put(String.format("field%04d", i), "round " + round);
    }
    return o;
  }

  /** Rows besides the version key and the one term of a state stored whole. */
  private static final int WHOLE_ROWS = 2;

  @Test
  void aStateEveryWriteRewrites_isStoredWhole_afterARunOfLosingDiffs() {
    StoredState s = fx.write(null, everyField(100, 0));
    for (int round = 1; round <= StructuredStateCodec.LOSING_DIFFS; round++) {
      s = fx.write(s, everyField(100, round));
      assertThat(fx.dump()).as("diffed, round %d", round).hasSize(102);
    }
    s = fx.write(s, everyField(100, 99));
    assertThat(fx.dump()).hasSize(WHOLE_ROWS);
    assertThat(s.tree()).isEqualTo(everyField(100, 99));
    assertThat(fx.read().tree()).isEqualTo(everyField(100, 99));
    assertThat(fx.version()).containsExactly(CodecFixture.VERSION_VALUE);
    StoredState whole = s;
    assertThat(fx.bytesWritten(() -> fx.write(whole, everyField(100, 99)))).isZero();
  }

  @Test
  void smallDiffs_neverTurnAStateWhole() {
    StoredState s = fx.write(null, bigAssigns(100));
    for (int round = 0; round < 3 * StructuredStateCodec.LOSING_DIFFS; round++) {
      ObjectNode next = bigAssigns(100);
      for (int i = 0; i < StructuredStateCodec.SMALL_DIFF - 1; i++) {
        next.put(String.format("field%04d", i), "round " + round);
      }
      s = fx.write(s, next);
      assertThat(fx.dump()).hasSize(102);
    }
  }

  /** A state of 100 fields, all changed by each write until the codec stores it whole. */
  private StoredState storedWhole() {
    StoredState s = fx.write(null, everyField(100, 0));
    for (int round = 1; round <= StructuredStateCodec.LOSING_DIFFS + 1; round++) {
      s = fx.write(s, everyField(100, round));
    }
    assertThat(fx.dump()).hasSize(WHOLE_ROWS);
    return s;
  }

  @Test
  void aStateStoredWhole_isProbed_andDiffedAgainOnceItsChangesAreSmall() {
    StoredState s = storedWhole();
    ObjectNode state = everyField(100, 0);
    for (int write = 1; write <= StructuredStateCodec.PROBE_EVERY; write++) {
      state.put("field0000", "write " + write);
      s = fx.write(s, state);
      assertThat(fx.dump()).as("write %d before the probe", write).hasSize(WHOLE_ROWS);
    }
    state.put("field0000", "probed");
    s = fx.write(s, state);
    assertThat(fx.dump()).hasSize(102);
    assertThat(fx.read().tree()).isEqualTo(state);
    try (CodecFixture fresh = new CodecFixture()) {
      fresh.write(null, state);
      assertThat(fx.keyLines()).isEqualTo(fresh.keyLines());
    }
  }

  @Test
  void aStateStoredWhole_isDiffedAgain_byTheNextProcessToLoadIt() {
    StoredState whole = storedWhole();
    ObjectNode state = everyField(100, StructuredStateCodec.LOSING_DIFFS + 1);
    assertThat(whole.tree()).isEqualTo(state);
    state.put("field0007", "changed");
    fx.write(fx.read(), state);
    assertThat(fx.dump()).hasSize(102);
    assertThat(fx.read().tree()).isEqualTo(state);
  }

  static ObjectNode bigAssigns(int n) {
    ObjectNode o = F.objectNode();
    for (int i = 0; i < n; i++) {
      o.put(String.format("field%04d", i), "value of field " + i);
    }
    return o;
  }

  static ObjectNode item(int i) {
    return obj(
        "id",
        F.stringNode(String.format("item-%05d", i)),
        "name",
        F.stringNode("the item number " + i),
        "qty",
        F.numberNode(i));
  }

  static ArrayNode bigList(int n) {
    ArrayNode a = F.arrayNode();
    for (int i = 0; i < n; i++) {
      a.add(item(i));
    }
    return a;
  }
}
