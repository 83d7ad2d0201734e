/**
 * The key layout: a server's and a tenant's keys, buckets, the server index entry, user versions,
 * stored timer entries and schedules, and the transaction that tracks what it wrote.
 *
 * <p>May use: base, observe, codec (see {@code ArchitectureTest} and {@code docs/architecture.md}).
 * Not an API: anything here may change in any release.
 */
@InternalApi
@NullMarked
package io.dgen.internal.keys;

import io.dgen.InternalApi;
import org.jspecify.annotations.NullMarked;
