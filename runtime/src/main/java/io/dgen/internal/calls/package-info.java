/**
 * Calls: reply slots and the protocol that waits for a reply (bounded, woken by the doorbell).
 *
 * <p>May use: queue, commit, and what lies below them (see {@code ArchitectureTest} and {@code
 * docs/architecture.md}). Not an API: anything here may change in any release.
 */
@InternalApi
@NullMarked
package io.dgen.internal.calls;

import io.dgen.InternalApi;
import org.jspecify.annotations.NullMarked;
