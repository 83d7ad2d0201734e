/**
 * Running the user's behaviour: callbacks with their transaction context, {@code init}, and the
 * stand-in of a server whose code runs elsewhere.
 *
 * <p>May use: timers, and what lies below it (see {@code ArchitectureTest} and {@code
 * docs/architecture.md}). Not an API: anything here may change in any release.
 */
@InternalApi
@NullMarked
package io.dgen.internal.behaviour;

import io.dgen.InternalApi;
import org.jspecify.annotations.NullMarked;
