/**
 * A server's process ({@code ServerProcess}): the handle behind {@code ServerRef}, with its
 * components wired bottom-up from the packages below ({@code ProcessParts}), the routes of its
 * calls ({@code CallRouter}) and its transactions ({@code ProcessTransactions}); the registry of
 * live started processes; what a process needs of a hosted kind ({@code ProcessKind}) and of its
 * runtime ({@code ProcessContext}).
 *
 * <p>May use: consume, and what lies below it (see {@code ArchitectureTest} and {@code
 * docs/architecture.md}). Not an API: anything here may change in any release.
 */
@InternalApi
@NullMarked
package io.dgen.internal.process;

import io.dgen.InternalApi;
import org.jspecify.annotations.NullMarked;
