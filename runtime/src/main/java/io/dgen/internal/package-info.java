/**
 * The runtime's composition root: {@code RuntimeCore} builds the services ({@code
 * base.RuntimeServices}) and every component below, and hands each what it uses, never itself;
 * {@code RuntimeSettings} is what {@code DGen.Builder} configured.
 *
 * <p>May use: every package below (see {@code ArchitectureTest} and {@code docs/architecture.md}).
 * Not an API: anything here may change in any release.
 */
@InternalApi
@NullMarked
package io.dgen.internal;

import io.dgen.InternalApi;
import org.jspecify.annotations.NullMarked;
