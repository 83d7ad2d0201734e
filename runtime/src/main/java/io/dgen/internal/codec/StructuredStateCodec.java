package io.dgen.internal.codec;

import com.apple.foundationdb.subspace.Subspace;
import com.apple.foundationdb.tuple.ByteArrayUtil;
import com.apple.foundationdb.tuple.Tuple;
import io.dgen.StateTooLargeException;
import io.dgen.UndecodableDataException;
import io.dgen.backend.KeyValue;
import io.dgen.backend.Transaction;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;
import tools.jackson.databind.JavaType;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.JsonNodeFactory;
import tools.jackson.databind.node.ObjectNode;

/**
 * The structured state encoding (DESIGN §5): the state tree is stored by shape, recursively, so
 * that a small change writes a small diff.
 *
 * <h2>Key layout</h2>
 *
 * Every node of the tree owns the keys under its prefix {@code P}; the root's prefix is the state
 * subspace {@code (tuid.., "s", 0)}.
 *
 * <table>
 *   <caption>Keys of a node at prefix P</caption>
 *   <tr><th>shape</th><th>key</th><th>value</th></tr>
 *   <tr><td>assigns (an object)</td><td>{@code (P.., "m")}</td><td>empty: the marker</td></tr>
 *   <tr><td></td><td>{@code (P.., "m", field, ..)}</td><td>the field's node, prefix {@code (P..,
 *       "m", field)}</td></tr>
 *   <tr><td>components (a list of objects with unique string ids)</td><td>{@code (P.., "l")}</td>
 *       <td>empty: the marker</td></tr>
 *   <tr><td></td><td>{@code (P.., "l", index, id, ..)}</td><td>the item's node, prefix {@code
 *       (P.., "l", index, id)}; {@code index} is a {@link FractionalIndex} byte string</td></tr>
 *   <tr><td>term (anything else)</td><td>{@code (P.., "t", n)}</td><td>chunk {@code n} of the
 *       node's Smile bytes, at most 100,000 bytes each</td></tr>
 * </table>
 *
 * <pre>
 * (tuid.., "s", 0, "v")                         version key: the runtime's, never touched here
 * (tuid.., "s", 0, "m")                         the state is an object
 * (tuid.., "s", 0, "m", "name", "t", 0)         a scalar field
 * (tuid.., "s", 0, "m", "items", "l")           a field holding a list of objects with ids
 * (tuid.., "s", 0, "m", "items", "l", ix, id, "m", "qty", "t", 0)
 * </pre>
 *
 * Markers make empty objects and lists unambiguous. The order of a list lives only in its item
 * keys: no id-to-index map is stored. Object fields come back in key order (field names by code
 * point); the tree a write returns is in that order too, so a state looks the same whether it came
 * from the cache or from the store.
 *
 * <h2>Shapes</h2>
 *
 * An object is assigns and an array of objects whose {@code id}s are unique strings is components,
 * unless the schema of the state type forces a term there ({@link io.dgen.StoreAsTerm}), or a
 * child's key prefix would pass {@link #STRUCTURE_KEY_LIMIT} bytes (a very long field name or id,
 * or very deep nesting), or a name is not valid UTF-16. Everything else is a term, as is every
 * scalar. Shapes are chosen from the new tree alone, so a diff and a fresh write agree on them.
 *
 * <h2>Diffs</h2>
 *
 * A write walks the new tree along the stored one: unchanged subtrees write nothing; removed fields
 * and items are cleared by range; a node whose shape changed is cleared and written afresh; a term
 * that changed is rewritten (and its surplus chunks cleared). In a list, the items forming a
 * longest increasing run of old positions keep their indexes; every other item (moved or new) gets
 * a fresh index between its kept neighbours and, since the index is part of its keys, its subtree
 * is cleared at the old keys and written at the new ones. When a fresh index would exceed {@link
 * FractionalIndex#MAX_LENGTH}, the whole list is rewritten with evenly spaced indexes.
 *
 * <h2>Size</h2>
 *
 * A write first computes every mutation, then checks them against {@link
 * StateTooLargeException#DEFAULT_BUDGET} and the key limit, and only then applies them, so a
 * refused write leaves the transaction untouched.
 */
