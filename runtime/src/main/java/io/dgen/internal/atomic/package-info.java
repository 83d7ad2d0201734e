/**
 * Atomic work across servers ({@code DGen.transact}): several servers' callbacks run inline in one
 * transaction.
 *
 * <p>May use: process, and what lies below it (see {@code ArchitectureTest} and {@code
 * docs/architecture.md}). Not an API: anything here may change in any release.
 */
@InternalApi
@NullMarked
package io.dgen.internal.atomic;

import io.dgen.InternalApi;
import org.jspecify.annotations.NullMarked;
