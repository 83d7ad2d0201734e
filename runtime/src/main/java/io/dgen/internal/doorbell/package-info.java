/**
 * The doorbell: one watch per bucket in use, the wake log read in order, and who is woken.
 *
 * <p>May use: keys, and what lies below it (see {@code ArchitectureTest} and {@code
 * docs/architecture.md}). Not an API: anything here may change in any release.
 */
@InternalApi
@NullMarked
package io.dgen.internal.doorbell;

import io.dgen.InternalApi;
import org.jspecify.annotations.NullMarked;
