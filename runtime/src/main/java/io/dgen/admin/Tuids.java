package io.dgen.admin;

import com.apple.foundationdb.tuple.ByteArrayUtil;
import com.apple.foundationdb.tuple.Tuple;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;

/**
 * The text form of a tuid: a tuple literal, e.g. {@code ("orders", 42)} or {@code ("dgen_server",
 * "com.example.Counter")}.
 *
 * <pre>
 * tuple   = "(" [ element { "," element } ] ")"
 * element = string | integer | "true" | "false" | "null" | tuple
 * string  = '"' { character | "\\" | "\"" | "\n" | "\t" | "\\u" 4 hex digits } '"'
 * integer = [ "-" ] digits          (a signed 64-bit integer)
 * </pre>
 *
 * Spaces may surround elements. Parsing is strict: anything else (a trailing comma, single quotes,
 * a fraction, text after the closing parenthesis) is refused with the position of the error. {@link
 * #format} writes the form {@link #parse} reads; a tuple holding elements of other types (bytes,
 * UUIDs, floating point, versionstamps) is written with their Java text, which {@link #parse}
 * refuses.
 *
 * <p>{@link #prefix} reads the beginning of a literal, as someone types it into a search box, and
 * matches the tuids that start with it.
 */
public final class Tuids {

  private Tuids() {}

  /**
   * The tuids that start with a given beginning of a literal: a {@link Prefix} selects a contiguous
   * range of the server index, so a search is a range read, never a scan.
   *
   * <p>Immutable and thread-safe.
   */
  public static final class Prefix {

    /** Every tuid. */
    public static final Prefix ALL = new Prefix("", new byte[0]);

    private final String text;
    private final byte[] packed;

    private Prefix(String text, byte[] packed) {
      this.text = text;
      this.packed = packed;
    }

    /** What was typed (trimmed); empty for {@link #ALL}. */
    public String text() {
      return text;
    }

    /** The packed bytes every matching tuid's packed form starts with. */
    public byte[] packed() {
      return packed.clone();
    }

    /** Whether {@code tuid} starts with this prefix. */
    public boolean matches(Tuple tuid) {
      byte[] t = tuid.pack();
      return t.length >= packed.length
          && Arrays.equals(t, 0, packed.length, packed, 0, packed.length);
    }

    /** Whether this is {@link #ALL}. */
    public boolean isAll() {
      return packed.length == 0;
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof Prefix p && Arrays.equals(packed, p.packed);
    }

    @Override
    public int hashCode() {
      return Arrays.hashCode(packed);
    }

    @Override
    public String toString() {
      return "Prefix[" + text + "]";
    }
  }

  /**
   * Reads the beginning of a tuid literal: what the tuids to match start with.
   *
   * <ul>
   *   <li>blank: every tuid ({@link Prefix#ALL});
   *   <li>text not starting with {@code (}: the beginning of a first element that is a string
   *       ({@code ord} matches {@code ("orders", 1)} and {@code ("ordinal")});
   *   <li>a literal cut anywhere: its complete elements, then the beginning of an unterminated
   *       string ({@code ("orders", "al} matches {@code ("orders", "alice")}); an integer at the
   *       end counts as complete. A complete literal matches itself and every longer tuid that
   *       starts with its elements.
   * </ul>
   *
   * @throws IllegalArgumentException if the text is not the beginning of a literal, naming the
   *     position
   */
  public static Prefix prefix(String text) {
    String t = text.strip();
    if (t.isEmpty()) {
      return Prefix.ALL;
    }
    if (t.charAt(0) != '(') {
      return new Prefix(t, partialString(t));
    }
    Parser p = new Parser(t);
    return new Prefix(t, p.prefix());
  }

