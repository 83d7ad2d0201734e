package io.dgen.internal.codec;

import java.util.Map;
import org.jspecify.annotations.Nullable;
import tools.jackson.databind.JavaType;
import tools.jackson.databind.JsonNode;

/**
 * A place in a state where values of one declared type go — the state itself, a property, a map's
 * values, a list's elements — with the plan of the class last seen there, so that walking a
 * thousand values of one class looks the plan up once.
 */
final class Slot {

  /** The children of a {@code JsonNode}: always trees. */
  static final Slot TREE = new Slot(null, null, false);

  private record Last(Class<?> type, Plan plan) {}

  private final @Nullable Plans plans;
  private final @Nullable JavaType declared;
  private final boolean root;
  // Declared with String keys: a map found here is not searched for other keys (a key that is
  // not a String all the same, put there through an unchecked cast, makes the walk give up).
  private final boolean stringKeysDeclared;
  private volatile @Nullable Last last;

  Slot(@Nullable Plans plans, @Nullable JavaType declared, boolean root) {
    this.plans = plans;
    this.declared = declared;
    this.root = root;
    JavaType keys = declared == null ? null : declared.getKeyType();
    this.stringKeysDeclared = keys != null && keys.getRawClass() == String.class;
  }

  /** The plan of {@code value} here. */
  Plan plan(@Nullable Object value) {
    if (value == null) {
      return Plans.NULL;
    }
    if (plans == null || declared == null) {
      return Plan.TreePlan.of((JsonNode) value);
    }
    Class<?> type = value.getClass();
    Last l = last;
    Plan p;
    if (l != null && l.type == type) {
      p = l.plan;
    } else {
      p = plans.plan(declared, value, root);
      last = new Last(type, p);
    }
    return p instanceof Plan.MapPlan && !stringKeysDeclared && !stringKeys((Map<?, ?>) value)
        ? plans.foreign(root)
        : p;
  }

  private static boolean stringKeys(Map<?, ?> map) {
    for (Object k : map.keySet()) {
      if (!(k instanceof String)) {
        return false;
      }
    }
    return true;
  }
}
