package io.dgen.cli.ui;

import com.sun.net.httpserver.Headers;
import com.sun.net.httpserver.HttpExchange;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/** The dashboard's requests and responses, over the JDK's {@code com.sun.net.httpserver}. */
final class Http {

  /** The largest form body read; every form of the dashboard is far smaller. */
  static final int MAX_BODY = 64 * 1024;

  private Http() {}

  /**
   * A request: method, path, query parameters, form fields (POST), headers.
   *
   * @param cookies the cookies the browser sent
   */
  record Request(
      String method,
      String path,
      Map<String, String> query,
      Map<String, String> form,
      Headers headers,
      Map<String, String> cookies) {

    static Request of(HttpExchange exchange) throws IOException {
      URI uri = exchange.getRequestURI();
      Map<String, String> form = Map.of();
      if (exchange.getRequestMethod().equals("POST")) {
        try (InputStream in = exchange.getRequestBody()) {
          byte[] body = in.readNBytes(MAX_BODY + 1);
          if (body.length > MAX_BODY) {
            throw new Failure(413, "the form is too large");
          }
          form = params(new String(body, StandardCharsets.UTF_8));
        }
      }
      Map<String, String> cookies = new LinkedHashMap<>();
      for (String header :
          exchange.getRequestHeaders().getOrDefault("Cookie", java.util.List.of())) {
        for (String pair : header.split(";")) {
          int eq = pair.indexOf('=');
          if (eq > 0) {
            cookies.putIfAbsent(pair.substring(0, eq).strip(), pair.substring(eq + 1).strip());
          }
        }
      }
      return new Request(
          exchange.getRequestMethod(),
          uri.getPath(),
          params(uri.getRawQuery()),
          form,
          exchange.getRequestHeaders(),
          cookies);
    }

    /** A query parameter, else a form field, else null. */
    @Nullable String param(String name) {
      String q = query.get(name);
      return q != null ? q : form.get(name);
    }

    /**
     * A parameter that must be present.
     *
     * @throws Failure 400 if it is missing or blank
     */
    String required(String name) {
      String v = param(name);
      if (v == null || v.isBlank()) {
        throw new Failure(400, "missing parameter '" + name + "'");
      }
      return v;
    }

    @Nullable String header(String name) {
      return headers.getFirst(name);
    }
  }

  /**
   * A response: status, content type, body, extra headers.
   *
   * @param headers extra headers, e.g. Location or Set-Cookie
   */
  record Response(int status, String contentType, byte[] body, Map<String, String> headers) {

    static Response html(int status, String html) {
      return new Response(
          status, "text/html; charset=utf-8", html.getBytes(StandardCharsets.UTF_8), Map.of());
    }

    static Response json(String json) {
      return new Response(
          200, "application/json; charset=utf-8", json.getBytes(StandardCharsets.UTF_8), Map.of());
    }

    /** 303 See Other: after a form, the browser GETs {@code location}. */
    static Response redirect(String location) {
      return new Response(
          303, "text/plain; charset=utf-8", new byte[0], Map.of("Location", location));
    }

    Response withHeader(String name, String value) {
      Map<String, String> h = new LinkedHashMap<>(headers);
      h.put(name, value);
      return new Response(status, contentType, body, h);
    }
  }

  /** A request refused or failed with a status and a message shown to the user (escaped). */
  static final class Failure extends RuntimeException {
    private final int status;

    Failure(int status, String message) {
      super(message, null, false, false);
      this.status = status;
    }

    int status() {
      return status;
    }
  }

  /** Decodes {@code a=1&b=2} (the first value of a repeated name wins). */
  static Map<String, String> params(@Nullable String raw) {
    Map<String, String> out = new LinkedHashMap<>();
    if (raw == null || raw.isEmpty()) {
      return out;
    }
    for (String pair : raw.split("&")) {
      if (pair.isEmpty()) {
        continue;
      }
      int eq = pair.indexOf('=');
      String name = eq < 0 ? pair : pair.substring(0, eq);
      String value = eq < 0 ? "" : pair.substring(eq + 1);
      try {
        out.putIfAbsent(
            URLDecoder.decode(name, StandardCharsets.UTF_8),
            URLDecoder.decode(value, StandardCharsets.UTF_8));
      } catch (IllegalArgumentException e) {
        throw new Failure(400, "malformed parameter encoding");
      }
    }
    return out;
  }
}