public final class StructuredStateCodec implements StateCodec {

  /** Tag of an object's fields and marker. */
  static final String ASSIGNS = "m";

  /** Tag of a list's items and marker. */
  static final String COMPONENTS = "l";

  /** Tag of a term's chunks. */
  static final String TERM = "t";

  /** The runtime's version key inside the state subspace; reserved. */
  static final String VERSION = "v";

  /** The longest key prefix under which a node is still split into per-child keys. */
  static final int STRUCTURE_KEY_LIMIT = 8_192;

  /** FoundationDB's key size limit. */
  static final int MAX_KEY = 10_000;

  private static final byte[] EMPTY = new byte[0];
  private static final byte[] ASSIGNS_KEY = Tuple.from(ASSIGNS).pack();
  private static final byte[] COMPONENTS_KEY = Tuple.from(COMPONENTS).pack();
  private static final byte[] TERM_KEY = Tuple.from(TERM).pack();

  /** Stands for the longest index an item may get, when bounding the length of its keys. */
  private static final byte[] LONGEST_INDEX = new byte[FractionalIndex.MAX_LENGTH];

  static {
    Arrays.fill(LONGEST_INDEX, (byte) 0xFF);
  }

  /** Field names in the order the tuple layer sorts them: by code point (UTF-8 byte order). */
  static final Comparator<String> NAME_ORDER = StructuredStateCodec::compareCodePoints;

  private final Serde serde;
  private final boolean termOnly;
  private final long budget;
  private final Map<JavaType, TermSchema> schemas = new ConcurrentHashMap<>();

  /**
   * Creates the structured codec.
   *
   * @param serde the mapper to encode terms with and to introspect state types
   */
  public StructuredStateCodec(Serde serde) {
    this(serde, false, StateTooLargeException.DEFAULT_BUDGET);
  }

  /**
   * Creates a codec.
   *
   * @param serde the mapper
   * @param termOnly store the whole state as one term (the term encoding)
   * @param budget the bytes a write may use
   */
  StructuredStateCodec(Serde serde, boolean termOnly, long budget) {
    this.serde = serde;
    this.termOnly = termOnly;
    this.budget = budget;
  }

  // ---------------------------------------------------------------- the stored form

  private enum Shape {
    TERM,
    ASSIGNS,
    COMPONENTS
  }

  /** A node as stored: its tree, its shape and what the next diff needs. Immutable. */
  private static final class Enc {
    final Shape shape;
    final JsonNode tree;
    final int chunks;
    final Map<String, Enc> fields;
    final List<Item> items;
    // Lazily built id -> position of a list, reused by every diff against this node. A race
    // builds it twice; both results are equal.
    private volatile @Nullable Map<String, Integer> positions;

    private Enc(Shape shape, JsonNode tree, int chunks, Map<String, Enc> fields, List<Item> items) {
      this.shape = shape;
      this.tree = tree;
      this.chunks = chunks;
      this.fields = fields;
      this.items = items;
    }

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

    static Enc term(JsonNode tree, int chunks) {
      return new Enc(Shape.TERM, tree, chunks, Map.of(), List.of());
    }

    /** {@code fields} must iterate in {@link #NAME_ORDER}. */
    static Enc assigns(LinkedHashMap<String, Enc> fields) {
      LinkedHashMap<String, JsonNode> children = new LinkedHashMap<>(capacity(fields.size()));
      for (Map.Entry<String, Enc> e : fields.entrySet()) {
        children.put(e.getKey(), e.getValue().tree);
      }
      return new Enc(
          Shape.ASSIGNS,
          new ObjectNode(JsonNodeFactory.instance, children),
          0,
          Collections.unmodifiableMap(fields),
          List.of());
    }

