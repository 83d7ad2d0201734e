/**
 * Test support shared by the FoundationDB tests and the benchmarks, not part of the product: {@link
 * io.dgen.fdbtest.LocalFdbServer} starts a throwaway one-process FoundationDB cluster from a local
 * installation and stops it when the JVM exits, however it exits; {@link
 * io.dgen.fdbtest.LocalFdbCluster} starts several processes with replication, and kills and
 * restarts them by role for tests of a real cluster's faults.
 */
@NullMarked
package io.dgen.fdbtest;

import org.jspecify.annotations.NullMarked;
