package io.dgen.admin;

import com.apple.foundationdb.tuple.Tuple;
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
 */
public final class Tuids {

  private Tuids() {}

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
