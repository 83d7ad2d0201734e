/**
 * The runtime's implementation: the key layout, the consume loop, the call protocol. No
 * compatibility guarantee: anything here may change in any release.
 */
@NullMarked
package io.dgen.internal;

import org.jspecify.annotations.NullMarked;
