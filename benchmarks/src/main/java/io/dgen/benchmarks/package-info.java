/**
 * The DGen benchmark harness: a plain program ({@link io.dgen.benchmarks.Benchmarks}) that runs
 * each scenario on the in-memory backend or on FoundationDB ({@code --backend fdb}) and prints one
 * table of throughput, latency and machine-independent cost counters per message. See {@code
 * docs/performance.md}.
 */
@NullMarked
package io.dgen.benchmarks;

import org.jspecify.annotations.NullMarked;
