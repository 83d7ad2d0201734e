package io.dgen.cli.ui;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.admin.DGenAdmin;
import io.dgen.admin.ServerAdmin;
import io.dgen.admin.TenantAdmin;
import io.dgen.admin.Tuids;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.List;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.SerializationFeature;
import tools.jackson.databind.json.JsonMapper;

/**
 * What every page shares: the admin, the background scans, the version clock, whether writes are
 * allowed, the CSRF token, and the page layout (header, navigation, footer). Resolves the tenant
 * and server a request names.
 */
final class Ui {

  static final JsonMapper JSON =
      JsonMapper.builder().enable(SerializationFeature.INDENT_OUTPUT).build();

  static final JsonMapper COMPACT = JsonMapper.builder().build();

  private static final DateTimeFormatter TIME =
      DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss 'UTC'").withZone(ZoneOffset.UTC);

  /** The most characters of a state or message shown before it is cut. */
  static final int MAX_JSON_CHARS = 200_000;

  final DGenAdmin admin;
  final TenantScans scans;
  final VersionClock versions;
  final Clock clock;
  final boolean allowWrites;
  final String csrf;
  private final Supplier<List<Page>> pages;

  Ui(
      DGenAdmin admin,
      TenantScans scans,
      VersionClock versions,
      Clock clock,
      boolean allowWrites,
      String csrf,
      Supplier<List<Page>> pages) {
    this.admin = admin;
    this.scans = scans;
    this.versions = versions;
    this.clock = clock;
    this.allowWrites = allowWrites;
    this.csrf = csrf;
    this.pages = pages;
  }

  // ---------------------------------------------------------------- resolving

  /** The tenant path a request names ({@code t=shop/eu}). */
  static List<String> tenantPath(Http.Request r) {
    String t = r.required("t");
    List<String> path = List.of(t.split("/", -1));
    if (path.stream().anyMatch(String::isEmpty)) {
      throw new Http.Failure(400, "malformed tenant " + t + ": an empty path element");
    }
    return path;
  }

  TenantAdmin tenant(List<String> path) {
    return admin
        .tenant(path.toArray(String[]::new))
        .orElseThrow(() -> new Http.Failure(404, "no tenant " + Urls.tenant(path)));
  }

  /** The tuid a request names: {@code tuid} (a literal) or {@code tuidb} (packed). */
  static Tuple tuid(Http.Request r) {
    String literal = r.param("tuid");
    try {
      if (literal != null) {
        return Tuids.parse(literal);
      }
      return Urls.unpack(r.required("tuidb"));
    } catch (IllegalArgumentException e) {
      throw new Http.Failure(400, e.getMessage());
    }
  }

  ServerAdmin server(List<String> tenant, Tuple tuid) {
    return tenant(tenant)
        .server(tuid)
        .orElseThrow(
            () ->
                new Http.Failure(
                    404, "no server " + Tuids.format(tuid) + " in tenant " + Urls.tenant(tenant)));
  }

  // ---------------------------------------------------------------- formatting

  String time(Instant t) {
    return TIME.format(t);
  }

  String age(long version) {
    VersionClock.Age age = versions.age(version, clock.instant());
    return age == null ? "?" : age.text();
  }

  /** Pretty JSON, cut at {@value #MAX_JSON_CHARS} characters. */
  static String pretty(@Nullable JsonNode node) {
    return cut(node == null ? "null" : JSON.writeValueAsString(node));
  }

  /** One-line JSON, cut at {@code max} characters. */
  static String compact(@Nullable JsonNode node, int max) {
    String s = node == null ? "-" : COMPACT.writeValueAsString(node);
    return s.length() <= max ? s : s.substring(0, max) + "…";
  }

  private static String cut(String s) {
    return s.length() <= MAX_JSON_CHARS
        ? s
        : s.substring(0, MAX_JSON_CHARS) + "\n… (cut at " + MAX_JSON_CHARS + " characters)";
  }

  // ---------------------------------------------------------------- layout

  /** A whole page around {@code body}. */
  Http.Response page(int status, String title, Html body, String... scripts) {
    Html h = new Html();
    h.open("!DOCTYPE html").open("html", "lang", "en").open("head");
    h.open("meta", "charset", "utf-8");
    h.open("meta", "name", "viewport", "content", "width=device-width, initial-scale=1");
    h.el("title", title + " · dgen ui");
    h.open("link", "rel", "stylesheet", "href", "/static/dashboard.css");
    for (String script : scripts) {
      h.open("script", "src", script, "defer", "").close("script");
    }
    h.close("head").open("body");
    h.open("header").open("nav");
    h.link("/", "dgen ui", "class", "brand");
    for (Page p : pages.get()) {
      if (p.nav() != null) {
        h.link(p.path(), p.nav());
      }
    }
    h.el(
        "span",
        allowWrites ? "writes allowed" : "read-only",
        "class",
        allowWrites ? "mode writes" : "mode",
        "id",
        "mode");
    h.close("nav").close("header");
    h.open("main").el("h1", title).append(body).close("main");
    h.close("body").close("html");
    return Http.Response.html(status, h.toString());
  }

  /** A page that says what went wrong. */
  Http.Response error(int status, String message) {
    Html body = new Html().el("p", message, "class", "error", "id", "error");
    body.open("p").link("/", "back to the tenants").close("p");
    return page(status, status == 404 ? "Not found" : "Error " + status, body);
  }
}
