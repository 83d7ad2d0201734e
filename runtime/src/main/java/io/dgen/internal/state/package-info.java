/**
 * A server's state: read by version, cached, written as small changes.
 *
 * <p>May use: commit, and what lies below it (see {@code ArchitectureTest} and {@code
 * docs/architecture.md}). Not an API: anything here may change in any release.
 */
@InternalApi
@NullMarked
package io.dgen.internal.state;

import io.dgen.InternalApi;
import org.jspecify.annotations.NullMarked;
