package io.dgen.internal.codec;

import com.fasterxml.jackson.annotation.JsonIgnore;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonSubTypes;
import com.fasterxml.jackson.annotation.JsonTypeInfo;
import com.google.common.collect.ImmutableList;
import com.google.common.collect.ImmutableMap;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.TreeMap;
import org.jspecify.annotations.Nullable;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.JsonNodeFactory;

/**
 * State classes for the codec's tests of object-level writes, and random ones built from a seed:
 * records, a POJO, annotated and polymorphic types, with every kind of collection a user may put in
 * a state — mutable, unmodifiable views, and truly immutable ones.
 */
final class StateObjects {

  private StateObjects() {}

  enum Status {
    ON,
    OFF
  }

  record Item(String id, int qty, List<String> tags) {}

  record Inner(Map<String, Integer> counts, @Nullable String note) {}

  /** Names, inclusion and ignoring by annotation; an Optional (serialized by Jackson). */
  record Tagged(
      @JsonProperty("full_name") String name,
      @JsonInclude(JsonInclude.Include.NON_NULL) @Nullable String maybe,
      @JsonIgnore @Nullable String secret,
      Optional<String> opt) {}

  /** A mutable POJO with public fields. */
  static final class Bag {
    public String label = "";
    public List<Item> items = new ArrayList<>();
    public Map<String, String> attrs = new HashMap<>();
  }

  record Root(
      String name,
      long n,
      Map<String, Inner> byKey,
      List<Item> items,
      List<String> tags,
      @Nullable Inner inner,
      Status status,
      @Nullable BigDecimal price,
      @Nullable JsonNode extra,
      Tagged tagged,
      @Nullable Bag bag) {}

  @JsonTypeInfo(use = JsonTypeInfo.Id.NAME)
  @JsonSubTypes({@JsonSubTypes.Type(Circle.class), @JsonSubTypes.Type(Square.class)})
  sealed interface Shape permits Circle, Square {}

  record Circle(double r) implements Shape {}

  record Square(double side, List<String> marks) implements Shape {}

  /** Type ids make the whole state unwalkable: it is serialized to a tree. */
  record Drawing(String title, List<Shape> shapes, Map<String, Item> byId) {}

  // ---------------------------------------------------------------- random states

  /** Builds random states; each collection is of a random class, mutable or not. */
  static final class Maker {
    final Random r;

    Maker(Random r) {
      this.r = r;
    }

    <T> List<T> list(List<T> items) {
      switch (r.nextInt(6)) {
        case 0:
          return new ArrayList<>(items);
        case 1:
          return List.copyOf(items);
        case 2:
          return Collections.unmodifiableList(new ArrayList<>(items));
        case 3:
          return ImmutableList.copyOf(items);
        case 4:
          return new LinkedList<>(items);
        default:
          return items.stream().toList();
      }
    }

    <V> Map<String, V> map(Map<String, V> entries) {
      switch (r.nextInt(6)) {
        case 0:
          return new HashMap<>(entries);
        case 1:
          return new LinkedHashMap<>(entries);
        case 2:
          return new TreeMap<>(entries);
        case 3:
          return Map.copyOf(entries);
        case 4:
          return ImmutableMap.copyOf(entries);
        default:
          return Collections.unmodifiableMap(new HashMap<>(entries));
      }
    }

    String word() {
      String[] words = {"a", "b", "id", "m", "t", "", "é", "\uD83D\uDE00", "zz", "\u0000x"};
      return words[r.nextInt(words.length)] + (r.nextBoolean() ? "" : r.nextInt(20));
    }

    List<String> words(int max) {
      List<String> out = new ArrayList<>();
      for (int i = r.nextInt(max + 1); i > 0; i--) {
        out.add(word());
      }
      return list(out);
    }

    Item item(String id) {
      return new Item(id, r.nextInt(100), words(2));
    }

    Inner inner() {
      Map<String, Integer> counts = new HashMap<>();
      for (int i = r.nextInt(4); i > 0; i--) {
        counts.put(word(), r.nextInt(1000));
      }
      return new Inner(map(counts), r.nextBoolean() ? null : word());
    }

    List<Item> items() {
      List<Item> out = new ArrayList<>();
      for (int i = r.nextInt(6); i > 0; i--) {
        String id = "i" + r.nextInt(50);
        if (out.stream().noneMatch(x -> x.id().equals(id))) {
          out.add(item(id));
        }
      }
      if (r.nextInt(8) == 0 && !out.isEmpty()) {
        out.add(out.get(0)); // a duplicate id: the list is a term
      }
      return list(out);
    }

    Root root() {
      Map<String, Inner> byKey = new HashMap<>();
      for (int i = r.nextInt(4); i > 0; i--) {
        byKey.put(word(), inner());
      }
      return new Root(
          word(),
          r.nextBoolean() ? r.nextInt(100) : (1L << 40) + r.nextInt(100),
          map(byKey),
          items(),
          words(3),
          r.nextBoolean() ? null : inner(),
          r.nextBoolean() ? Status.ON : Status.OFF,
          r.nextBoolean() ? null : BigDecimal.valueOf(r.nextInt(10_000), 2),
          r.nextInt(3) == 0 ? null : JsonNodeFactory.instance.objectNode().put("k", word()),
          tagged(),
          r.nextInt(3) == 0 ? null : bag());
    }

