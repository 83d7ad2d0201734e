/**
 * Timers: one-shot and recurring timers of a server, and the per-bucket schedulers that fire them.
 *
 * <p>May use: queue, commit, and what lies below them (see {@code ArchitectureTest} and {@code
 * docs/architecture.md}). Not an API: anything here may change in any release.
 */
@InternalApi
@NullMarked
package io.dgen.internal.timers;

import io.dgen.InternalApi;
import org.jspecify.annotations.NullMarked;
