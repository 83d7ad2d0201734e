package io.dgen.internal.codec;

import io.dgen.TypeName;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * The tags that name stored types: a class annotated with {@link TypeName} is stored as {@code
 * name} (version 1) or {@code name#version}; any other class as its fully qualified name (version
 * 1). A stored tag is read back as a {@link Tag}: the name before the last {@code #} and the
 * version after it. Never loads a class.
 */
public final class TypeNames {

  private static final char VERSION = '#';

  private TypeNames() {}

  /** A stored tag, parsed: the name it was stored under and the version of the stored form. */
  public record Tag(String name, int version) {
    @Override
    public String toString() {
      return version == 1 ? name : name + VERSION + version;
    }
  }

  /** What the annotation of a class says, checked once per class. */
  private record Named(
      @Nullable TypeName annotation, String name, String tag, int version, List<String> names) {}

  private static final ClassValue<Named> NAMED =
      new ClassValue<>() {
        @Override
        protected Named computeValue(Class<?> c) {
          TypeName t = c.getAnnotation(TypeName.class);
          if (t == null) {
            return new Named(null, c.getName(), c.getName(), 1, List.of(c.getName()));
          }
          check(c, t);
          List<String> names = new ArrayList<>();
          names.add(t.value());
          names.addAll(List.of(t.aliases()));
          if (!names.contains(c.getName())) {
            names.add(c.getName());
          }
          return new Named(
              t,
              t.value(),
              new Tag(t.value(), t.version()).toString(),
              t.version(),
              List.copyOf(names));
        }
      };

  /**
   * The class's annotation, checked, or null.
   *
   * @throws IllegalArgumentException if the annotation is invalid
   */
  static @Nullable TypeName annotation(Class<?> c) {
    return NAMED.get(c).annotation();
  }

  /** The version of {@code c}'s stored form: its annotation's, else 1. */
  public static int version(Class<?> c) {
    return NAMED.get(c).version();
  }

  /** The logical name of {@code c}, or its class name if it is not annotated. */
  public static String name(Class<?> c) {
    return NAMED.get(c).name();
  }

  /** The tag {@code c}'s instances are stored under now. */
  public static String tag(Class<?> c) {
    return NAMED.get(c).tag();
  }

  /**
   * Every name stored data of {@code c} may carry: its logical name and aliases if annotated, and
   * its class name.
   */
  static List<String> names(Class<?> c) {
    return NAMED.get(c).names();
  }

  /** Splits a stored tag into its name and version. */
  public static Tag parse(String tag) {
    int at = tag.lastIndexOf(VERSION);
    if (at > 0 && at < tag.length() - 1) {
      String digits = tag.substring(at + 1);
      if (digits.chars().allMatch(Character::isDigit) && digits.length() < 10) {
        return new Tag(tag.substring(0, at), Integer.parseInt(digits));
      }
    }
    return new Tag(tag, 1);
  }

  /**
   * Checks a logical name or alias.
   *
   * @throws IllegalArgumentException if it is blank, contains {@code #} or whitespace, or starts
   *     with {@code ~}
   */
  public static void checkName(String name, String what) {
    if (name == null
        || name.isBlank()
        || name.startsWith("~")
        || name.chars().anyMatch(ch -> ch == VERSION || Character.isWhitespace(ch))) {
      throw new IllegalArgumentException(
          what
              + " '"
              + name
              + "' is not a valid type name: it must not be blank, contain '#' or whitespace, or"
              + " start with '~'");
    }
  }

  private static void check(Class<?> c, TypeName t) {
    checkName(t.value(), "@TypeName of " + c.getName());
    for (String alias : t.aliases()) {
      checkName(alias, "an alias in @TypeName of " + c.getName());
    }
    if (t.version() < 1) {
      throw new IllegalArgumentException(
          "@TypeName of " + c.getName() + " has version " + t.version() + "; versions start at 1");
    }
  }
}