  /** A string element's packed form without its terminator: the prefix of longer strings. */
  private static byte[] partialString(String s) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.write(0x02);
    for (byte b : s.getBytes(StandardCharsets.UTF_8)) {
      out.write(b);
      if (b == 0) {
        out.write(0xFF);
      }
    }
    return out.toByteArray();
  }

  /**
   * Parses a tuid literal.
   *
   * @throws IllegalArgumentException if {@code text} is not one, naming the position
   */
  public static Tuple parse(String text) {
    Parser p = new Parser(text);
    p.space();
    Tuple t = p.tuple();
    p.space();
    if (p.at < text.length()) {
      throw p.error("text after the tuple");
    }
    return t;
  }

  /** The literal of {@code tuid}. */
  public static String format(Tuple tuid) {
    StringBuilder out = new StringBuilder();
    write(tuid.getItems(), out);
    return out.toString();
  }

  private static void write(List<?> items, StringBuilder out) {
    out.append('(');
    for (int i = 0; i < items.size(); i++) {
      if (i > 0) {
        out.append(", ");
      }
      Object item = items.get(i);
      if (item instanceof String s) {
        quote(s, out);
      } else if (item instanceof Tuple t) {
        write(t.getItems(), out);
      } else if (item instanceof List<?> l) {
        write(l, out);
      } else {
        out.append(item);
      }
    }
    out.append(')');
  }

  private static void quote(String s, StringBuilder out) {
    out.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> out.append("\\\"");
        case '\\' -> out.append("\\\\");
        case '\n' -> out.append("\\n");
        case '\t' -> out.append("\\t");
        default -> {
          if (c < 0x20) {
            out.append(String.format("\\u%04x", (int) c));
          } else {
            out.append(c);
          }
        }
      }
    }
    out.append('"');
  }

  private static final class Parser {
    private final String text;
    private int at;

    Parser(String text) {
      this.text = text;
    }

    IllegalArgumentException error(String what) {
      return new IllegalArgumentException(
          "malformed tuid "
              + text
              + ": "
              + what
              + " at position "
              + at
              + " (expected e.g. (\"orders\", 42))");
    }

    /** The packed beginning of a literal cut anywhere (after its opening parenthesis). */
    byte[] prefix() {
      at++;
      Tuple complete = new Tuple();
      while (true) {
        space();
        if (at >= text.length()) {
          return complete.pack();
        }
        char c = text.charAt(at);
        if (c == ')') {
          at++;
          space();
          if (at < text.length()) {
            throw error("text after the tuple");
          }
          return complete.pack();
        }
        if (c == '"' && !terminated()) {
          return ByteArrayUtil.join(complete.pack(), partialString(unterminated()));
        }
        if (c == '"') {
          complete = complete.add(string());
        } else {
          complete = complete.addObject(element());
        }
        space();
        if (at < text.length() && text.charAt(at) == ',') {
          at++;
        } else if (at < text.length() && text.charAt(at) != ')') {
          throw error("',' or ')' expected");
        }
      }
    }

    /** Whether the string starting at the current position has its closing quote. */
    private boolean terminated() {
      for (int i = at + 1; i < text.length(); i++) {
        char c = text.charAt(i);
        if (c == '\\') {
          i++;
        } else if (c == '"') {
          return true;
        }
      }
      return false;
    }

    /** The characters of a string cut by the end of the text, escapes resolved. */
    private String unterminated() {
      StringBuilder out = new StringBuilder();
      at++;
      while (at < text.length()) {
        char c = text.charAt(at++);
        if (c != '\\') {
          out.append(c);
        } else if (at < text.length()) {
          char e = text.charAt(at++);
          switch (e) {
            case 'n' -> out.append('\n');
            case 't' -> out.append('\t');
            case 'u' -> {
              if (at + 4 > text.length()) {
                return out.toString(); // an escape cut short: match on what came before it
              }
              try {
                out.append((char) Integer.parseInt(text.substring(at, at + 4), 16));
              } catch (NumberFormatException x) {
                throw error("four hex digits expected");
              }
              at += 4;
            }
            default -> out.append(e);
          }
        }
      }
      return out.toString();
    }

    void space() {
      while (at < text.length() && Character.isWhitespace(text.charAt(at))) {
        at++;
      }
    }

    Tuple tuple() {
      if (at >= text.length() || text.charAt(at) != '(') {
        throw error("'(' missing");
      }
      at++;
      Tuple t = new Tuple();
      space();
      if (at < text.length() && text.charAt(at) == ')') {
        at++;
        return t;
      }
      while (true) {
        space();
        t = t.addObject(element());
        space();
        if (at >= text.length()) {
          throw error("')' missing");
        }
        char c = text.charAt(at++);
        if (c == ')') {
          return t;
        }
        if (c != ',') {
          at--;
          throw error("',' or ')' expected");
        }
      }
    }

    Object element() {
      if (at >= text.length()) {
        throw error("an element expected");
      }
      char c = text.charAt(at);
      if (c == '"') {
        return string();
      }
      if (c == '(') {
        return tuple();
      }
      if (c == '-' || Character.isDigit(c)) {
        return integer();
      }
      for (String word : new String[] {"true", "false", "null"}) {
        if (text.startsWith(word, at)) {
          at += word.length();
          return word.equals("null") ? null : Boolean.valueOf(word);
        }
      }
      throw error("an element (a \"string\", an integer, true, false, null or a tuple) expected");
    }

    long integer() {
      int start = at;
      if (text.charAt(at) == '-') {
        at++;
      }
      int digits = at;
      while (at < text.length() && Character.isDigit(text.charAt(at))) {
        at++;
      }
      if (at == digits) {
        throw error("digits expected");
      }
      try {
        return Long.parseLong(text.substring(start, at));
      } catch (NumberFormatException e) {
        at = start;
        throw error("integer out of the 64-bit range");
      }
    }

    String string() {
      StringBuilder out = new StringBuilder();
      at++;
      while (at < text.length()) {
        char c = text.charAt(at++);
        if (c == '"') {
          return out.toString();
        }
        if (c != '\\') {
          out.append(c);
          continue;
        }
        if (at >= text.length()) {
          break;
        }
        char e = text.charAt(at++);
        switch (e) {
          case '"', '\\' -> out.append(e);
          case 'n' -> out.append('\n');
          case 't' -> out.append('\t');
          case 'u' -> {
            if (at + 4 > text.length()) {
              throw error("four hex digits expected");
            }
            try {
              out.append((char) Integer.parseInt(text.substring(at, at + 4), 16));
            } catch (NumberFormatException x) {
              throw error("four hex digits expected");
            }
            at += 4;
          }
          default -> {
            at--;
            throw error("unknown escape \\" + e);
          }
        }
      }
      throw error("unterminated string");
    }
  }
}
