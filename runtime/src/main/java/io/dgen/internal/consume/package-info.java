/**
 * Consuming: the consume loop, consumer batches (one transaction: pop, callbacks, state, replies),
 * groups of batches that share a transaction, the test kit's drain, and inline calls.
 *
 * <p>May use: lock, and what lies below it (see {@code ArchitectureTest} and {@code
 * docs/architecture.md}). Not an API: anything here may change in any release.
 */
@InternalApi
@NullMarked
package io.dgen.internal.consume;

import io.dgen.InternalApi;
import org.jspecify.annotations.NullMarked;
