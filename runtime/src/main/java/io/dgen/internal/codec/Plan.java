package io.dgen.internal.codec;

import java.util.Collection;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.introspect.AnnotatedMember;
import tools.jackson.databind.node.JsonNodeFactory;
import tools.jackson.databind.ser.BeanPropertyWriter;

/**
 * How the structured codec walks a value of one class in one place of a state, so that it reads
 * exactly the tree Jackson would write: as an object (a record or POJO, a {@code Map} with string
 * keys, an {@code ObjectNode}), a list (a {@code Collection}, an {@code ArrayNode}), a scalar, or —
 * for anything it cannot walk faithfully — a foreign value that Jackson serializes to a tree first.
 * Built by {@link Plans}, which decides which classes qualify; immutable once built.
 */
abstract class Plan {

  /** What a value of this plan serializes to. */
  enum Kind {
    OBJECT,
    ARRAY,
    SCALAR,
    FOREIGN
  }

  /** What an object's property visitor is told; it returns false to stop the visit. */
  interface Visitor {
    boolean property(String name, @Nullable Object value, Slot slot);
  }

  /** Returned by {@link #property} for a property that is not written. */
  static final Object ABSENT = new Object();

  final Kind kind;

  /**
   * Whether a value of this plan is deeply immutable once its children are: a record, a collection
   * of a class known to be unmodifiable, an immutable JDK value. See {@link Plans} for the rule.
   */
  final boolean immutable;

  Plan(Kind kind, boolean immutable) {
    this.kind = kind;
    this.immutable = immutable;
  }

  /** Visits the properties Jackson writes, in Jackson's order. */
  void properties(Object value, Visitor visitor) {
    throw new UnsupportedOperationException(kind.name());
  }

  /** The value of property {@code name}, or {@link #ABSENT} if it is not written. */
  @Nullable Object property(Object value, String name) {
    throw new UnsupportedOperationException(kind.name());
  }

  /** Where property {@code name} of an object is. */
  Slot slot(String name) {
    throw new UnsupportedOperationException(kind.name());
  }

  /** The string a scalar writes, or null if it writes anything else. */
  @Nullable String string(@Nullable Object value) {
    if (kind == Kind.OBJECT || kind == Kind.ARRAY) {
      return null;
    }
    if (this == Plans.UNWALKABLE) {
      throw ValueTrees.UNWALKABLE;
    }
    JsonNode t = tree(value);
    return t.isString() ? t.stringValue() : null;
  }

  /** The elements of a list, in order. */
  @Nullable Object[] elements(Object value) {
    throw new UnsupportedOperationException(kind.name());
  }

  /** Where a list's elements are. */
  Slot elementSlot() {
    throw new UnsupportedOperationException(kind.name());
  }

  /** A scalar's tree, or a foreign value's tree as Jackson writes it. */
  JsonNode tree(@Nullable Object value) {
    throw new UnsupportedOperationException(kind.name());
  }

  /** Whether a scalar writes {@code node} (integers compare by value, like {@link Trees}). */
  boolean same(@Nullable Object value, JsonNode node) {
    return Trees.same(tree(value), node);
  }

  // ---------------------------------------------------------------- objects

  /** A record or POJO written by Jackson's plain bean serializer. */
  static final class Bean extends Plan {
    private final BeanPropertyWriter[] writers; // Jackson's order
    private final AnnotatedMember[] members;
    private final Slot[] slots;
    private final String[] names;
    private final Map<String, Integer> index = new HashMap<>();

    Bean(boolean record, BeanPropertyWriter[] writers, Slot[] slots) {
      super(Kind.OBJECT, record);
      this.writers = writers;
      this.slots = slots;
      this.names = new String[writers.length];
      this.members = new AnnotatedMember[writers.length];
      for (int i = 0; i < writers.length; i++) {
        members[i] = writers[i].getMember();
        names[i] = writers[i].getName();
        index.put(names[i], i);
      }
    }

    @Override
    void properties(Object value, Visitor visitor) {
      for (int i = 0; i < writers.length; i++) {
        Object v = get(i, value);
        if (v != ABSENT && !visitor.property(names[i], v, slots[i])) {
          return;
        }
      }
    }

    @Override
    @Nullable Object property(Object value, String name) {
      Integer i = index.get(name);
      return i == null ? ABSENT : get(i, value);
    }

    @Override
    Slot slot(String name) {
      Integer i = index.get(name);
      return i == null ? Slot.TREE : slots[i];
    }

    private @Nullable Object get(int i, Object bean) {
      // The member's own reflection: a property writer's method handle is not a constant, so
      // invoking it is slow.
      Object v = members[i].getValue(bean);
      // Plain writers write a null as null unless nulls are suppressed (NON_NULL).
      return v == null && !writers[i].hasNullSerializer() ? ABSENT : v;
    }
  }

  /**
   * A {@code Map} written by a plain {@code MapSerializer}; its slot checks the keys are strings.
   */
  static final class MapPlan extends Plan {
    private final Slot values;

    MapPlan(boolean immutable, Slot values) {
      super(Kind.OBJECT, immutable);
      this.values = values;
    }

