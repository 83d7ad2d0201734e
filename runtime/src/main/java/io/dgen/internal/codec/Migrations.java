package io.dgen.internal.codec;

import io.dgen.UndecodableDataException;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.UnaryOperator;
import tools.jackson.databind.JsonNode;

/**
 * The migration steps of a runtime ({@code DGen.Builder.migration}): for a logical type name and a
 * version {@code v}, the step that turns a tree stored at {@code v} into one at {@code v + 1}.
 * Every name's steps start at version 1 and have no gap ({@link #check}); a type at version {@code
 * n} needs the steps from 1 to {@code n - 1} ({@link #require}), checked when a server that allows
 * it starts, so a missing step never surfaces in a consumer.
 *
 * <p>Immutable and thread-safe once built. Steps are user code: they must be pure functions of the
 * tree (they run on every read of old data until it is rewritten, possibly many times).
 */
public final class Migrations {

  /** No steps. */
  public static final Migrations NONE = new Migrations(Map.of());

  private final Map<String, Map<Integer, UnaryOperator<JsonNode>>> steps;

  private Migrations(Map<String, Map<Integer, UnaryOperator<JsonNode>>> steps) {
    this.steps = steps;
  }

  /**
   * The steps, checked.
   *
   * @param steps by logical name, then by the version they migrate from
   * @throws IllegalArgumentException if a name's steps do not start at 1 or have a gap
   */
  public static Migrations of(Map<String, ? extends Map<Integer, UnaryOperator<JsonNode>>> steps) {
    Map<String, Map<Integer, UnaryOperator<JsonNode>>> copy = new HashMap<>();
    steps.forEach(
        (name, byVersion) -> {
          TreeMap<Integer, UnaryOperator<JsonNode>> sorted = new TreeMap<>(byVersion);
          int expected = 1;
          for (int v : sorted.keySet()) {
            if (v != expected) {
              throw new IllegalArgumentException(
                  "migrations of type '"
                      + name
                      + "' are registered from versions "
                      + sorted.keySet()
                      + ": the step from version "
                      + expected
                      + " is missing; data stored at version "
                      + expected
                      + " could not be read");
            }
            expected++;
          }
          copy.put(name, Map.copyOf(sorted));
        });
    return new Migrations(Map.copyOf(copy));
  }

  /**
   * Checks that a type at {@code version} can read every older version of itself.
   *
   * @throws IllegalArgumentException naming the type and the missing step
   */
  public void require(String name, int version, String className) {
    Map<Integer, UnaryOperator<JsonNode>> s = steps.getOrDefault(name, Map.of());
    for (int v = 1; v < version; v++) {
      if (!s.containsKey(v)) {
        throw new IllegalArgumentException(
            "type '"
                + name
                + "' ("
                + className
                + ") is at version "
                + version
                + " but no migration from version "
                + v
                + " is registered: add DGen.Builder.migration(\""
                + name
                + "\", "
                + v
                + ", tree -> ...) so that data stored at version "
                + v
                + " can be read");
      }
    }
  }

  /**
   * Runs {@code tree}, stored at {@code from}, through the steps of {@code name} up to {@code to}.
   *
   * @throws UndecodableDataException if a step is missing, throws or returns null
   */
  public JsonNode migrate(String name, int from, int to, JsonNode tree) {
    Map<Integer, UnaryOperator<JsonNode>> s = steps.getOrDefault(name, Map.of());
    JsonNode t = tree.deepCopy(); // a step may change its input: never the caller's tree
    for (int v = from; v < to; v++) {
      UnaryOperator<JsonNode> step = s.get(v);
      if (step == null) {
        throw new UndecodableDataException(
            "no migration of type '" + name + "' from version " + v + " is registered",
            name,
            from,
            null);
      }
      try {
        t = step.apply(t);
      } catch (RuntimeException e) {
        throw new UndecodableDataException(
            "the migration of type '" + name + "' from version " + v + " failed: " + e,
            name,
            from,
            e);
      }
      if (t == null) {
        throw new UndecodableDataException(
            "the migration of type '" + name + "' from version " + v + " returned null",
            name,
            from,
            null);
      }
    }
    return t;
  }
}
