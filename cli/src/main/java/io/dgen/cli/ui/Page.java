package io.dgen.cli.ui;

import org.jspecify.annotations.Nullable;

/**
 * One route of the dashboard. Adding a page is a class implementing this and one line in {@link
 * Dashboard#pages}: the dispatcher checks the host, the token and (for POST) the CSRF token before
 * calling it, and turns its {@link Http.Failure}s and backend errors into error pages.
 */
interface Page {

  /** The path it answers, e.g. {@code /server}. */
  String path();

  /** {@code GET} or {@code POST}. */
  default String method() {
    return "GET";
  }

  /** Its title in the navigation bar, or null for a page reached only by links. */
  default @Nullable String nav() {
    return null;
  }

  /**
   * Answers a request.
   *
   * @throws Http.Failure to answer with an error page
   */
  Http.Response handle(Http.Request request);
}
