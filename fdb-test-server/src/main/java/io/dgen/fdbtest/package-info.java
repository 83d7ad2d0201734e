/**
 * Test support shared by the FoundationDB tests and the benchmarks, not part of the product: {@link
 * io.dgen.fdbtest.LocalFdbServer} starts a throwaway one-process FoundationDB cluster from a local
 * installation and stops it when the JVM exits, however it exits.
 */
@NullMarked
package io.dgen.fdbtest;

import org.jspecify.annotations.NullMarked;
