/**
 * The backend SPI: a small, synchronous-first transactional key-value contract modelled on
 * FoundationDB, over which the DGen runtime is written.
 *
 * <p>{@link io.dgen.backend.Backend} runs transactions with an automatic retry loop and hands out
 * tenant directories; {@link io.dgen.backend.Transaction} reads (serializably or as snapshots) and
 * writes inside one attempt; {@link io.dgen.backend.BackendException} carries FoundationDB's
 * numeric error code. Two implementations exist: {@code io.dgen.backend.memory.MemoryBackend} (in
 * memory, FoundationDB's semantics, the embedded default and the test backend) and {@code
 * io.dgen.backend.fdb.FdbBackend} (FoundationDB itself). Both pass the same conformance suite, so a
 * program that is correct on one is correct on the other.
 *
 * <p>Keys and values are byte arrays compared as unsigned bytes; every range is half-open {@code
 * [begin, end)}. Byte arrays passed in are not copied and must not be modified afterwards; arrays
 * handed out belong to the caller.
 */
@NullMarked
package io.dgen.backend;

import org.jspecify.annotations.NullMarked;
