/**
 * An embedded durable {@link io.dgen.backend.Backend}: the memory backend's transaction engine
 * (FoundationDB's semantics) over a local RocksDB, one process per data directory. Start with
 * {@link io.dgen.backend.rocksdb.RocksDbBackend#open}.
 */
@NullMarked
package io.dgen.backend.rocksdb;

import org.jspecify.annotations.NullMarked;
