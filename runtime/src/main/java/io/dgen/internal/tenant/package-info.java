/**
 * What a runtime runs for one tenant: its doorbell watcher, its buckets' timer schedulers and its
 * kinds' type tables.
 *
 * <p>May use: timers, and what lies below it (see {@code ArchitectureTest} and {@code
 * docs/architecture.md}). Not an API: anything here may change in any release.
 */
@InternalApi
@NullMarked
package io.dgen.internal.tenant;

import io.dgen.InternalApi;
import org.jspecify.annotations.NullMarked;