    /** {@code items} in index order. */
    static Enc components(List<Item> items) {
      List<JsonNode> children = new ArrayList<>(items.size());
      for (Item i : items) {
        children.add(i.value.tree);
      }
      return new Enc(
          Shape.COMPONENTS,
          new ArrayNode(JsonNodeFactory.instance, children),
          0,
          Map.of(),
          List.copyOf(items));
    }
  }

  private record Item(String id, byte[] index, Enc value) {}

  private record Stored(Enc root) implements StoredState {
    @Override
    public JsonNode tree() {
      return root.tree;
    }
  }

  private static int capacity(int size) {
    return size < 3 ? 4 : (int) (size / 0.75f) + 1;
  }

  /**
   * A node's key prefix. Its packed length is known at once (shapes depend on it); the bytes are
   * packed only when a mutation needs them, so walking an unchanged subtree packs no keys.
   */
  static final class Path {
    private final @Nullable Path parent;
    private final String tag;
    private final byte @Nullable [] index;
    private final String name;
    final int length;
    private byte @Nullable [] packed;

    Path(byte[] root) {
      this.parent = null;
      this.tag = "";
      this.index = null;
      this.name = "";
      this.length = root.length;
      this.packed = root;
    }

    Path(Path parent, String tag, byte @Nullable [] index, String name) {
      this.parent = parent;
      this.tag = tag;
      this.index = index;
      this.name = name;
      this.length = childLength(parent.length, tag, index, name);
    }

    static int childLength(int parent, String tag, byte @Nullable [] index, String name) {
      return parent
          + packedLength(tag)
          + (index == null ? 0 : packedLength(index))
          + packedLength(name);
    }

    boolean isRoot() {
      return parent == null;
    }

    byte[] key() {
      byte[] p = packed;
      if (p == null) {
        Path up = Objects.requireNonNull(parent);
        Tuple t = index == null ? Tuple.from(tag, name) : Tuple.from(tag, index, name);
        p = ByteArrayUtil.join(up.key(), t.pack());
        packed = p;
      }
      return p;
    }

    byte[] key(byte[] suffix) {
      return ByteArrayUtil.join(key(), suffix);
    }
  }

