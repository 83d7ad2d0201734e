/**
 * Running a transaction exactly once in effect: retries, commit markers and their replay after
 * {@code commit_unknown_result}, bounded waits; the fence of a hosted server's transaction.
 *
 * <p>May use: keys, and what lies below it (see {@code ArchitectureTest} and {@code
 * docs/architecture.md}). Not an API: anything here may change in any release.
 */
@InternalApi
@NullMarked
package io.dgen.internal.commit;

import io.dgen.InternalApi;
import org.jspecify.annotations.NullMarked;
