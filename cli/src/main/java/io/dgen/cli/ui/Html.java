package io.dgen.cli.ui;

import org.jspecify.annotations.Nullable;

/**
 * The one way the dashboard writes HTML: element names and attribute names are constants of the
 * pages, and everything else (text, attribute values) is escaped here. There is deliberately no
 * method that appends a string as markup, so stored data (tuids, states, messages, errors: user
 * data) can only ever become text.
 *
 * <p>Not thread-safe: one per response.
 */
final class Html {

  private final StringBuilder out = new StringBuilder(4096);

  /** Escapes {@code s} for text and for double- or single-quoted attribute values. */
  static String escape(String s) {
    StringBuilder b = null;
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      String r =
          switch (c) {
            case '&' -> "&amp;";
            case '<' -> "&lt;";
            case '>' -> "&gt;";
            case '"' -> "&quot;";
            case '\'' -> "&#39;";
            default -> null;
          };
      if (r != null || b != null) {
        if (b == null) {
          b = new StringBuilder(s.length() + 16).append(s, 0, i);
        }
        if (r != null) {
          b.append(r);
        } else {
          b.append(c);
        }
      }
    }
    return b == null ? s : b.toString();
  }

  /** Escaped text; null writes nothing. */
  Html text(@Nullable Object value) {
    if (value != null) {
      out.append(escape(value.toString()));
    }
    return this;
  }

  /**
   * An opening tag.
   *
   * @param attributes name, value, name, value...; a null value leaves its attribute out, an empty
   *     one writes a boolean attribute
   */
  Html open(String tag, @Nullable String... attributes) {
    out.append('<').append(tag);
    if (attributes.length % 2 != 0) {
      throw new IllegalArgumentException("attributes come in name/value pairs: " + tag);
    }
    for (int i = 0; i < attributes.length; i += 2) {
      String value = attributes[i + 1];
      if (value == null) {
        continue;
      }
      out.append(' ').append(attributes[i]);
      if (!value.isEmpty()) {
        out.append("=\"").append(escape(value)).append('"');
      }
    }
    out.append('>');
    return this;
  }

  /** A closing tag. */
  Html close(String tag) {
    out.append("</").append(tag).append('>');
    return this;
  }

  /** An element holding escaped text. */
  Html el(String tag, @Nullable Object text, @Nullable String... attributes) {
    return open(tag, attributes).text(text).close(tag);
  }

  /** A link. */
  Html link(String href, @Nullable Object text, @Nullable String... attributes) {
    String[] all = new String[attributes.length + 2];
    all[0] = "href";
    all[1] = href;
    System.arraycopy(attributes, 0, all, 2, attributes.length);
    return el("a", text, all);
  }

  /** Opens a table {@code id} with a header row of {@code columns} and opens its body. */
  Html table(String id, String... columns) {
    open("table", "id", id).open("thead").open("tr");
    for (String c : columns) {
      el("th", c);
    }
    return close("tr").close("thead").open("tbody");
  }

  /** Closes what {@link #table} opened. */
  Html endTable() {
    return close("tbody").close("table");
  }

  /** A hidden form field. */
  Html hidden(String name, String value) {
    return open("input", "type", "hidden", "name", name, "value", value);
  }

  /** What another builder wrote (already safe). */
  Html append(Html other) {
    out.append(other.out);
    return this;
  }

  @Override
  public String toString() {
    return out.toString();
  }
}