  /** The tuple layer's encoded length of a string: type code, UTF-8 with NULs escaped, end. */
  static int packedLength(String s) {
    int n = 2;
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == 0) {
        n += 2;
      } else if (c < 0x80) {
        n += 1;
      } else if (c < 0x800) {
        n += 2;
      } else if (Character.isHighSurrogate(c)
          && i + 1 < s.length()
          && Character.isLowSurrogate(s.charAt(i + 1))) {
        n += 4;
        i++;
      } else {
        n += 3;
      }
    }
    return n;
  }

  /** The tuple layer's encoded length of a byte string: type code, bytes with NULs escaped, end. */
  static int packedLength(byte[] b) {
    int n = 2 + b.length;
    for (byte x : b) {
      if (x == 0) {
        n++;
      }
    }
    return n;
  }

  // ---------------------------------------------------------------- decode

  @Override
  public @Nullable StoredState decode(Subspace space, List<KeyValue> rows) {
    NodeReader root = new NodeReader();
    boolean any = false;
    for (KeyValue kv : rows) {
      Tuple t;
      try {
        t = space.unpack(kv.key());
      } catch (RuntimeException e) {
        throw undecodable(kv.key(), "not a tuple", e);
      }
      if (t.size() == 1 && VERSION.equals(t.get(0))) {
        continue;
      }
      root.add(t, 0, kv);
      any = true;
    }
    return any ? new Stored(root.build(this)) : null;
  }

  private static UndecodableDataException undecodable(
      byte[] key, String why, @Nullable Throwable cause) {
    return new UndecodableDataException(
        "stored state key " + ByteArrayUtil.printable(key) + " is not a state encoding: " + why,
        cause);
  }

  /** Collects the rows of one node, in key order. */
  private static final class NodeReader {
    @Nullable Shape shape;
    final LinkedHashMap<String, NodeReader> fields = new LinkedHashMap<>(); // rows come sorted
    final List<ItemReader> items = new ArrayList<>();
    final List<byte[]> chunks = new ArrayList<>();

    void add(Tuple t, int at, KeyValue kv) {
      if (at >= t.size() || !(t.get(at) instanceof String)) {
        throw undecodable(kv.key(), "expected a shape tag at element " + at, null);
      }
      String tag = t.getString(at);
      if (ASSIGNS.equals(tag)) {
        shape(Shape.ASSIGNS, kv);
        if (at + 1 == t.size()) {
          return;
        }
        if (!(t.get(at + 1) instanceof String)) {
          throw undecodable(kv.key(), "a field name must be a string", null);
        }
        fields.computeIfAbsent(t.getString(at + 1), k -> new NodeReader()).add(t, at + 2, kv);
      } else if (COMPONENTS.equals(tag)) {
        shape(Shape.COMPONENTS, kv);
        if (at + 1 == t.size()) {
          return;
        }
        if (at + 2 >= t.size()
            || !(t.get(at + 1) instanceof byte[])
            || !(t.get(at + 2) instanceof String)) {
          throw undecodable(kv.key(), "an item key needs an index and a string id", null);
        }
        byte[] index = t.getBytes(at + 1);
        String id = t.getString(at + 2);
        ItemReader last = items.isEmpty() ? null : items.get(items.size() - 1);
        if (last == null || !Arrays.equals(last.index, index) || !last.id.equals(id)) {
          last = new ItemReader(index, id);
          items.add(last);
        }
        last.node.add(t, at + 3, kv);
      } else if (TERM.equals(tag)) {
        shape(Shape.TERM, kv);
        if (t.size() != at + 2
            || !(t.get(at + 1) instanceof Long)
            || t.getLong(at + 1) != chunks.size()) {
          throw undecodable(kv.key(), "expected chunk " + chunks.size(), null);
        }
        chunks.add(kv.value());
      } else {
        throw undecodable(kv.key(), "unknown tag '" + tag + "'", null);
      }
    }

    private void shape(Shape s, KeyValue kv) {
      if (shape == null) {
        shape = s;
      } else if (shape != s) {
        throw undecodable(kv.key(), "a node stored both as " + shape + " and " + s, null);
      }
    }

    Enc build(StructuredStateCodec codec) {
      Shape s = shape;
      if (s == Shape.ASSIGNS) {
        LinkedHashMap<String, Enc> out = new LinkedHashMap<>(capacity(fields.size()));
        for (Map.Entry<String, NodeReader> e : fields.entrySet()) {
          out.put(e.getKey(), e.getValue().build(codec));
        }
        return Enc.assigns(out);
      }
      if (s == Shape.COMPONENTS) {
        List<Item> out = new ArrayList<>(items.size());
        for (ItemReader i : items) {
          out.add(new Item(i.id, i.index, i.node.build(codec)));
        }
        return Enc.components(out);
      }
      if (s == Shape.TERM) {
        return Enc.term(codec.serde.readTree(Chunks.join(chunks)), chunks.size());
      }
      throw new IllegalStateException("a node without rows");
    }
  }

  private static final class ItemReader {
    final byte[] index;
    final String id;
    final NodeReader node = new NodeReader();

    ItemReader(byte[] index, String id) {
      this.index = index;
      this.id = id;
    }
  }

  // ---------------------------------------------------------------- write

  @Override
  public StoredState write(
      Transaction tx, Subspace space, @Nullable StoredState old, JsonNode tree) {
    return write(tx, space, old, tree, TermSchema.NONE);
  }

  @Override
  public StoredState write(
      Transaction tx,
      Subspace space,
      @Nullable StoredState old,
      JsonNode tree,
      JavaType stateType) {
    TermSchema schema =
        termOnly
            ? TermSchema.NONE
            : schemas.computeIfAbsent(stateType, t -> TermSchema.of(serde.mapper(), t));
    return write(tx, space, old, tree, schema);
  }

  private StoredState write(
      Transaction tx, Subspace space, @Nullable StoredState old, JsonNode tree, TermSchema schema) {
    Path root = new Path(space.getKey());
    Mutations m = new Mutations(root, space.pack(Tuple.from(VERSION)));
    Enc previous = old instanceof Stored s ? s.root : null;
    Enc written;
    if (previous == null) {
      // Unknown or absent: whatever is stored (in any encoding) goes, except the version key.
      m.clearNode(root);
      written = fresh(m, root, tree, schema);
    } else {
      written = diff(m, root, previous, tree, schema);
    }
    if (previous != null && written == previous) {
      return old;
    }
    m.check(space);
    m.apply(tx);
    return new Stored(written);
  }

  /** Decides a node's shape from the new tree alone. */
  private Shape shape(Path path, JsonNode node, TermSchema schema) {
    if ((termOnly && path.isRoot()) || schema.term()) {
      return Shape.TERM;
    }
    if (node.isObject()) {
      for (String name : node.propertyNames()) {
        if (!fits(path, ASSIGNS, null, name)) {
          return Shape.TERM;
        }
      }
      return Shape.ASSIGNS;
    }
    if (node.isArray()) {
      Set<String> ids = new HashSet<>(capacity(node.size()));
      for (JsonNode item : node) {
        JsonNode id = item.isObject() ? item.get("id") : null;
        if (id == null
            || !id.isString()
            || !ids.add(id.stringValue())
            || !fits(path, COMPONENTS, LONGEST_INDEX, id.stringValue())) {
          return Shape.TERM;
        }
      }
      return Shape.COMPONENTS;
    }
    return Shape.TERM;
  }

  /** Whether a child's key prefix stays within {@link #STRUCTURE_KEY_LIMIT}. */
  private static boolean fits(Path parent, String tag, byte @Nullable [] index, String name) {
    return wellFormed(name)
        && Path.childLength(parent.length, tag, index, name) <= STRUCTURE_KEY_LIMIT;
  }

  /** No unpaired surrogates: the name survives UTF-8, so it can be part of a key. */
  private static boolean wellFormed(String s) {
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (Character.isHighSurrogate(c)) {
        if (i + 1 >= s.length() || !Character.isLowSurrogate(s.charAt(i + 1))) {
          return false;
        }
        i++;
      } else if (Character.isLowSurrogate(c)) {
        return false;
      }
    }
    return true;
  }

  private Enc diff(Mutations m, Path path, Enc old, JsonNode node, TermSchema schema) {
    if (old.tree == node) {
      return old;
    }
    Shape shape = shape(path, node, schema);
    if (shape != old.shape) {
      m.clearNode(path);
      return fresh(m, path, node, schema, shape);
    }
    if (shape == Shape.TERM) {
      return sameTree(old.tree, node) ? old : writeTerm(m, path, node, old.chunks);
    }
    if (shape == Shape.ASSIGNS) {
      return diffAssigns(m, path, old, node, schema);
    }
    return diffComponents(m, path, old, node, schema);
  }

  private Enc diffAssigns(Mutations m, Path path, Enc old, JsonNode node, TermSchema schema) {
    int n = node.size();
    String[] names = new String[n];
    Enc[] after = new Enc[n];
    boolean changed = false;
    int matched = 0;
    int i = 0;
    for (Map.Entry<String, JsonNode> e : node.properties()) {
      String name = e.getKey();
      m.label(path, name);
      Enc before = old.fields.get(name);
      Path child = new Path(path, ASSIGNS, null, name);
      Enc a;
      if (before == null) {
        a = fresh(m, child, e.getValue(), schema.field(name));
      } else {
        matched++;
        a = diff(m, child, before, e.getValue(), schema.field(name));
      }
      changed |= a != before;
      names[i] = name;
      after[i++] = a;
    }
    if (matched < old.fields.size()) {
      for (String name : old.fields.keySet()) {
        if (!node.has(name)) {
          m.label(path, name);
          m.clearNode(new Path(path, ASSIGNS, null, name));
          changed = true;
        }
      }
    }
    if (!changed) {
      return old;
    }
    if (matched == n && n == old.fields.size()) {
      // The same field names: keep the old (sorted) order instead of sorting them again.
      LinkedHashMap<String, Enc> same = new LinkedHashMap<>(old.fields);
      for (int k = 0; k < n; k++) {
        same.put(names[k], after[k]);
      }
      return Enc.assigns(same);
    }
    return Enc.assigns(sorted(names, after));
  }

  private static LinkedHashMap<String, Enc> sorted(String[] names, Enc[] encs) {
    Integer[] order = new Integer[names.length];
    for (int i = 0; i < order.length; i++) {
      order[i] = i;
    }
    Arrays.sort(order, (x, y) -> NAME_ORDER.compare(names[x], names[y]));
    LinkedHashMap<String, Enc> out = new LinkedHashMap<>(capacity(names.length));
    for (int i : order) {
      out.put(names[i], encs[i]);
    }
    return out;
  }

  private Enc diffComponents(Mutations m, Path path, Enc old, JsonNode node, TermSchema schema) {
    int n = node.size();
    Map<String, Integer> oldPosition = old.positions();
    String[] ids = new String[n];
    int[] from = new int[n];
    boolean[] survives = new boolean[old.items.size()];
    for (int i = 0; i < n; i++) {
      ids[i] = node.get(i).get("id").stringValue();
      Integer p = oldPosition.get(ids[i]);
      from[i] = p == null ? -1 : p;
      if (p != null) {
        survives[p] = true;
      }
    }
    boolean[] keep = longestIncreasingRun(from);
    byte[][] index = new byte[n][];
    int lastKept = -1;
    for (int i = 0; i <= n; i++) {
      if (i < n && !keep[i]) {
        continue;
      }
      if (i < n) {
        index[i] = old.items.get(from[i]).index;
      }
      int gap = i - lastKept - 1;
      if (gap > 0) {
        byte[] lo = lastKept < 0 ? null : index[lastKept];
        byte[] hi = i < n ? index[i] : null;
        List<byte[]> fresh;
        try {
          fresh = FractionalIndex.between(lo, hi, gap);
        } catch (IllegalArgumentException notAnIndex) {
          fresh = List.of(); // stored indexes of another writer: renumber the whole list
        }
        for (int j = 0; j < gap; j++) {
          byte[] x = j < fresh.size() ? fresh.get(j) : null;
          if (x == null || x.length > FractionalIndex.MAX_LENGTH) {
            // Rebalance: every item moves to an evenly spaced index, so the list is rewritten.
            m.clearNode(path);
            return fresh(m, path, node, schema, Shape.COMPONENTS);
          }
          index[lastKept + 1 + j] = x;
        }
      }
      lastKept = i;
    }
    boolean changed = n != old.items.size();
    for (int i = 0; i < survives.length; i++) {
      if (!survives[i]) {
        Item gone = old.items.get(i);
        m.label(path, gone.id);
        m.clearNode(new Path(path, COMPONENTS, gone.index, gone.id));
        changed = true;
      }
    }
    TermSchema element = schema.element();
    List<Item> items = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      m.label(path, ids[i]);
      JsonNode value = node.get(i);
      Path child = new Path(path, COMPONENTS, index[i], ids[i]);
      Enc after;
      if (keep[i]) {
        Enc before = old.items.get(from[i]).value;
        after = diff(m, child, before, value, element);
        changed |= after != before;
      } else {
        if (from[i] >= 0) {
          Item moved = old.items.get(from[i]);
          m.clearNode(new Path(path, COMPONENTS, moved.index, moved.id));
        }
        after = fresh(m, child, value, element);
        changed = true;
      }
      items.add(new Item(ids[i], index[i], after));
    }
    return changed ? Enc.components(items) : old;
  }

  /**
   * Marks the members of one longest strictly increasing subsequence of {@code from}, ignoring
   * negative entries (new items): the items that can keep their index.
   */
  static boolean[] longestIncreasingRun(int[] from) {
    int n = from.length;
    int[] tailIndex = new int[n];
    int[] previous = new int[n];
    int length = 0;
    for (int i = 0; i < n; i++) {
      if (from[i] < 0) {
        continue;
      }
      int lo = 0;
      int hi = length;
      while (lo < hi) {
        int mid = (lo + hi) >>> 1;
        if (from[tailIndex[mid]] < from[i]) {
          lo = mid + 1;
        } else {
          hi = mid;
        }
      }
      previous[i] = lo > 0 ? tailIndex[lo - 1] : -1;
      tailIndex[lo] = i;
      if (lo == length) {
        length++;
      }
    }
    boolean[] keep = new boolean[n];
    for (int i = length > 0 ? tailIndex[length - 1] : -1; i >= 0; i = previous[i]) {
      keep[i] = true;
    }
    return keep;
  }

  private Enc fresh(Mutations m, Path path, JsonNode node, TermSchema schema) {
    return fresh(m, path, node, schema, shape(path, node, schema));
  }

  /** Writes a node where nothing is stored. */
  private Enc fresh(Mutations m, Path path, JsonNode node, TermSchema schema, Shape shape) {
    if (shape == Shape.TERM) {
      return writeTerm(m, path, node, 0);
    }
    if (shape == Shape.ASSIGNS) {
      m.set(path.key(ASSIGNS_KEY), EMPTY);
      String[] names = new String[node.size()];
      Enc[] encs = new Enc[node.size()];
      int i = 0;
      for (Map.Entry<String, JsonNode> e : node.properties()) {
        String name = e.getKey();
        m.label(path, name);
        names[i] = name;
        encs[i++] = fresh(m, new Path(path, ASSIGNS, null, name), e.getValue(), schema.field(name));
      }
      return Enc.assigns(sorted(names, encs));
    }
    m.set(path.key(COMPONENTS_KEY), EMPTY);
    List<byte[]> indexes = FractionalIndex.spread(node.size());
    TermSchema element = schema.element();
    List<Item> items = new ArrayList<>(node.size());
    Iterator<byte[]> ix = indexes.iterator();
    for (JsonNode value : node) {
      String id = value.get("id").stringValue();
      byte[] index = ix.next();
      m.label(path, id);
      items.add(
          new Item(id, index, fresh(m, new Path(path, COMPONENTS, index, id), value, element)));
    }
    return Enc.components(items);
  }

  private Enc writeTerm(Mutations m, Path path, JsonNode node, int oldChunks) {
    List<byte[]> parts = Chunks.split(serde.toBytes(node), Chunks.MAX_VALUE);
    byte[] terms = path.key(TERM_KEY);
    for (int i = 0; i < parts.size(); i++) {
      m.set(ByteArrayUtil.join(terms, Tuple.from(i).pack()), parts.get(i));
    }
    if (oldChunks > parts.size()) {
      m.clearRange(ByteArrayUtil.join(terms, Tuple.from(parts.size()).pack()), strinc(terms));
    }
    return Enc.term(node, parts.size());
  }

  /** The end of the range of keys that extend {@code prefix} with a tuple element. */
  private static byte[] strinc(byte[] prefix) {
    return ByteArrayUtil.join(prefix, new byte[] {(byte) 0xFF});
  }

  /**
   * Tree equality as the store sees it: like {@link JsonNode#equals} (field order ignored), except
   * that integers are compared by value, since Smile reads a small {@code long} back as an {@code
   * int}.
   */
  static boolean sameTree(JsonNode a, JsonNode b) {
    if (a == b) {
      return true;
    }
    if (a.isObject()) {
      if (!b.isObject() || a.size() != b.size()) {
        return false;
      }
      for (Map.Entry<String, JsonNode> e : a.properties()) {
        JsonNode other = b.get(e.getKey());
        if (other == null || !sameTree(e.getValue(), other)) {
          return false;
        }
      }
      return true;
    }
    if (a.isArray()) {
      if (!b.isArray() || a.size() != b.size()) {
        return false;
      }
      for (int i = 0; i < a.size(); i++) {
        if (!sameTree(a.get(i), b.get(i))) {
          return false;
        }
      }
      return true;
    }
    if (isMachineInteger(a) && isMachineInteger(b)) {
      return a.longValue() == b.longValue();
    }
    return a.equals(b);
  }

  private static boolean isMachineInteger(JsonNode n) {
    return n.isInt() || n.isLong() || n.isShort();
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

  // ---------------------------------------------------------------- mutations

  /**
   * The mutations of one write, held back until the whole diff is known so that a write that is too
   * large changes nothing.
   */
  private final class Mutations {
    final Path root;
    final byte[] versionKey;
    final List<Op> ops = new ArrayList<>();
    final Map<String, Long> costByPart = new HashMap<>();
    long cost;
    byte[] longest = EMPTY;
    String part = "(state)";

    Mutations(Path root, byte[] versionKey) {
      this.root = root;
      this.versionKey = versionKey;
    }

    /** Attributes the following mutations to a top-level field or item, for error messages. */
    void label(Path path, String name) {
      if (path == root) {
        part = name;
      }
    }

    // FoundationDB counts a set as its key and value plus the write-conflict range
    // [key, key + 0x00); a range clear as its bounds, twice.
    void set(byte[] key, byte[] value) {
      ops.add(new Op(key, value, false));
      account(3L * key.length + 1 + value.length);
      if (key.length > longest.length) {
        longest = key;
      }
    }

    void clearRange(byte[] begin, byte[] end) {
      ops.add(new Op(begin, end, true));
      account(2L * (begin.length + end.length));
    }

    /** Clears a node's keys; at the root, everything but the version key. */
    void clearNode(Path path) {
      byte[] prefix = path.key();
      if (path.isRoot()) {
        clearRange(ByteArrayUtil.join(prefix, new byte[] {0}), versionKey);
        clearRange(ByteArrayUtil.join(versionKey, new byte[] {0}), strinc(prefix));
      } else {
        clearRange(ByteArrayUtil.join(prefix, new byte[] {0}), strinc(prefix));
      }
    }

    private void account(long bytes) {
      cost += bytes;
      costByPart.merge(part, bytes, Long::sum);
    }

    void check(Subspace space) {
      if (longest.length > MAX_KEY) {
        throw new StateTooLargeException(
            "state key of "
                + longest.length
                + " bytes exceeds FoundationDB's "
                + MAX_KEY
                + "-byte key limit: key="
                + ByteArrayUtil.printable(Arrays.copyOf(longest, 100))
                + "... state subspace="
                + ByteArrayUtil.printable(space.getKey())
                + "; nothing was written",
            longest.length,
            MAX_KEY);
      }
      if (cost > budget) {
        Map.Entry<String, Long> top =
            Collections.max(costByPart.entrySet(), Map.Entry.comparingByValue());
        throw new StateTooLargeException(
            "state write of "
                + cost
                + " bytes exceeds the "
                + budget
                + "-byte budget for state in one transaction (FoundationDB allows 10000000;"
                + " the rest is headroom for queue items, replies and conflict ranges):"
                + " largest part="
                + quote(top.getKey())
                + " bytes="
                + top.getValue()
                + " state subspace="
                + ByteArrayUtil.printable(space.getKey())
                + "; nothing was written. Keep bulky data out of the state, or split it into"
                + " fields and items that change separately",
            cost,
            budget);
      }
    }

    void apply(Transaction tx) {
      for (Op op : ops) {
        if (op.clear) {
          tx.clearRange(op.a, op.b);
        } else {
          tx.set(op.a, op.b);
        }
      }
    }
  }

  /** A set of key {@code a} to value {@code b}, or a clear of the range {@code [a, b)}. */
  private record Op(byte[] a, byte[] b, boolean clear) {}

  private static String quote(String s) {
    return s.length() <= 80 ? "\"" + s + "\"" : "\"" + s.substring(0, 40) + "...\"";
  }
}
