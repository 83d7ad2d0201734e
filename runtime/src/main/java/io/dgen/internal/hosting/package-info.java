/**
 * Servers addressed by id and placed on runtimes: the placement (membership, leased buckets,
 * hand-offs), the hosted kinds that load and evict their servers, and expiry.
 *
 * <p>May use: process, and what lies below it (see {@code ArchitectureTest} and {@code
 * docs/architecture.md}). Not an API: anything here may change in any release.
 */
@InternalApi
@NullMarked
package io.dgen.internal.hosting;

import io.dgen.InternalApi;
import org.jspecify.annotations.NullMarked;
