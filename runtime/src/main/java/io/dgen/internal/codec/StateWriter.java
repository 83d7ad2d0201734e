package io.dgen.internal.codec;

import com.apple.foundationdb.tuple.ByteArrayUtil;
import com.apple.foundationdb.tuple.Tuple;
import io.dgen.internal.codec.StoredNode.Shape;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import org.jspecify.annotations.Nullable;
import tools.jackson.databind.JsonNode;

/**
 * One state write: walks the new value along the stored nodes and records the mutations that turn
 * the one into the other (or, for a fresh write, that store the value where nothing is). Used once,
 * by one thread.
 *
 * <p>A value that is the very instance the stored node was written from, when that instance is
 * deeply immutable ({@code before}), is unchanged without looking at it: this is what makes the
 * cost of a write grow with what changed. Anything else is compared with what is stored, so an
 * object changed in place is never mistaken for an unchanged one.
 */
final class StateWriter {

  /** Stands for "no deeply immutable value is known to have written this node". */
  static final Object NONE = new Object();

  static final byte[] EMPTY = new byte[0];

  final Mutations mutations;
  private final Serde serde;
  private final boolean termRoot;

  /** Whether the value of the node last written or diffed is deeply immutable. */
  boolean frozen;

  /**
   * @param termRoot store the root as one term, whatever its shape (the term encoding, or a state
   *     the structured codec writes whole)
   */
  StateWriter(Mutations mutations, Serde serde, boolean termRoot) {
    this.mutations = mutations;
    this.serde = serde;
    this.termRoot = termRoot;
  }

  /** Thrown when a new field name would not fit in a key: the object becomes a term. */
  private static final class Reshape extends RuntimeException {
    private static final long serialVersionUID = 1L;

    Reshape() {
      super("reshape", null, false, false);
    }
  }

  private static final Reshape RESHAPE = new Reshape();

  // ---------------------------------------------------------------- diff

  /**
   * Writes what changed between {@code old} and {@code value}.
   *
   * @param before the deeply immutable value {@code old} was written from, or {@link #NONE}
   * @return {@code old} itself if nothing changed
   */
  StoredNode diff(
      KeyPath path,
      StoredNode old,
      @Nullable Object before,
      @Nullable Object value,
      Slot slot,
      TermSchema schema,
      int depth) {
    if (before != NONE && value == before) {
      frozen = true;
      return old;
    }
    Plan plan = slot.plan(value);
    if (plan.kind == Plan.Kind.FOREIGN) {
      checkWalkable(plan, depth);
      value = plan.tree(value);
      plan = Plan.TreePlan.of((JsonNode) value);
      before = NONE;
    }
    ListView list = plan.kind == Plan.Kind.ARRAY ? new ListView(value, plan, path) : null;
    Shape shape = shape(path, plan, schema, list);
    if (shape != old.shape) {
      mutations.clearNode(path);
      return fresh(path, value, plan, schema, shape, list, depth);
    }
    if (shape == Shape.TERM) {
      ValueTrees walk = new ValueTrees();
      if (walk.same(value, plan, old.tree(), depth)) {
        frozen = walk.frozen;
        return old;
      }
      return writeTerm(path, value, plan, old.chunks, depth);
    }
    if (shape == Shape.COMPONENTS) {
      Plan bp = before == NONE ? null : slot.plan(before);
      Object[] beforeElements =
          bp != null && bp.kind == Plan.Kind.ARRAY
              ? bp.elements(Objects.requireNonNull(before))
              : null;
      return ListDiff.diff(
          this, path, old, beforeElements, Objects.requireNonNull(list), plan, schema, depth);
    }
    int mark = mutations.mark();
    try {
      return diffAssigns(path, old, before, value, plan, slot, schema, depth);
    } catch (Reshape r) {
      mutations.rollback(mark);
      mutations.clearNode(path);
      return writeTerm(path, value, plan, 0, depth);
    }
  }

