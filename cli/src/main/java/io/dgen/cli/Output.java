package io.dgen.cli;

import io.dgen.admin.ServerAdmin;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.SerializationFeature;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/** What commands print: JSON trees (pretty) and plain tables. */
final class Output {

  static final JsonMapper JSON =
      JsonMapper.builder().enable(SerializationFeature.INDENT_OUTPUT).build();

  private static final JsonMapper COMPACT = JsonMapper.builder().build();

  private Output() {}

  static ObjectNode object() {
    return JSON.createObjectNode();
  }

  static ArrayNode array() {
    return JSON.createArrayNode();
  }

  static void json(PrintWriter out, JsonNode node) {
    out.println(JSON.writeValueAsString(node));
  }

  /** A tree on one line, for a table cell. */
  static String compact(@Nullable JsonNode node) {
    return node == null ? "-" : COMPACT.writeValueAsString(node);
  }

  /** A queued message's table cell: the message on one line, or why it does not decode. */
  static String message(ServerAdmin.QueuedItem item) {
    return item.message() == null ? "undecodable: " + item.error() : compact(item.message());
  }

  /** A queued message as JSON (also inside dead letters and the lock). */
  static ObjectNode item(ServerAdmin.QueuedItem item, ObjectNode into) {
    into.put("kind", item.kind());
    into.put("type", item.type());
    into.put("failures", item.failures());
    into.set("message", item.message());
    if (item.error() != null) {
      into.put("error", item.error());
    }
    return into;
  }

  /** Columns separated by two spaces, each as wide as its widest cell. */
  static void table(PrintWriter out, List<String> header, List<List<String>> rows) {
    List<List<String>> all = new ArrayList<>();
    all.add(header);
    all.addAll(rows);
    int[] width = new int[header.size()];
    for (List<String> row : all) {
      for (int i = 0; i < row.size(); i++) {
        width[i] = Math.max(width[i], row.get(i).length());
      }
    }
    for (List<String> row : all) {
      StringBuilder line = new StringBuilder();
      for (int i = 0; i < row.size(); i++) {
        line.append(row.get(i));
        if (i < row.size() - 1) {
          line.append(" ".repeat(width[i] - row.get(i).length() + 2));
        }
      }
      out.println(line.toString().stripTrailing());
    }
  }
}
