package io.dgen.internal.codec;

import java.util.Map;
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

  static boolean isMachineInteger(JsonNode n) {
    return n.isInt() || n.isLong() || n.isShort();
  }
}
