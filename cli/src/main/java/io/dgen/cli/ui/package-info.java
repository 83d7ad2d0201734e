/**
 * {@code dgen ui}: a web dashboard over the admin API ({@link io.dgen.admin}), served by the JDK's
 * HTTP server. {@link io.dgen.cli.ui.Dashboard} serves and guards (host, token, CSRF, headers);
 * each page is a {@code Page} writing HTML only through the escaping {@code Html}; work that needs
 * a whole tenant runs in {@code TenantScans}, in the background and capped, never in a request.
 */
@NullMarked
package io.dgen.cli.ui;

import org.jspecify.annotations.NullMarked;
