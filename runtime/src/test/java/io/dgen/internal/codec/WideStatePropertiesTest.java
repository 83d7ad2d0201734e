package io.dgen.internal.codec;

import static io.dgen.internal.codec.StructuredStateCodecPropertiesTest.normalized;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.common.collect.ImmutableList;
import com.google.common.collect.ImmutableMap;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import tools.jackson.databind.JavaType;
import tools.jackson.databind.JsonNode;

/**
 * Wide states changed as callbacks change them, through the objects the codec hands out (the lent
 * object it was written from, or a decode): copies of maps and lists with entries put, removed,
 * replaced by equal values of another instance, swapped, lists reordered, in every kind of map and
 * list, or changed in place. After every step what is read back equals what was written and the
 * rows equal a fresh write of it, whatever the diff skipped by identity.
 */
class WideStatePropertiesTest {

  /** A record of the collections a callback copies: the shape the diff must see through. */
  public record Wide(Map<String, String> fields, List<String> words, Map<String, Entry> entries) {}

  /** A deeply immutable value inside a map. */
  public record Entry(String name, int n) {}

  @Property(seed = "20261206", tries = 200)
  void editsOfCopiedOrChangedCollections_readBackAsWritten(@ForAll Random random) {
    for (boolean term : new boolean[] {false, true}) {
      Edits edits = new Edits(random);
      try (CodecFixture fx = new CodecFixture(term)) {
        JavaType type = fx.serde.type(Wide.class);
        Wide state = edits.start();
        StoredState stored = fx.writeObject(null, state, Wide.class);
        stored.lend(state);
        for (int step = 0; step < 8; step++) {
          StoredState base = random.nextInt(5) == 0 ? fx.read() : stored;
          Wide handedOut = (Wide) fx.codec.state(base, type);
          JsonNode expected = fx.serde.toTree(handedOut);
          assertThat(Trees.same(expected, base.tree())).as("handed out = stored").isTrue();
          state = edits.next(handedOut);
          stored = fx.writeObject(base, state, Wide.class);
          stored.lend(state);
          JsonNode tree = fx.serde.toTree(state);
          if (!term) { // a term is not rewritten for a mere change of field order
            try (CodecFixture fresh = new CodecFixture(term)) {
              fresh.write(null, tree);
              assertThat(normalized(fx.space, fx.dump()))
                  .isEqualTo(normalized(fresh.space, fresh.dump()));
            }
          }
          Wide readBack = fx.serde.fromTree(fx.read().tree(), type);
          assertThat(readBack).isEqualTo(state);
        }
      }
    }
  }

  private static final class Edits {
    private final Random r;

    Edits(Random r) {
      this.r = r;
    }

    Wide start() {
      Map<String, String> fields = new HashMap<>();
      Map<String, Entry> entries = new HashMap<>();
      List<String> words = new ArrayList<>();
      for (int i = 0; i < 40; i++) {
        fields.put("f" + i, value(i));
        entries.put("e" + i, new Entry("e" + i, i));
        words.add(value(i));
      }
      return new Wide(map(fields), list(words), map(entries));
    }

    /** A value; equal values are often distinct instances. */
    private String value(int i) {
      return new String("v" + (i % 7));
    }

    Wide next(Wide s) {
      return new Wide(
          r.nextBoolean() ? edit(s.fields(), () -> value(r.nextInt(50))) : s.fields(),
          r.nextBoolean() ? editList(s.words()) : s.words(),
          r.nextBoolean() ? edit(s.entries(), () -> new Entry("x", r.nextInt(5))) : s.entries());
    }

    private <V> Map<String, V> edit(Map<String, V> m, java.util.function.Supplier<V> fresh) {
      Map<String, V> out = new HashMap<>(m);
      List<String> keys = new ArrayList<>(out.keySet());
      int edits = 1 + r.nextInt(3);
      for (int i = 0; i < edits && !keys.isEmpty(); i++) {
        String k = keys.get(r.nextInt(keys.size()));
        switch (r.nextInt(5)) {
          case 0 -> out.remove(k);
          case 1 -> out.put("n" + r.nextInt(60), fresh.get());
          case 2 -> out.put(k, fresh.get());
          case 3 -> { // swap two values
            String k2 = keys.get(r.nextInt(keys.size()));
            V a = out.get(k);
            V b = out.get(k2);
            if (a != null && b != null) {
              out.put(k, b);
              out.put(k2, a);
            }
          }
          default -> {} // unchanged
        }
      }
      if (r.nextInt(4) == 0 && (m instanceof HashMap || m instanceof TreeMap)) {
        m.clear(); // changed in place, as a callback may
        m.putAll(out);
        return m;
      }
      return map(out);
    }

    private List<String> editList(List<String> l) {
      List<String> out = new ArrayList<>(l);
      if (!out.isEmpty() && r.nextBoolean()) {
        out.add(r.nextInt(out.size()), out.remove(r.nextInt(out.size()))); // move
      }
      if (!out.isEmpty() && r.nextBoolean()) {
        out.remove(r.nextInt(out.size()));
      }
      if (r.nextBoolean()) {
        out.add(r.nextInt(out.size() + 1), value(r.nextInt(50)));
      }
      if (r.nextInt(6) == 0) {
        Collections.reverse(out);
      }
      if (r.nextInt(4) == 0 && l instanceof ArrayList) {
        l.clear();
        l.addAll(out);
        return l;
      }
      return list(out);
    }

    private <V> Map<String, V> map(Map<String, V> entries) {
      return switch (r.nextInt(6)) {
        case 0 -> new HashMap<>(entries);
        case 1 -> new LinkedHashMap<>(entries);
        case 2 -> new TreeMap<>(entries);
        case 3 -> Map.copyOf(entries);
        case 4 -> ImmutableMap.copyOf(entries);
        default -> Collections.unmodifiableMap(new LinkedHashMap<>(entries));
      };
    }

    private List<String> list(List<String> items) {
      return switch (r.nextInt(4)) {
        case 0 -> new ArrayList<>(items);
        case 1 -> List.copyOf(items);
        case 2 -> ImmutableList.copyOf(items);
        default -> Collections.unmodifiableList(new ArrayList<>(items));
      };
    }
  }
}