  private StoredNode diffAssigns(
      KeyPath path,
      StoredNode old,
      @Nullable Object before,
      @Nullable Object value,
      Plan plan,
      Slot slot,
      TermSchema schema,
      int depth) {
    Plan beforePlan = before == NONE ? null : slot.plan(before);
    AssignsDiff d =
        new AssignsDiff(
            path,
            old,
            beforePlan != null && beforePlan.kind == Plan.Kind.OBJECT
                ? new Before(beforePlan, Objects.requireNonNull(before), plan, value)
                : null,
            plan.immutable,
            schema,
            depth);
    plan.properties(value, d);
    StoredNode.Names names = old.names;
    StoredNode[] children = d.after == null ? old.children : d.after;
    boolean[] gone = null;
    if (d.matched < names.sorted.length) {
      gone = new boolean[names.sorted.length];
      for (int i = 0; i < gone.length; i++) {
        String name = names.sorted[i];
        if (plan.property(value, name) == Plan.ABSENT) {
          mutations.label(path, name);
          mutations.clearNode(path.field(name));
          gone[i] = true;
        }
      }
    }
    if (d.added.isEmpty() && gone == null) {
      frozen = d.all;
      StoredNode now = d.after == null ? old : StoredNode.assigns(names, children);
      d.learned(now);
      return now;
    }
    List<Fresh> fields = new ArrayList<>(names.sorted.length + d.added.size());
    for (int i = 0; i < names.sorted.length; i++) {
      if (gone == null || !gone[i]) {
        fields.add(new Fresh(names.sorted[i], children[i]));
      }
    }
    boolean all = d.all;
    for (Fresh f : d.added) {
      mutations.label(path, f.name);
      f.node = fresh(path.field(f.name), f.value, f.slot, schema.field(f.name), depth + 1);
      all &= frozen;
      fields.add(f);
    }
    frozen = all;
    return assigns(fields);
  }

  /** Diffs the properties of an object against the fields of its stored node, one by one. */
  private final class AssignsDiff implements Plan.Visitor {
    final KeyPath path;
    final StoredNode old;
    final @Nullable Before before;
    final TermSchema schema;
    final int depth;
    final List<Fresh> added = new ArrayList<>(0);
    final StoredNode.@Nullable Walked hints;
    final @Nullable Object @Nullable [] known;
    final int @Nullable [] order;
    final @Nullable Object @Nullable [] sources;
    StoredNode @Nullable [] after;
    boolean all;
    int matched;
    int visited;

    AssignsDiff(
        KeyPath path,
        StoredNode old,
        @Nullable Before before,
        boolean immutable,
        TermSchema schema,
        int depth) {
      this.path = path;
      this.old = old;
      this.before = before;
      this.all = immutable;
      this.schema = schema;
      this.depth = depth;
      this.hints = old.walked();
      this.known = hints == null ? null : hints.sources();
      // An object diffed against the immutable one it was written from is passed over by
      // identity, field by field: nothing to learn. Any other is learned for the next diff.
      int n = old.names.sorted.length;
      this.order = before == null ? new int[n] : null;
      this.sources = before == null ? new Object[n] : null;
    }

    @Override
    public boolean property(String name, @Nullable Object v, Slot slot) {
      Object b = before == null ? Plan.ABSENT : before.get(name);
      if (b != Plan.ABSENT && v == b) {
        matched++; // the same immutable value: unchanged, and known to be stored
        visited++;
        return true;
      }
      int at = find(name);
      visited++;
      if (at < 0) {
        if (!path.fitsField(name)) {
          throw RESHAPE;
        }
        added.add(new Fresh(name, v, slot));
        return true;
      }
      matched++;
      if (order != null && visited <= order.length) {
        order[visited - 1] = at;
      }
      if (v != null && known != null && known[at] == v) {
        sources[at] = v; // the deeply immutable value that wrote this field
        return true;
      }
      StoredNode was = old.children[at];
      if (was.shape == Shape.TERM) {
        Plan p = slot.plan(v);
        if (p.kind == Plan.Kind.SCALAR && p.same(v, was.tree())) {
          all &= p.immutable; // an unchanged scalar, compared without a walk
          if (p.immutable && sources != null) {
            sources[at] = v;
          }
          return true;
        }
      }
      mutations.label(path, name);
      StoredNode now =
          diff(
              path.field(name),
              was,
              b == Plan.ABSENT ? NONE : b,
              v,
              slot,
              schema.field(name),
              depth + 1);
      all &= frozen;
      if (frozen && sources != null) {
        sources[at] = v;
      }
      if (now != was) {
        if (after == null) {
          after = old.children.clone();
        }
        after[at] = now;
      }
      return true;
    }

