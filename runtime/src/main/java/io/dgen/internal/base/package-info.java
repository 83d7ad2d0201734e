/**
 * What every component shares: the runtime's services, lifecycles, operation timeouts, batched
 * clears, the bound on batches in flight, pools and small future helpers.
 *
 * <p>May use: observe, codec (see {@code ArchitectureTest} and {@code docs/architecture.md}). Not
 * an API: anything here may change in any release.
 */
@InternalApi
@NullMarked
package io.dgen.internal.base;

import io.dgen.InternalApi;
import org.jspecify.annotations.NullMarked;
