package io.dgen.internal.codec;

import static io.dgen.internal.codec.StructuredStateCodecPropertiesTest.normalized;
import static org.assertj.core.api.Assertions.assertThat;

import io.dgen.internal.codec.StateObjects.Drawing;
import io.dgen.internal.codec.StateObjects.Maker;
import io.dgen.internal.codec.StateObjects.Root;
import java.util.Random;
import java.util.function.Function;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import tools.jackson.databind.JavaType;
import tools.jackson.databind.JsonNode;

/**
 * Properties of writing state objects (as the runtime does) rather than trees: a write of an object
 * leaves the store exactly as a fresh write of the tree Jackson makes of it — whether the object
 * was built anew, shares parts with the stored state, or was changed in place — and the state
 * handed back decodes to that tree.
 */
class ObjectWritePropertiesTest {

  @Property(seed = "20261201", tries = 300)
  void freshWriteOfAnObject_equalsAFreshWriteOfItsTree(@ForAll Random random) {
    for (boolean term : new boolean[] {false, true}) {
      Root state = new Maker(random).root();
      try (CodecFixture objects = new CodecFixture(term);
          CodecFixture trees = new CodecFixture(term)) {
        JsonNode tree = objects.serde.toTree(state);
        objects.writeObject(null, state, Root.class);
        trees.write(null, tree);
        assertSameRows(objects, trees);
        assertThat(Trees.same(objects.read().tree(), tree)).isTrue();
      }
    }
  }

  @Property(seed = "20261202", tries = 300)
  void diffOfTheNextState_equalsAFreshWrite_fromWhatTheWriteReturned(@ForAll Random random) {
    assertChain(random, Root.class, m -> m.root(), (m, s) -> m.next(s), false, 1);
    assertChain(random, Root.class, m -> m.root(), (m, s) -> m.next(s), true, 1);
  }

  @Property(seed = "20261203", tries = 150)
  void aChainOfDiffs_fromStateTheCodecHandsOut_equalsAFreshWrite(@ForAll Random random) {
    assertChain(random, Root.class, m -> m.root(), (m, s) -> m.next(s), false, 6);
  }

  @Property(seed = "20261204", tries = 100)
  void statesWithTypeIds_areWrittenAsTrees_andStillDiffCorrectly(@ForAll Random random) {
    assertChain(random, Drawing.class, m -> m.drawing(), (m, s) -> m.next(s), false, 4);
  }

  /**
   * The runtime lends the state object a write came from back to the codec once its commit and
   * actions are done; the next callback gets that very object (once), changes it in place or copies
   * it, and the diff of what it returns still equals a fresh write. A callback whose write never
   * committed (it changed the lent object in place, then failed) is followed by a fresh decode of
   * what is stored, never by the changed object.
   */
  @Property(seed = "20261205", tries = 150)
  void aChainOfDiffs_fromLentStates_equalsAFreshWrite_andAFailedCallbackLeavesNoTrace(
      @ForAll Random random) {
    for (boolean term : new boolean[] {false, true}) {
      Maker maker = new Maker(random);
      try (CodecFixture diffed = new CodecFixture(term)) {
        JavaType type = diffed.serde.type(Root.class);
        Root state = maker.root();
        StoredState stored = diffed.writeObject(null, state, Root.class);
        stored.lend(state);
        for (int i = 0; i < 6; i++) {
          Root handedOut = (Root) diffed.codec.state(stored, type);
          boolean mutable = !diffed.codec.isDeeplyImmutable(state);
          if (mutable) {
            assertThat(handedOut).as("the lent object").isSameAs(state);
            // a second caller meanwhile gets a decode of its own
            assertThat(diffed.codec.state(stored, type)).isNotSameAs(handedOut);
          }
          if (random.nextInt(4) == 0) {
            JsonNode before = stored.tree();
            maker.next(handedOut); // changed in place, perhaps; then the callback failed
            Root again = (Root) diffed.codec.state(stored, type);
            if (mutable) {
              assertThat(again).isNotSameAs(handedOut);
            }
            assertThat(Trees.same(diffed.serde.toTree(again), before))
                .as("after a failure")
                .isTrue();
            handedOut = again;
          }
          state = maker.next(handedOut);
          stored = diffed.writeObject(stored, state, Root.class);
          stored.lend(state);
          JsonNode tree = diffed.serde.toTree(state);
          try (CodecFixture fresh = new CodecFixture(term)) {
            fresh.write(null, tree);
            assertSameRows(diffed, fresh);
          }
          assertThat(Trees.same(diffed.read().tree(), tree)).as("tree read back").isTrue();
        }
      }
    }
  }

  private interface Next<T> {
    T apply(Maker maker, T state);
  }

  /**
   * Writes a random state, then {@code steps} next states, each diffed against what the previous
   * write returned (or, with {@code fromStore}, against the state decoded from the store), the next
   * state derived from the state object the codec handed out for it; after each step the rows must
   * equal a fresh write of the tree.
   */
  private static <T> void assertChain(
      Random random,
      Class<T> type,
      Function<Maker, T> start,
      Next<T> next,
      boolean fromStore,
      int steps) {
    Maker maker = new Maker(random);
    try (CodecFixture diffed = new CodecFixture()) {
      JavaType javaType = diffed.serde.type(type);
      T state = start.apply(maker);
      StoredState stored = diffed.writeObject(null, state, type);
      for (int i = 0; i < steps; i++) {
        StoredState base = fromStore ? diffed.read() : stored;
        @SuppressWarnings("unchecked")
        T handedOut = (T) diffed.codec.state(base, javaType);
        state = next.apply(maker, handedOut);
        stored = diffed.writeObject(base, state, type);
        JsonNode tree = diffed.serde.toTree(state);
        try (CodecFixture fresh = new CodecFixture()) {
          fresh.write(null, tree);
          assertSameRows(diffed, fresh);
        }
        assertThat(Trees.same(stored.tree(), tree)).as("tree of the write").isTrue();
        assertThat(Trees.same(diffed.read().tree(), tree)).as("tree read back").isTrue();
        assertThat(diffed.version()).containsExactly(CodecFixture.VERSION_VALUE);
      }
    }
  }

  private static void assertSameRows(CodecFixture a, CodecFixture b) {
    assertThat(normalized(a.space, a.dump())).isEqualTo(normalized(b.space, b.dump()));
  }
}