    /** The position of field {@code name} in the stored node, or -1: first where it was last. */
    private int find(String name) {
      int[] last = hints == null ? null : hints.order();
      if (last != null && visited < last.length) {
        int at = last[visited];
        if (at >= 0 && name.equals(old.names.sorted[at])) {
          return at;
        }
      }
      return old.names.indexOf(name);
    }

    /**
     * What this diff learned, for the node it leaves ({@code node}): only when it met every field
     * exactly once, in an object not compared by identity with an immutable one.
     */
    void learned(StoredNode node) {
      if (order != null
          && sources != null
          && visited == old.names.sorted.length
          && added.isEmpty()) {
        node.walked(new StoredNode.Walked(order, sources));
      }
    }
  }

  /**
   * The properties of the immutable object a node was written from, by name. Two maps are walked
   * side by side: a map copied from another iterates its entries in the same order, so most entries
   * are found without a lookup.
   */
  private static final class Before {
    private final Plan plan;
    private final Object value;
    private final @Nullable Iterator<? extends Map.Entry<?, ?>> zip;

    Before(Plan plan, Object value, Plan next, @Nullable Object nextValue) {
      this.plan = plan;
      this.value = value;
      this.zip =
          value instanceof Map<?, ?> m && next instanceof Plan.MapPlan && nextValue instanceof Map
              ? m.entrySet().iterator()
              : null;
    }

    /** The value of property {@code name}, or {@link Plan#ABSENT}. */
    @Nullable Object get(String name) {
      if (zip != null && zip.hasNext()) {
        Map.Entry<?, ?> e = zip.next();
        if (e.getKey() == name) {
          return e.getValue();
        }
      }
      return plan.property(value, name);
    }
  }

  // ---------------------------------------------------------------- fresh

  /** Writes {@code value} where nothing is stored. */
  StoredNode fresh(KeyPath path, @Nullable Object value, Slot slot, TermSchema schema, int depth) {
    Plan plan = slot.plan(value);
    if (plan.kind == Plan.Kind.FOREIGN) {
      checkWalkable(plan, depth);
      value = plan.tree(value);
      plan = Plan.TreePlan.of((JsonNode) value);
    }
    ListView list = plan.kind == Plan.Kind.ARRAY ? new ListView(value, plan, path) : null;
    return fresh(path, value, plan, schema, shape(path, plan, schema, list), list, depth);
  }

  private StoredNode fresh(
      KeyPath path,
      @Nullable Object value,
      Plan plan,
      TermSchema schema,
      Shape shape,
      @Nullable ListView list,
      int depth) {
    checkWalkable(plan, depth);
    if (shape == Shape.COMPONENTS) {
      return ListDiff.fresh(this, path, Objects.requireNonNull(list), plan, schema, depth);
    }
    if (shape == Shape.ASSIGNS) {
      List<Fresh> fields = new ArrayList<>();
      boolean[] fit = {true};
      plan.properties(
          value,
          (name, v, slot) -> {
            fields.add(new Fresh(name, v, slot));
            fit[0] = path.fitsField(name);
            return fit[0];
          });
      if (!fit[0]) {
        return writeTerm(path, value, plan, 0, depth);
      }
      mutations.set(path.key(StoredNode.ASSIGNS_KEY), EMPTY);
      boolean all = plan.immutable;
      for (Fresh f : fields) {
        mutations.label(path, f.name);
        f.node = fresh(path.field(f.name), f.value, f.slot, schema.field(f.name), depth + 1);
        all &= frozen;
      }
      frozen = all;
      return assigns(fields);
    }
    return writeTerm(path, value, plan, 0, depth);
  }

