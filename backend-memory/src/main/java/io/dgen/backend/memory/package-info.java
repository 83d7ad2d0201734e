/**
 * The in-memory backend: {@link io.dgen.backend.memory.MemoryBackend}, a multi-version store with
 * FoundationDB 7.3's transaction semantics (serializable optimistic concurrency, read-your-writes,
 * versionstamps, watches, limits and error codes), fault injection and cost counters. It is the
 * embedded default of DGen and the backend its tests run on. Everything except {@code
 * MemoryBackend} and its nested types is an implementation detail of this package.
 */
@NullMarked
package io.dgen.backend.memory;

import org.jspecify.annotations.NullMarked;
