/**
 * Observability: metrics (Micrometer), tracing (OpenTelemetry), log context and the backend that
 * counts what it runs.
 *
 * <p>May use: codec (see {@code ArchitectureTest} and {@code docs/architecture.md}). Not an API:
 * anything here may change in any release.
 */
@InternalApi
@NullMarked
package io.dgen.internal.observe;

import io.dgen.InternalApi;
import org.jspecify.annotations.NullMarked;
