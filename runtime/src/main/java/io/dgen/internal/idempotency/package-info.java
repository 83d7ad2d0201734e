/**
 * Idempotency keys and kept replies, and the sweeper of what dead runs, dead callers and ended
 * retention windows leave behind.
 *
 * <p>May use: calls, and what lies below it (see {@code ArchitectureTest} and {@code
 * docs/architecture.md}). Not an API: anything here may change in any release.
 */
@InternalApi
@NullMarked
package io.dgen.internal.idempotency;

import io.dgen.InternalApi;
import org.jspecify.annotations.NullMarked;
