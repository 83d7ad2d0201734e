package io.dgen.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.dgen.admin.DGenAdmin;
import io.dgen.backend.memory.MemoryBackend;
import io.dgen.cli.ui.Dashboard;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetAddress;
import java.net.Socket;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The dashboard's security model over plain HTTP: the headers of every response, loopback names
 * only on loopback, CSRF tokens and origins on forms, the token on every request when bound
 * elsewhere, and {@code dgen ui}'s own options.
 */
class DashboardSecurityTest {

  private static final HttpClient HTTP = HttpClient.newHttpClient();

  private MemoryBackend memory;
  private UiFixture ui;

  @BeforeEach
  void start() throws Exception {
    memory = MemoryBackend.create();
    ui = new UiFixture(memory, true, "shop", "eu");
  }

  @AfterEach
  void stop() {
    ui.close();
    memory.close();
  }

  private static HttpResponse<String> send(HttpRequest.Builder r) throws Exception {
    return HTTP.send(
        r.timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
  }

  private static HttpRequest.Builder get(String url) {
    return HttpRequest.newBuilder(URI.create(url));
  }

  private static HttpRequest.Builder post(String url, String form) {
    return HttpRequest.newBuilder(URI.create(url))
        .header("Content-Type", "application/x-www-form-urlencoded")
        .POST(HttpRequest.BodyPublishers.ofString(form));
  }

  private static String q(String s) {
    return URLEncoder.encode(s, StandardCharsets.UTF_8);
  }

  /** The form of the confirmation of re-queueing every dead letter of the orders, as sent. */
  private String requeueForm() throws Exception {
    String confirm =
        send(get(
                ui.url(
                    "/confirm?op=requeue-all&lane=tail&t=shop/eu&tuid=" + q(ShopFixture.ORDERS))))
            .body();
    Matcher csrf = Pattern.compile("name=\"csrf\" value=\"([^\"]+)\"").matcher(confirm);
    assertThat(csrf.find()).as(confirm).isTrue();
    return "csrf="
        + csrf.group(1)
        + "&op=requeue-all&lane=tail&t=shop%2Feu&tuid="
        + q(ShopFixture.ORDERS);
  }

  private long deadLetters() {
    return new DGenAdmin(memory)
        .tenant("shop", "eu")
        .orElseThrow()
        .server(io.dgen.admin.Tuids.parse(ShopFixture.ORDERS))
        .orElseThrow()
        .deadLetterCount();
  }

  @Test
  void everyResponse_carriesAStrictPolicy() throws Exception {
    for (String path : new String[] {"/", "/static/dashboard.css", "/nope", "/tenant?t=none"}) {
      HttpResponse<String> r = send(get(ui.url(path)));
      assertThat(r.headers().firstValue("Content-Security-Policy"))
          .as(path)
          .hasValue(
              "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src"
                  + " 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'");
      assertThat(r.headers().firstValue("X-Content-Type-Options")).hasValue("nosniff");
      assertThat(r.headers().firstValue("X-Frame-Options")).hasValue("DENY");
    }
    assertThat(send(get(ui.url("/nope"))).statusCode()).isEqualTo(404);
    HttpResponse<String> missing = send(get(ui.url("/tenant?t=" + q("<i>x</i>"))));
    assertThat(missing.statusCode()).isEqualTo(404);
    assertThat(missing.body()).contains("no tenant &lt;i&gt;x&lt;/i&gt;").doesNotContain("<i>x");
  }

  @Test
  void onLoopback_otherHostNamesAreRefused() throws Exception {
    int port = ui.dashboard.uri().getPort();
    assertThat(rawStatus(port, "localhost:" + port)).isEqualTo(200);
    assertThat(rawStatus(port, "127.0.0.1:" + port)).isEqualTo(200);
    // a page of attacker.example whose name was rebound to 127.0.0.1
    assertThat(rawStatus(port, "attacker.example:" + port)).isEqualTo(403);
  }

  @Test
  void onLoopback_localhostAndLoopbackIpLiterals_areServed_withOrWithoutAPort() throws Exception {
    int port = ui.dashboard.uri().getPort();
    for (String host :
        new String[] {
          "localhost",
          "localhost:" + port,
          "LocalHost:" + port,
          "127.0.0.1",
          "127.0.0.1:" + port,
          "127.1.2.3",
          "127.1.2.3:" + port,
          "127.255.255.254:" + port,
          "[::1]",
          "[::1]:" + port,
          "[0:0:0:0:0:0:0:1]:" + port,
          "[::ffff:127.0.0.1]:" + port,
        }) {
      assertThat(rawStatus(port, host)).as("Host: " + host).isEqualTo(200);
    }
  }

  @Test
  void onLoopback_aDnsNameThatLooksLikeALoopbackName_isRefused() throws Exception {
    int port = ui.dashboard.uri().getPort();
    for (String host :
        new String[] {
          // names whose DNS an attacker runs, and can answer with 127.0.0.1 (DNS rebinding)
          "127.0.0.1.attacker.example:" + port,
          "127.0.0.1.attacker.example",
          "127.evil:" + port,
          "localhost.attacker.example",
          "localhost.attacker.example:" + port,
          // loopback-looking beginnings that the former parse cut a name down to
          "127.0.0.1:" + port + ".attacker.example",
          "localhost:attacker.example",
          "[::1].attacker.example:" + port,
          "[::1]attacker.example",
          // other spellings of loopback (a browser writes an IPv4 literal as a decimal dotted
          // quad), literals of other addresses, malformed values
          "127.1:" + port,
          "0177.0.0.1:" + port,
          "2130706433:" + port,
          "localhost.:" + port,
          "127.0.0.1.:" + port,
          "10.0.0.1:" + port,
          "[::2]:" + port,
          "[127.0.0.1]:" + port,
          "[::1:" + port,
          "[::1%25lo]:" + port,
          ":" + port,
        }) {
      assertThat(rawStatus(port, host)).as("Host: " + host).isEqualTo(403);
    }
  }

  @Test
  void onLoopback_aRefusedHost_isToldWhichNamesAreServed() throws Exception {
    int port = ui.dashboard.uri().getPort();
    Raw refused = raw(port, "/", "127.0.0.1.attacker.example:" + port);
    assertThat(refused.status()).isEqualTo(403);
    assertThat(refused.body())
        .contains("host 127.0.0.1.attacker.example:" + port + " refused")
        .contains("localhost")
        .contains("[::1]")
        .doesNotContain("shop/eu");
  }

  private static int rawStatus(int port, String host) throws IOException {
    return raw(port, "/", host).status();
  }

  /** A response as read off the socket: its status, its {@code Location} if any, its body. */
  private record Raw(int status, @Nullable String location, String body) {}

  /**
   * GETs {@code target} over a plain socket: the JDK's client sends neither an arbitrary {@code
   * Host} nor a request target such as {@code //evil.example} as given.
   */
  private static Raw raw(int port, String target, String host) throws IOException {
    try (Socket s = new Socket(InetAddress.getLoopbackAddress(), port)) {
      OutputStream out = s.getOutputStream();
      out.write(
          ("GET " + target + " HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n")
              .getBytes(StandardCharsets.US_ASCII));
      out.flush();
      String response = new String(s.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      int end = response.indexOf("\r\n\r\n");
      String head = end < 0 ? response : response.substring(0, end);
      String body = end < 0 ? "" : response.substring(end + 4);
      String location = null;
      for (String line : head.split("\r\n")) {
        if (line.regionMatches(true, 0, "Location:", 0, "Location:".length())) {
          location = line.substring("Location:".length()).strip();
        }
      }
      return new Raw(Integer.parseInt(head.substring(9, 12)), location, body);
    }
  }

  @Test
  void forms_needTheirCsrfToken_andTheirOwnOrigin() throws Exception {
    String form = requeueForm();
    String noToken = form.replaceFirst("csrf=[^&]+", "csrf=guess");
    HttpResponse<String> forged = send(post(ui.url("/action"), noToken));
    assertThat(forged.statusCode()).isEqualTo(403);
    assertThat(forged.body()).contains("CSRF token");
    HttpResponse<String> crossSite =
        send(post(ui.url("/action"), form).header("Origin", "http://attacker.example"));
    assertThat(crossSite.statusCode()).isEqualTo(403);
    assertThat(
            send(post(ui.url("/action"), form).header("Sec-Fetch-Site", "cross-site")).statusCode())
        .isEqualTo(403);
    assertThat(send(get(ui.url("/action?" + form))).statusCode()).isEqualTo(405);
    assertThat(deadLetters()).as("nothing was re-queued").isEqualTo(2);

    HttpResponse<String> done =
        send(
            post(ui.url("/action"), form)
                .header("Origin", "http://localhost:" + ui.dashboard.uri().getPort()));
    assertThat(done.statusCode()).isEqualTo(303);
    assertThat(done.headers().firstValue("Location").orElseThrow())
        .startsWith("/server?t=shop%2Feu&tuid=")
        .endsWith("&done=requeued-tail&n=2");
    assertThat(deadLetters()).isZero();
  }

  @Test
  void boundElsewhere_everyRequestNeedsTheToken() throws Exception {
    try (Dashboard open =
        new Dashboard(
            new DGenAdmin(memory),
            new Dashboard.Options(InetAddress.getByName("0.0.0.0"), 0, false, null, 0, 1000, 100),
            Clock.systemUTC())) {
      String token = open.token();
      assertThat(token).as("generated").isNotBlank().hasSizeGreaterThanOrEqualTo(32);
      String base = "http://127.0.0.1:" + open.uri().getPort();
      for (String path :
          new String[] {"/", "/static/live.js", "/tenant?t=shop/eu", "/?token=wrong"}) {
        HttpResponse<String> r = send(get(base + path));
        assertThat(r.statusCode()).as(path).isEqualTo(401);
        assertThat(r.body()).doesNotContain("orders");
      }
      HttpResponse<String> login = send(get(base + "/tenant?t=shop/eu&token=" + token));
      assertThat(login.statusCode()).isEqualTo(303);
      assertThat(login.headers().firstValue("Location")).hasValue("/tenant");
      String cookie = login.headers().firstValue("Set-Cookie").orElseThrow();
      assertThat(cookie)
          .startsWith("dgen_token=" + token + ";")
          .contains("HttpOnly")
          .contains("SameSite=Strict");
      HttpResponse<String> withCookie =
          send(get(base + "/tenant?t=shop/eu").header("Cookie", "dgen_token=" + token));
      assertThat(withCookie.statusCode()).isEqualTo(200);
      assertThat(withCookie.body()).contains("orders");
      assertThat(send(get(base + "/").header("Authorization", "Bearer " + token)).statusCode())
          .isEqualTo(200);
      assertThat(send(get(base + "/").header("Cookie", "dgen_token=" + token + "x")).statusCode())
          .isEqualTo(401);
      // bound elsewhere, any host name is served (the token is the guard)
      assertThat(send(get(base + "/").header("Authorization", "Bearer " + token)).body())
          .contains("shop/eu");
    }
  }

  @Test
  void aTokenLogin_redirectsOnlyToAPageOfThisDashboard_neverToAnotherSite() throws Exception {
    String token = "a-token-of-this-test-0123456789abcdef";
    try (Dashboard guarded =
        new Dashboard(
            new DGenAdmin(memory),
            new Dashboard.Options(InetAddress.getLoopbackAddress(), 0, false, token, 0, 1000, 100),
            Clock.systemUTC())) {
      int port = guarded.uri().getPort();
      String host = "127.0.0.1:" + port;
      // each path, as a Location, sends the browser to evil.example (it reads a backslash as a
      // slash and drops a tab), or splits the response's headers
      for (String target :
          new String[] {
            "////evil.example",
            "/%2Fevil.example",
            "/%2F/evil.example",
            "/./%2Fevil.example",
            "/%5Cevil.example",
            "/%5C%5Cevil.example",
            "/%09/evil.example",
            "/%0D%0ASet-Cookie:%20x=y",
          }) {
        Raw login = raw(port, target + "?token=" + token, host);
        assertThat(login.status()).as(target).isEqualTo(303);
        assertThat(login.location()).as(target).isEqualTo("/");
      }
      // no path at all (an authority): the JDK's server answers 404 before the dashboard sees it
      assertThat(raw(port, "//evil.example?token=" + token, host).location()).isIn(null, "/");
      // the dashboard's own pages are kept
      assertThat(raw(port, "/placement?t=shop/eu&token=" + token, host).location())
          .isEqualTo("/placement");
      assertThat(raw(port, "/static/live.js?token=" + token, host).location())
          .isEqualTo("/static/live.js");
      assertThat(raw(port, "/?token=" + token, host).location()).isEqualTo("/");
    }
  }

  @Test
  void theUiCommand_printsItsAddressAndToken_andStopsWhenInterrupted() throws Exception {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    AtomicInteger code = new AtomicInteger(-1);
    Thread serving =
        new Thread(
            () ->
                code.set(
                    Dgen.run(
                        new String[] {"ui", "--port", "0", "--bind", "0.0.0.0"},
                        new PrintWriter(out, true),
                        new PrintWriter(err, true),
                        CliRun.over(memory))));
    serving.start();
    org.awaitility.Awaitility.await()
        .atMost(Duration.ofSeconds(30))
        .until(() -> out.toString().contains("dgen ui: open "));
    Matcher m =
        Pattern.compile("dgen ui: open http://[^:]+:(\\d+)/\\?token=(\\S+)")
            .matcher(out.toString());
    assertThat(m.find()).as(out.toString()).isTrue();
    assertThat(out.toString()).contains("(read-only; --allow-writes allows actions)");
    String base = "http://127.0.0.1:" + m.group(1);
    assertThat(send(get(base + "/")).statusCode()).isEqualTo(401);
    assertThat(send(get(base + "/").header("Authorization", "Bearer " + m.group(2))).body())
        .contains("shop/eu");
    serving.interrupt();
    serving.join(30_000);
    assertThat(serving.isAlive()).isFalse();
    assertThat(code.get()).as(err.toString()).isZero();

    assertThat(
            CliRun.run(CliRun.over(memory), "ui", "--port", "70000")
                .fails(Dgen.USAGE, "--port")
                .code())
        .isEqualTo(Dgen.USAGE);
  }
}
