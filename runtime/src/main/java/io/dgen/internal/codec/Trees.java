package io.dgen.internal.codec;

import java.util.Map;
import org.jspecify.annotations.Nullable;
import tools.jackson.databind.JsonNode;

/** Tree equality as the store sees it. */
final class Trees {

  private Trees() {}

  /**
   * Like {@link JsonNode#equals} (field order ignored), except that integers are compared by value,
   * since Smile reads a small {@code long} back as an {@code int}.
   */
  static boolean same(JsonNode a, JsonNode b) {
    if (a == b) {
      return true;
    }
    if (a.isObject()) {
      if (!b.isObject() || a.size() != b.size()) {
        return false;
      }
      for (Map.Entry<String, JsonNode> e : a.properties()) {
        JsonNode other = b.get(e.getKey());
        if (other == null || !same(e.getValue(), other)) {
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
        if (!same(a.get(i), b.get(i))) {
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

  /**
   * How much of {@code b} differs from {@code a}: {@code [changed, leaves]}, where {@code leaves}
   * counts {@code b}'s leaves (scalars, empty objects and arrays) and {@code changed} those that
   * differ from the leaf at the same place in {@code a}, plus what {@code a} has and {@code b}
   * lacks. Fields are matched by name, array elements by position.
   */
  static int[] changes(JsonNode a, JsonNode b) {
    int[] counts = new int[2];
    changed(a, b, counts);
    return counts;
  }

  private static void changed(@Nullable JsonNode a, JsonNode b, int[] counts) {
    if (a == b) {
      counts[1] += leaves(b);
    } else if (a != null && a.isObject() && b.isObject() && !b.isEmpty()) {
      int matched = 0;
      for (Map.Entry<String, JsonNode> e : b.properties()) {
        JsonNode was = a.get(e.getKey());
        matched += was == null ? 0 : 1;
        changed(was, e.getValue(), counts);
      }
      counts[0] += a.size() - matched; // removed fields
    } else if (a != null && a.isArray() && b.isArray() && !b.isEmpty()) {
      for (int i = 0; i < b.size(); i++) {
        changed(i < a.size() ? a.get(i) : null, b.get(i), counts);
      }
      counts[0] += Math.max(0, a.size() - b.size());
    } else {
      int n = leaves(b);
      counts[0] += a != null && same(a, b) ? 0 : n;
      counts[1] += n;
    }
  }

  private static int leaves(JsonNode n) {
    if (n.isEmpty() || !n.isContainer()) {
      return 1;
    }
    int k = 0;
    for (JsonNode child : n) {
      k += leaves(child);
    }
    return k;
  }

  static boolean isMachineInteger(JsonNode n) {
    return n.isInt() || n.isLong() || n.isShort();
  }
}
