/**
 * The FoundationDB backend: {@link io.dgen.backend.fdb.FdbBackend}, a thin adapter from the DGen
 * backend SPI ({@link io.dgen.backend}) to the FoundationDB Java client (fdb-java 7.3).
 *
 * <p>Tenants are directories of FoundationDB's directory layer; transactions run in FoundationDB's
 * own retry loop ({@code onError}); FoundationDB errors surface as {@link
 * io.dgen.backend.BackendException} with FoundationDB's numeric codes. Only {@code FdbBackend} is
 * public; everything else in this package is an implementation detail. The native client library
 * ({@code libfdb_c}) is loaded when the first {@code FdbBackend} is opened and never before, so a
 * program that only uses the memory backend does not need it installed. Installation, cluster files
 * and limits are described in {@code docs/operations.md}.
 */
@NullMarked
package io.dgen.backend.fdb;

import org.jspecify.annotations.NullMarked;