    @Override
    void properties(Object value, Visitor visitor) {
      for (Map.Entry<?, ?> e : ((Map<?, ?>) value).entrySet()) {
        if (!(e.getKey() instanceof String name)) {
          throw ValueTrees.UNWALKABLE; // in a map declared with String keys, by an unchecked cast
        }
        if (!visitor.property(name, e.getValue(), values)) {
          return;
        }
      }
    }

    @Override
    @Nullable Object property(Object value, String name) {
      Map<?, ?> map = (Map<?, ?>) value;
      Object v = map.get(name);
      return v != null || map.containsKey(name) ? v : ABSENT;
    }

    @Override
    Slot slot(String name) {
      return values;
    }
  }

  // ---------------------------------------------------------------- lists

  /** A {@code Collection} written by a plain collection serializer. */
  static final class ListPlan extends Plan {
    private final Slot elements;

    ListPlan(boolean immutable, Slot elements) {
      super(Kind.ARRAY, immutable);
      this.elements = elements;
    }

    @Override
    @Nullable Object[] elements(Object value) {
      if (value instanceof List<?> list && list instanceof java.util.RandomAccess) {
        return list.toArray();
      }
      Collection<?> c = (Collection<?>) value;
      Object[] out = new Object[c.size()];
      Iterator<?> it = c.iterator();
      for (int i = 0; i < out.length; i++) {
        out[i] = it.next();
      }
      return out;
    }

    @Override
    Slot elementSlot() {
      return elements;
    }
  }

  // ---------------------------------------------------------------- trees

  /** A {@code JsonNode} inside a state, or a tree the codec was handed. Never immutable. */
  static final class TreePlan extends Plan {

    private TreePlan(Kind kind) {
      super(kind, false);
    }

    static final TreePlan OBJECT = new TreePlan(Kind.OBJECT);
    static final TreePlan ARRAY = new TreePlan(Kind.ARRAY);
    static final TreePlan SCALAR = new TreePlan(Kind.SCALAR);

    static TreePlan of(JsonNode node) {
      return node.isObject() ? OBJECT : node.isArray() ? ARRAY : SCALAR;
    }

    @Override
    void properties(Object value, Visitor visitor) {
      for (Map.Entry<String, JsonNode> e : ((JsonNode) value).properties()) {
        if (!visitor.property(e.getKey(), e.getValue(), Slot.TREE)) {
          return;
        }
      }
    }

    @Override
    @Nullable Object property(Object value, String name) {
      JsonNode v = ((JsonNode) value).get(name);
      return v == null ? ABSENT : v;
    }

    @Override
    Slot slot(String name) {
      return Slot.TREE;
    }

    @Override
    @Nullable Object[] elements(Object value) {
      JsonNode node = (JsonNode) value;
      Object[] out = new Object[node.size()];
      for (int i = 0; i < out.length; i++) {
        out[i] = node.get(i);
      }
      return out;
    }

    @Override
    Slot elementSlot() {
      return Slot.TREE;
    }

    @Override
    JsonNode tree(@Nullable Object value) {
      return (JsonNode) java.util.Objects.requireNonNull(value);
    }
  }

  // ---------------------------------------------------------------- leaves

  /** A JDK value, written by Jackson alone (strings, ints, longs, booleans directly). */
  static class Leaf extends Plan {
    private final @Nullable Plans plans;

    Leaf(boolean immutable, @Nullable Plans plans) {
      super(Kind.SCALAR, immutable);
      this.plans = plans;
    }

    @Override
    JsonNode tree(@Nullable Object value) {
      JsonNodeFactory f = JsonNodeFactory.instance;
      if (value == null) {
        return f.nullNode();
      }
      Plans p = Objects.requireNonNull(plans);
      if (p.plainScalars) {
        if (value instanceof String s) {
          return f.stringNode(s);
        } else if (value instanceof Integer i) {
          return f.numberNode(i);
        } else if (value instanceof Long l) {
          return f.numberNode(l);
        } else if (value instanceof Boolean b) {
          return f.booleanNode(b);
        }
      }
      return p.serialize(value);
    }

    @Override
    @Nullable String string(@Nullable Object value) {
      return value instanceof String s && plans != null && plans.plainScalars
          ? s
          : super.string(value);
    }

    @Override
    boolean same(@Nullable Object value, JsonNode node) {
      if (value == null) {
        return node.isNull();
      }
      if (Objects.requireNonNull(plans).plainScalars) {
        if (value instanceof String s) {
          return node.isString() && node.stringValue().equals(s);
        } else if (value instanceof Integer || value instanceof Long) {
          return Trees.isMachineInteger(node) && node.longValue() == ((Number) value).longValue();
        } else if (value instanceof Boolean b) {
          return node.isBoolean() && node.booleanValue() == b;
        }
      }
      return Trees.same(tree(value), node);
    }
  }

  /** A value Jackson serializes to a tree, which is then diffed. Never immutable. */
  static final class Foreign extends Plan {
    private final Plans plans;

    Foreign(Plans plans) {
      super(Kind.FOREIGN, false);
      this.plans = plans;
    }

    @Override
    JsonNode tree(@Nullable Object value) {
      return plans.serialize(value);
    }
  }
}
