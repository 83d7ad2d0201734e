package io.dgen.cli.ui;

import com.google.common.net.InetAddresses;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.dgen.OperationTimeoutException;
import io.dgen.admin.DGenAdmin;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.time.Clock;
import java.time.Duration;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * {@code dgen ui}: a web dashboard over the admin API, served by the JDK's own HTTP server ({@code
 * com.sun.net.httpserver}, no dependency) with pages rendered on the server and no front-end build:
 * one style sheet and one small script (the live chart), both in this jar.
 *
 * <h2>Security</h2>
 *
 * <ul>
 *   <li>Read-only unless {@link Options#allowWrites}: the action endpoint refuses every request
 *       before touching the backend, and the pages only read (snapshot reads; tenants are opened,
 *       never created).
 *   <li>Bound to loopback by default. On loopback, requests whose {@code Host} is neither {@code
 *       localhost} nor a loopback IP literal are refused (a DNS-rebinding page cannot read the
 *       dashboard).
 *   <li>A token ({@link Options#token}; generated when binding elsewhere without one) is checked on
 *       every request, static files included: a cookie set by opening {@code /?token=...} once, or
 *       an {@code Authorization: Bearer} header. The comparison takes constant time.
 *   <li>Every form carries a CSRF token (random per process) that a POST must return; a POST whose
 *       {@code Origin} or {@code Sec-Fetch-Site} shows another site is refused too.
 *   <li>Stored data is escaped by {@link Html}; every response carries a strict
 *       Content-Security-Policy (scripts and styles from this server only, no inline script, no
 *       framing).
 * </ul>
 *
 * <p>Thread-safe; requests run on a small pool of daemon threads, whole-tenant scans on one more
 * ({@link TenantScans}). {@link #close} stops both.
 */
public final class Dashboard implements AutoCloseable {

  /** The cookie that carries the token. */
  static final String TOKEN_COOKIE = "dgen_token";

  static final String CSP =
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src"
          + " 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

  private static final Map<String, String> STATIC =
      Map.of(
          "/static/dashboard.css", "text/css; charset=utf-8",
          "/static/live.js", "text/javascript; charset=utf-8");

  /** What may follow the host in a {@code Host} header: nothing, or a colon and a port. */
  private static final Pattern PORT = Pattern.compile("(:[0-9]{0,5})?");

  /**
   * How the dashboard runs.
   *
   * @param bind the address to listen on (default loopback)
   * @param port the port; 0 picks a free one
   * @param allowWrites whether the actions (re-queue, purge, cancel, kill) may write
   * @param token the token every request must carry, or null: none on loopback, a generated one
   *     elsewhere
   * @param versionsPerSecond the backend's version rate (FoundationDB: 1,000,000), or 0 if its
   *     versions do not follow time: ages are then bracketed (see {@link VersionClock})
   * @param scanCap the most servers one background scan of a tenant reads
   * @param rankingSize how many servers a scan keeps for each sorted listing
   */
  public record Options(
      InetAddress bind,
      int port,
      boolean allowWrites,
      @Nullable String token,
      long versionsPerSecond,
      int scanCap,
      int rankingSize) {

    /** The default port. */
    public static final int DEFAULT_PORT = 8080;

    /** The default cap of a scan. */
    public static final int DEFAULT_SCAN_CAP = 1_000_000;

    /** The default number of servers a sorted listing can show. */
    public static final int DEFAULT_RANKING = 1000;

    /**
     * Checks the options.
     *
     * @throws IllegalArgumentException if a value is out of range or the token is blank
     */
    public Options {
      Objects.requireNonNull(bind, "bind must not be null");
      if (port < 0 || port > 65535) {
        throw new IllegalArgumentException("port must be within 0 and 65535: " + port);
      }
      if (token != null && token.isBlank()) {
        throw new IllegalArgumentException("token must not be blank");
      }
      if (versionsPerSecond < 0 || scanCap < 1 || rankingSize < 1) {
        throw new IllegalArgumentException(
            "versionsPerSecond must not be negative, scanCap and rankingSize must be positive");
      }
    }

    /** Loopback, port 8080, read-only, no token, versions unrelated to time, default caps. */
    public static Options defaults() {
      return new Options(
          InetAddress.getLoopbackAddress(),
          DEFAULT_PORT,
          false,
          null,
          0,
          DEFAULT_SCAN_CAP,
          DEFAULT_RANKING);
    }
  }

  private final Options options;
  private final @Nullable String token;
  private final String csrf;
  private final TenantScans scans;
  private final List<Page> pages;
  private final HttpServer server;
  private final ExecutorService pool;

  /**
   * Starts the dashboard: binds the port and serves until {@link #close}.
   *
   * @param admin the admin over the backend to show
   * @throws IOException if the address cannot be bound
   */
  public Dashboard(DGenAdmin admin, Options options, Clock clock) throws IOException {
    this.options = options;
    this.token =
        options.token() != null
            ? options.token()
            : options.bind().isLoopbackAddress() ? null : randomToken();
    this.csrf = randomToken();
    VersionClock versions = new VersionClock(options.versionsPerSecond());
    this.scans =
        new TenantScans(
            admin,
            versions,
            clock,
            options.scanCap(),
            options.rankingSize(),
            Duration.ofSeconds(15),
            Duration.ofSeconds(2));
    Ui ui = new Ui(admin, scans, versions, clock, options.allowWrites(), csrf, this::pages);
    this.pages = pages(ui);
    AtomicInteger n = new AtomicInteger();
    this.pool =
        Executors.newFixedThreadPool(
            4,
            r -> {
              Thread t = new Thread(r, "dgen-ui-http-" + n.incrementAndGet());
              t.setDaemon(true);
              return t;
            });
    this.server = HttpServer.create(new InetSocketAddress(options.bind(), options.port()), 64);
    server.setExecutor(pool);
    server.createContext("/", exchange -> serve(exchange, ui));
    server.start();
  }

  /** Every page; adding one is adding it here (the order is the navigation's). */
  static List<Page> pages(Ui ui) {
    return List.of(
        new TenantsPage(ui),
        new ServersPage(ui),
        new ServerPage(ui),
        new LivePage(ui),
        new PlacementPage(ui),
        new LivePage.Data(ui),
        new Actions.Confirm(ui),
        new Actions.Act(ui));
  }

  private List<Page> pages() {
    return pages;
  }

  /** The address it serves, e.g. {@code http://127.0.0.1:8080/}. */
  public URI uri() {
    InetSocketAddress a = server.getAddress();
    String host = options.bind().getHostAddress();
    if (host.contains(":")) {
      host = "[" + host + "]";
    }
    return URI.create("http://" + host + ":" + a.getPort() + "/");
  }

  /** The token requests must carry, if any. */
  public @Nullable String token() {
    return token;
  }

  /** Whether the actions may write. */
  public boolean allowsWrites() {
    return options.allowWrites();
  }

  /** Stops serving and scanning; requests in progress get a second to finish. */
  @Override
  public void close() {
    scans.close();
    server.stop(1);
    pool.shutdownNow();
  }

  // ---------------------------------------------------------------- dispatch

  private void serve(HttpExchange exchange, Ui ui) throws IOException {
    Http.Response response;
    try {
      Http.Request request = Http.Request.of(exchange);
      response = dispatch(request, ui);
    } catch (Http.Failure f) {
      response = ui.error(f.status(), f.getMessage());
    } catch (OperationTimeoutException e) {
      response = ui.error(504, "the store did not answer in time: " + e.getMessage());
    } catch (RuntimeException e) {
      response = ui.error(500, "backend error: " + e);
    }
    send(exchange, response);
  }

  private Http.Response dispatch(Http.Request r, Ui ui) {
    checkHost(r);
    Http.Response login = checkToken(r);
    if (login != null) {
      return login;
    }
    if (r.method().equals("POST")) {
      checkCsrf(r);
    } else if (!r.method().equals("GET")) {
      throw new Http.Failure(405, "method " + r.method() + " is not allowed");
    }
    String type = STATIC.get(r.path());
    if (type != null && r.method().equals("GET")) {
      return resource(r.path(), type);
    }
    for (Page p : pages) {
      if (p.path().equals(r.path())) {
        if (!p.method().equals(r.method())) {
          throw new Http.Failure(405, r.path() + " takes " + p.method());
        }
        return p.handle(r);
      }
    }
    throw new Http.Failure(404, "no page " + r.path());
  }

  /**
   * On loopback, only {@code localhost} and loopback IP literals: a page whose DNS name an attacker
   * rebinds to 127.0.0.1 sends its own name as the {@code Host}, and must not read the dashboard.
   */
  private void checkHost(Http.Request r) {
    if (!options.bind().isLoopbackAddress()) {
      return;
    }
    String host = r.header("Host");
    if (host == null) {
      throw new Http.Failure(400, "no Host header");
    }
    if (!isLoopbackHost(host)) {
      throw new Http.Failure(
          403,
          "host "
              + host
              + " refused: on loopback this dashboard answers only to localhost and loopback IP"
              + " addresses (127.x.y.z, [::1]), not to other names (DNS rebinding)");
    }
  }

  /**
   * Whether a {@code Host} header value is {@code localhost}, a 127.x.y.z dotted quad or a
   * bracketed IPv6 loopback literal, each with an optional port. No DNS name other than {@code
   * localhost} passes, however it begins: {@code 127.0.0.1.attacker.example} is the attacker's.
   * Literals are parsed as text, never looked up.
   */
  private static boolean isLoopbackHost(String host) {
    String name;
    String port;
    if (host.startsWith("[")) {
      int close = host.indexOf(']');
      if (close < 0) {
        return false;
      }
      name = host.substring(1, close);
      port = host.substring(close + 1);
      // a zone id (%eth0) would be resolved against the network interfaces
      if (!name.contains(":") || name.contains("%")) {
        return false;
      }
    } else {
      int colon = host.indexOf(':');
      name = colon < 0 ? host : host.substring(0, colon);
      port = colon < 0 ? "" : host.substring(colon);
      if (name.equalsIgnoreCase("localhost")) {
        return PORT.matcher(port).matches();
      }
      // without a colon, the only literal Guava reads is a dotted quad of decimal numbers
    }
    return PORT.matcher(port).matches()
        && InetAddresses.isInetAddress(name)
        && InetAddresses.forString(name).isLoopbackAddress();
  }

  /** Null if the request may go on; else the answer (a login redirect or 401). */
  private Http.@Nullable Response checkToken(Http.Request r) {
    if (token == null) {
      return null;
    }
    String given = r.cookies().get(TOKEN_COOKIE);
    String auth = r.header("Authorization");
    if (given == null && auth != null && auth.startsWith("Bearer ")) {
      given = auth.substring("Bearer ".length()).strip();
    }
    if (given != null && same(given, token)) {
      return null;
    }
    String query = r.query().get("token");
    if (query != null && same(query, token) && r.method().equals("GET")) {
      // the token leaves the address bar (and the history) at once; the path comes from the
      // request, so only one this dashboard serves is sent back: "//evil.example" or
      // "/\evil.example" as a Location takes the browser to another site
      String back = STATIC.containsKey(r.path()) || isPage(r.path()) ? r.path() : "/";
      return Http.Response.redirect(back)
          .withHeader(
              "Set-Cookie", TOKEN_COOKIE + "=" + token + "; Path=/; HttpOnly; SameSite=Strict");
    }
    throw new Http.Failure(
        401, "a token is required: open the address dgen ui printed, ending in ?token=...");
  }

  private boolean isPage(String path) {
    for (Page p : pages) {
      if (p.path().equals(path)) {
        return true;
      }
    }
    return false;
  }

  private void checkCsrf(Http.Request r) {
    String origin = r.header("Origin");
    String host = r.header("Host");
    if (origin != null && !origin.equals("null") && !origin.equals("http://" + host)) {
      throw new Http.Failure(403, "refused: the form came from another site (" + origin + ")");
    }
    String site = r.header("Sec-Fetch-Site");
    if (site != null && !site.equals("same-origin") && !site.equals("none")) {
      throw new Http.Failure(403, "refused: the form came from another site");
    }
    String given = r.form().get("csrf");
    if (given == null || !same(given, csrf)) {
      throw new Http.Failure(
          403, "refused: the form's CSRF token is missing or stale; reload the page");
    }
  }

  private static boolean same(String a, String b) {
    return MessageDigest.isEqual(
        a.getBytes(StandardCharsets.UTF_8), b.getBytes(StandardCharsets.UTF_8));
  }

  private static String randomToken() {
    byte[] b = new byte[24];
    new SecureRandom().nextBytes(b);
    return Base64.getUrlEncoder().withoutPadding().encodeToString(b);
  }

  private static Http.Response resource(String path, String type) {
    try (InputStream in = Dashboard.class.getResourceAsStream(path.substring(1))) {
      if (in == null) {
        throw new Http.Failure(404, "no file " + path);
      }
      return new Http.Response(
          200, type, in.readAllBytes(), Map.of("Cache-Control", "max-age=300"));
    } catch (IOException e) {
      throw new Http.Failure(500, "cannot read " + path);
    }
  }

  private static void send(HttpExchange exchange, Http.Response response) throws IOException {
    var h = exchange.getResponseHeaders();
    h.set("Content-Type", response.contentType());
    h.set("Content-Security-Policy", CSP);
    h.set("X-Content-Type-Options", "nosniff");
    h.set("X-Frame-Options", "DENY");
    h.set("Referrer-Policy", "no-referrer");
    h.set("Cache-Control", "no-store");
    response.headers().forEach(h::set);
    byte[] body = response.body();
    exchange.sendResponseHeaders(response.status(), body.length == 0 ? -1 : body.length);
    try (OutputStream out = exchange.getResponseBody()) {
      out.write(body);
    }
  }
}
