package io.dgen.internal.codec;

import com.apple.foundationdb.tuple.Tuple;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.JsonNodeFactory;
import tools.jackson.databind.node.ObjectNode;

/**
 * One node of a state as stored: its shape and what the next diff needs — a term's tree and chunk
 * count, an object's fields (sorted by name, as the keys sort), a list's items with their
 * fractional indexes. Immutable and shared between transactions and between versions of a state (a
 * diff reuses every unchanged node).
 */
final class StoredNode {

  /** Tag of an object's fields and marker. */
  static final String ASSIGNS = "m";

  /** Tag of a list's items and marker. */
  static final String COMPONENTS = "l";

  /** Tag of a term's chunks. */
  static final String TERM = "t";

  static final byte[] ASSIGNS_KEY = Tuple.from(ASSIGNS).pack();
  static final byte[] COMPONENTS_KEY = Tuple.from(COMPONENTS).pack();
  static final byte[] TERM_KEY = Tuple.from(TERM).pack();

  /** Field names in the order the tuple layer sorts them: by code point (UTF-8 byte order). */
  static final Comparator<String> NAME_ORDER = StoredNode::compareCodePoints;

  enum Shape {
    TERM,
    ASSIGNS,
    COMPONENTS
  }

  /**
   * The sorted field names of an object, with a lazily built name-to-position index. Versions of an
   * object with the same names share one instance, so the index is built once.
   */
  static final class Names {
    final String[] sorted;
    // A race builds the index twice; both results are equal.
    private volatile @Nullable Map<String, Integer> index;

    Names(String[] sorted) {
      this.sorted = sorted;
    }

    /** The position of {@code name}, or -1. */
    int indexOf(String name) {
      Map<String, Integer> i = index;
      if (i == null) {
        i = new HashMap<>(capacity(sorted.length));
        for (int k = 0; k < sorted.length; k++) {
          i.put(sorted[k], k);
        }
        index = i;
      }
      Integer at = i.get(name);
      return at == null ? -1 : at;
    }
  }

  /**
   * What a diff of an object against this node learned: the positions of its fields in the order
   * the object listed them ({@code -1}: unknown), so that the next diff of a copy, which lists them
   * in the same order, finds each without a lookup; and for each field the deeply immutable value
   * that writes it, if one was met ({@code null}: none known), so that the next diff passes over
   * that very value with one reference comparison.
   */
  record Walked(int[] order, @Nullable Object[] sources) {}

  /** An item of a list: its id, its fractional index and its node. */
  record Item(String id, byte[] index, StoredNode value) {}

  static final Names NO_NAMES = new Names(new String[0]);
  private static final StoredNode[] NO_CHILDREN = new StoredNode[0];

  final Shape shape;
  final int chunks;
  final Names names;
  final StoredNode[] children;
  final List<Item> items;
  // A term's tree is known when it is built; an object's or list's is assembled from its children
  // when first asked for (a race assembles it twice; both results are equal).
  private volatile @Nullable JsonNode tree;
  // What the last diff of an object against this node learned, for the next: set by any diff,
  // and true of this node whichever diff set it.
  private volatile @Nullable Walked walked;
  private volatile @Nullable Map<String, Integer> positions;
  // The keys this node occupies, once counted (-1: not yet).
  private volatile int keys = -1;

  private StoredNode(
      Shape shape,
      @Nullable JsonNode tree,
      int chunks,
      Names names,
      StoredNode[] children,
      List<Item> items) {
    this.shape = shape;
    this.tree = tree;
    this.chunks = chunks;
    this.names = names;
    this.children = children;
    this.items = items;
  }

  static StoredNode term(JsonNode tree, int chunks) {
    return new StoredNode(Shape.TERM, tree, chunks, NO_NAMES, NO_CHILDREN, List.of());
  }

  /** {@code children[i]} is the field {@code names.sorted[i]}. */
  static StoredNode assigns(Names names, StoredNode[] children) {
    return new StoredNode(Shape.ASSIGNS, null, 0, names, children, List.of());
  }

  /** {@code items} in index order. */
  static StoredNode components(List<Item> items) {
    return new StoredNode(Shape.COMPONENTS, null, 0, NO_NAMES, NO_CHILDREN, List.copyOf(items));
  }

  /** The node as a tree: objects with their fields in name order, lists in index order. */
  JsonNode tree() {
    JsonNode t = tree;
    if (t == null) {
      if (shape == Shape.ASSIGNS) {
        LinkedHashMap<String, JsonNode> fields = new LinkedHashMap<>(capacity(children.length));
        for (int i = 0; i < children.length; i++) {
          fields.put(names.sorted[i], children[i].tree());
        }
        t = new ObjectNode(JsonNodeFactory.instance, fields);
      } else {
        List<JsonNode> elements = new ArrayList<>(items.size());
        for (Item i : items) {
          elements.add(i.value.tree());
        }
        t = new ArrayNode(JsonNodeFactory.instance, elements);
      }
      tree = t;
    }
    return t;
  }

  /** The keys this node occupies: its markers and its terms' chunks, at any depth. */
  int keys() {
    int k = keys;
    if (k < 0) {
      k = shape == Shape.TERM ? chunks : 1;
      for (StoredNode child : children) {
        k += child.keys();
      }
      for (Item item : items) {
        k += item.value.keys();
      }
      keys = k;
    }
    return k;
  }

  @Nullable Walked walked() {
    return walked;
  }

  void walked(Walked w) {
    walked = w;
  }

  /** A list's id-to-position map, built once and reused by every diff against this node. */
  Map<String, Integer> positions() {
    Map<String, Integer> p = positions;
    if (p == null) {
      p = new HashMap<>(capacity(items.size()));
      for (int i = 0; i < items.size(); i++) {
        p.put(items.get(i).id, i);
      }
      positions = p;
    }
    return p;
  }

  static int capacity(int size) {
    return size < 3 ? 4 : (int) (size / 0.75f) + 1;
  }

  private static int compareCodePoints(String a, String b) {
    int i = 0;
    int j = 0;
    while (i < a.length() && j < b.length()) {
      int ca = a.codePointAt(i);
      int cb = b.codePointAt(j);
      if (ca != cb) {
        return Integer.compare(ca, cb);
      }
      i += Character.charCount(ca);
      j += Character.charCount(cb);
    }
    return Integer.compare(a.length() - i, b.length() - j);
  }
}
