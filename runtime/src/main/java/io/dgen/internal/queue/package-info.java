/**
 * A server's FIFO queue: pushes, pops, peeks, its type table, and the group commit of a runtime's
 * casts.
 *
 * <p>May use: commit, doorbell, and what lies below them (see {@code ArchitectureTest} and {@code
 * docs/architecture.md}). Not an API: anything here may change in any release.
 */
@InternalApi
@NullMarked
package io.dgen.internal.queue;

import io.dgen.InternalApi;
import org.jspecify.annotations.NullMarked;
