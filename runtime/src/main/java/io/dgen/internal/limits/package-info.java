/**
 * Rate and concurrency limits shared by runtimes: their stored configuration, token buckets, shares
 * and gates.
 *
 * <p>May use: base, observe, codec (see {@code ArchitectureTest} and {@code docs/architecture.md}).
 * Not an API: anything here may change in any release.
 */
@InternalApi
@NullMarked
package io.dgen.internal.limits;

import io.dgen.InternalApi;
import org.jspecify.annotations.NullMarked;
