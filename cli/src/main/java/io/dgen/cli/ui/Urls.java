package io.dgen.cli.ui;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.admin.Tuids;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * The dashboard's links: a path and query parameters, each encoded. Tenants are their paths joined
 * by {@code /} (as the CLI writes them); tuids are their literals where the literal reads back as
 * the same tuid, else ({@code tuidb}) their packed bytes in base64url.
 */
final class Urls {

  private Urls() {}

  /**
   * {@code path?name=value&...}; null values are left out.
   *
   * @param params name, value, name, value...
   */
  static String of(String path, @Nullable String... params) {
    StringBuilder b = new StringBuilder(path);
    char sep = '?';
    for (int i = 0; i < params.length; i += 2) {
      if (params[i + 1] == null) {
        continue;
      }
      b.append(sep)
          .append(params[i])
          .append('=')
          .append(URLEncoder.encode(params[i + 1], StandardCharsets.UTF_8));
      sep = '&';
    }
    return b.toString();
  }

  static String tenant(List<String> path) {
    return String.join("/", path);
  }

  /** The tuid parameters of a link to a server: {@code tuid} or {@code tuidb}. */
  static String[] tuid(Tuple tuid) {
    String literal = Tuids.format(tuid);
    try {
      if (Tuids.parse(literal).equals(tuid)) {
        return new String[] {"tuid", literal};
      }
    } catch (IllegalArgumentException e) {
      // an element the literal syntax cannot express: the packed form below
    }
    return new String[] {"tuidb", packed(tuid)};
  }

  static String packed(Tuple tuid) {
    return Base64.getUrlEncoder().withoutPadding().encodeToString(tuid.pack());
  }

  /**
   * Reads a packed tuid.
   *
   * @throws IllegalArgumentException if it is not one
   */
  static Tuple unpack(String packed) {
    try {
      return Tuple.fromBytes(Base64.getUrlDecoder().decode(packed));
    } catch (RuntimeException e) {
      throw new IllegalArgumentException("not a packed tuid: " + packed);
    }
  }

  /** A link to a server's page. */
  static String server(List<String> tenant, Tuple tuid) {
    String[] t = tuid(tuid);
    return of("/server", "t", tenant(tenant), t[0], t[1]);
  }
}
