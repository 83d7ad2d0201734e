/**
 * Lock mode and dead letters: the fenced lock's coordinator, and the records, requeue and purge of
 * failed messages.
 *
 * <p>May use: behaviour, and what lies below it (see {@code ArchitectureTest} and {@code
 * docs/architecture.md}). Not an API: anything here may change in any release.
 */
@InternalApi
@NullMarked
package io.dgen.internal.lock;

import io.dgen.InternalApi;
import org.jspecify.annotations.NullMarked;