    Tagged tagged() {
      return new Tagged(
          word(),
          r.nextBoolean() ? null : word(),
          word(),
          r.nextBoolean() ? Optional.empty() : Optional.of(word()));
    }

    Bag bag() {
      Bag b = new Bag();
      b.label = word();
      b.items = new ArrayList<>(items());
      b.attrs.put(word(), word());
      return b;
    }

    Drawing drawing() {
      List<Shape> shapes = new ArrayList<>();
      for (int i = r.nextInt(3); i > 0; i--) {
        shapes.add(r.nextBoolean() ? new Circle(r.nextInt(9)) : new Square(r.nextInt(9), words(2)));
      }
      Map<String, Item> byId = new HashMap<>();
      for (Item i : items()) {
        byId.put(i.id(), i);
      }
      return new Drawing(word(), list(shapes), map(byId));
    }

    // ------------------------------------------------------------ changes

    /**
     * The next state after a callback: most parts the same instances, some replaced, some changed
     * in place where their class allows it (which changes {@code s} too, as a callback would).
     */
    Root next(Root s) {
      return new Root(
          r.nextInt(4) == 0 ? word() : s.name(),
          r.nextInt(4) == 0 ? s.n() + 1 : s.n(),
          r.nextInt(3) == 0 ? nextMap(s.byKey()) : s.byKey(),
          r.nextInt(2) == 0 ? nextItems(s.items()) : s.items(),
          r.nextInt(3) == 0 ? nextWords(s.tags()) : s.tags(),
          r.nextInt(4) == 0 ? (r.nextBoolean() ? null : inner()) : s.inner(),
          r.nextInt(4) == 0 ? Status.ON : s.status(),
          r.nextInt(4) == 0 ? BigDecimal.ONE : s.price(),
          r.nextInt(4) == 0 ? JsonNodeFactory.instance.arrayNode().add(word()) : s.extra(),
          r.nextInt(4) == 0 ? tagged() : s.tagged(),
          r.nextInt(3) == 0 ? nextBag(s.bag()) : s.bag());
    }

    Map<String, Inner> nextMap(Map<String, Inner> m) {
      Map<String, Inner> out = new HashMap<>(m);
      if (!out.isEmpty() && r.nextBoolean()) {
        out.remove(out.keySet().iterator().next());
      }
      if (r.nextBoolean()) {
        out.put(word(), inner());
      }
      if (!out.isEmpty() && r.nextBoolean()) {
        String k = out.keySet().iterator().next();
        Inner was = out.get(k);
        out.put(k, new Inner(was.counts(), word()));
      }
      if (inPlace(m)) {
        m.clear();
        m.putAll(out);
        return m;
      }
      return map(out);
    }

    List<Item> nextItems(List<Item> l) {
      List<Item> out = new ArrayList<>(l);
      if (!out.isEmpty() && r.nextBoolean()) {
        out.add(r.nextInt(out.size()), out.remove(r.nextInt(out.size()))); // move
      }
      if (!out.isEmpty() && r.nextInt(3) == 0) {
        out.remove(r.nextInt(out.size()));
      }
      if (!out.isEmpty() && r.nextBoolean()) {
        int i = r.nextInt(out.size());
        Item was = out.get(i);
        out.set(i, new Item(was.id(), was.qty() + 1, was.tags()));
      }
      if (r.nextBoolean()) {
        String id = "n" + r.nextInt(100);
        if (out.stream().noneMatch(x -> x.id().equals(id))) {
          out.add(r.nextInt(out.size() + 1), item(id));
        }
      }
      if (inPlace(l)) {
        l.clear();
        l.addAll(out);
        return l;
      }
      return list(out);
    }

    List<String> nextWords(List<String> l) {
      if (inPlace(l)) {
        l.add(word());
        return l;
      }
      List<String> out = new ArrayList<>(l);
      out.add(word());
      return list(out);
    }

    @Nullable Bag nextBag(@Nullable Bag b) {
      if (b == null) {
        return bag();
      }
      if (r.nextBoolean()) {
        b.label = word(); // a setter-style change in place, same instance
        b.attrs.put(word(), word());
        if (!b.items.isEmpty()) {
          b.items.set(0, item(b.items.get(0).id()));
        }
        return b;
      }
      return r.nextBoolean() ? bag() : null;
    }

    Drawing next(Drawing d) {
      List<Shape> shapes = new ArrayList<>(d.shapes());
      shapes.add(new Circle(r.nextInt(9)));
      Map<String, Item> byId = new HashMap<>(d.byId());
      byId.put("x" + r.nextInt(9), item("x"));
      return new Drawing(
          r.nextBoolean() ? d.title() : word(),
          r.nextBoolean() ? d.shapes() : list(shapes),
          r.nextBoolean() ? d.byId() : map(byId));
    }

    /** Whether to change a collection in place (if its class allows it). */
    private boolean inPlace(Object collection) {
      return r.nextBoolean()
          && (collection instanceof ArrayList<?>
              || collection instanceof LinkedList<?>
              || collection instanceof HashMap<?, ?>
              || collection instanceof TreeMap<?, ?>);
    }
  }
}