  /** A field: its name and value to write, or its name and stored node. */
  private static final class Fresh {
    final String name;
    final @Nullable Object value;
    final @Nullable Slot slot;
    @Nullable StoredNode node;

    Fresh(String name, @Nullable Object value, Slot slot) {
      this.name = name;
      this.value = value;
      this.slot = slot;
    }

    Fresh(String name, StoredNode node) {
      this.name = name;
      this.value = null;
      this.slot = null;
      this.node = node;
    }
  }

  private static StoredNode assigns(List<Fresh> fields) {
    fields.sort((a, b) -> StoredNode.NAME_ORDER.compare(a.name, b.name));
    String[] names = new String[fields.size()];
    StoredNode[] children = new StoredNode[fields.size()];
    for (int i = 0; i < names.length; i++) {
      names[i] = fields.get(i).name;
      children[i] = Objects.requireNonNull(fields.get(i).node);
    }
    return StoredNode.assigns(new StoredNode.Names(names), children);
  }

  StoredNode writeTerm(KeyPath path, @Nullable Object value, Plan plan, int oldChunks, int depth) {
    ValueTrees walk = new ValueTrees();
    JsonNode tree = walk.build(value, plan, depth);
    frozen = walk.frozen;
    List<byte[]> parts = Chunks.split(serde.toBytes(tree), Chunks.MAX_VALUE);
    byte[] terms = path.key(StoredNode.TERM_KEY);
    for (int i = 0; i < parts.size(); i++) {
      mutations.set(ByteArrayUtil.join(terms, Tuple.from(i).pack()), parts.get(i));
    }
    if (oldChunks > parts.size()) {
      mutations.clearRange(
          ByteArrayUtil.join(terms, Tuple.from(parts.size()).pack()), KeyPath.strinc(terms));
    }
    return StoredNode.term(tree, parts.size());
  }

  // ---------------------------------------------------------------- shapes

  /**
   * Decides a node's shape from the new value alone. An object's field names are checked against
   * the key limit where it is written (they are many; most are known to fit already).
   */
  private Shape shape(KeyPath path, Plan plan, TermSchema schema, @Nullable ListView list) {
    if ((termRoot && path.isRoot()) || schema.term()) {
      return Shape.TERM;
    }
    if (plan.kind == Plan.Kind.OBJECT) {
      return Shape.ASSIGNS;
    }
    return list != null && list.ids != null ? Shape.COMPONENTS : Shape.TERM;
  }

  private static void checkWalkable(Plan plan, int depth) {
    if (plan == Plans.UNWALKABLE || depth > ValueTrees.MAX_DEPTH) {
      throw ValueTrees.UNWALKABLE;
    }
  }

  /**
   * A list's elements and, if it is a list of components (every element an object with a unique
   * string {@code id} that fits in a key), their ids.
   */
  static final class ListView {
    final @Nullable Object[] elements;
    final String @Nullable [] ids;

    ListView(@Nullable Object value, Plan plan, KeyPath path) {
      this.elements = plan.elements(Objects.requireNonNull(value));
      Slot slot = plan.elementSlot();
      String[] found = new String[elements.length];
      Set<String> seen = new HashSet<>(StoredNode.capacity(elements.length));
      boolean components = true;
      for (int i = 0; i < elements.length; i++) {
        Plan p = slot.plan(elements[i]);
        if (p.kind == Plan.Kind.FOREIGN) {
          checkWalkable(p, 0);
          elements[i] = p.tree(elements[i]);
          p = Plan.TreePlan.of((JsonNode) elements[i]);
        }
        if (components) {
          String id = null;
          if (p.kind == Plan.Kind.OBJECT) {
            Object v = p.property(elements[i], "id");
            id = v == Plan.ABSENT ? null : p.slot("id").plan(v).string(v);
          }
          components = id != null && seen.add(id) && path.fitsItem(id);
          found[i] = id;
        }
      }
      this.ids = components ? found : null;
    }
  }
}
