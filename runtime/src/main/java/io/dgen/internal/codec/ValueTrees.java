package io.dgen.internal.codec;

import java.util.LinkedHashMap;
import org.jspecify.annotations.Nullable;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.JsonNodeFactory;
import tools.jackson.databind.node.ObjectNode;

/**
 * Walks of a whole value along its plans: the tree Jackson would write for it, whether it writes a
 * given tree, whether it is deeply immutable. A walk also notes whether everything it met was
 * immutable ({@link #frozen}), so that one walk answers both.
 */
final class ValueTrees {

  /** A walk met a value it cannot read faithfully: the write serializes the whole state instead. */
  static final class Unwalkable extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private Unwalkable() {
      super("not walkable", null, false, false);
    }
  }

  static final Unwalkable UNWALKABLE = new Unwalkable();

  /** Deeper than this, a walk gives up (a cycle, or a state Jackson would refuse to write). */
  static final int MAX_DEPTH = 500;

  /** Whether every value walked so far was deeply immutable. */
  boolean frozen = true;

  /** The tree of {@code value}. */
  static JsonNode tree(@Nullable Object value, Plan plan) {
    return new ValueTrees().build(value, plan, 0);
  }

  /** Whether {@code value} (of plan {@code plan}) is deeply immutable. */
  static boolean isFrozen(@Nullable Object value, Plan plan) {
    try {
      return new ValueTrees().frozen(value, plan, 0);
    } catch (Unwalkable e) {
      return false;
    }
  }

  /** A fresh tree of {@code value}: never one of the value's own nodes if it holds a tree. */
  JsonNode build(@Nullable Object value, Plan plan, int depth) {
    check(plan, depth);
    frozen &= plan.immutable;
    switch (plan.kind) {
      case OBJECT:
        LinkedHashMap<String, JsonNode> fields = new LinkedHashMap<>();
        plan.properties(
            value,
            (name, v, slot) -> {
              fields.put(name, build(v, slot.plan(v), depth + 1));
              return true;
            });
        return new ObjectNode(JsonNodeFactory.instance, fields);
      case ARRAY:
        Object[] elements = plan.elements(value);
        ArrayNode array = new ArrayNode(JsonNodeFactory.instance, elements.length);
        Slot slot = plan.elementSlot();
        for (Object e : elements) {
          array.add(build(e, slot.plan(e), depth + 1));
        }
        return array;
      default:
        return plan.tree(value);
    }
  }

  /** Whether {@code value} writes {@code node}. */
  boolean same(@Nullable Object value, Plan plan, JsonNode node, int depth) {
    check(plan, depth);
    frozen &= plan.immutable;
    switch (plan.kind) {
      case OBJECT:
        if (!node.isObject()) {
          return false;
        }
        int[] count = {0};
        boolean[] same = {true};
        plan.properties(
            value,
            (name, v, slot) -> {
              JsonNode child = node.get(name);
              same[0] = child != null && same(v, slot.plan(v), child, depth + 1);
              count[0]++;
              return same[0];
            });
        return same[0] && count[0] == node.size();
      case ARRAY:
        Object[] elements = plan.elements(value);
        if (!node.isArray() || node.size() != elements.length) {
          return false;
        }
        Slot slot = plan.elementSlot();
        for (int i = 0; i < elements.length; i++) {
          if (!same(elements[i], slot.plan(elements[i]), node.get(i), depth + 1)) {
            return false;
          }
        }
        return true;
      default:
        return plan.same(value, node);
    }
  }

  /** Whether {@code value} is deeply immutable; stops at the first part that is not. */
  boolean frozen(@Nullable Object value, Plan plan, int depth) {
    check(plan, depth);
    if (!plan.immutable) {
      return false;
    }
    switch (plan.kind) {
      case OBJECT:
        boolean[] all = {true};
        plan.properties(
            value,
            (name, v, slot) -> {
              all[0] = frozen(v, slot.plan(v), depth + 1);
              return all[0];
            });
        return all[0];
      case ARRAY:
        Slot slot = plan.elementSlot();
        for (Object e : plan.elements(value)) {
          if (!frozen(e, slot.plan(e), depth + 1)) {
            return false;
          }
        }
        return true;
      default:
        return true;
    }
  }

  private static void check(Plan plan, int depth) {
    if (plan == Plans.UNWALKABLE || depth > MAX_DEPTH) {
      throw UNWALKABLE;
    }
  }
}
