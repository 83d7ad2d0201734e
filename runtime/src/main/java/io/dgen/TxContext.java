package io.dgen;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.backend.Transaction;

/**
 * What a {@code handle*Tx} callback gets besides its message: the transaction it runs in, so it can
 * read and write other keys of the tenant atomically with the state change.
 *
 * <p>The transaction may be retried (the callback then runs again) and belongs to the runtime: do
 * not keep it after the callback returns. Write only under {@link Tenant#subspace()} outside the
 * server's own keys ({@link Tenant#subspace()} {@code .subspace(tuid)} belongs to the runtime).
 */
public interface TxContext {

  /** The transaction the callback runs in. */
  Transaction transaction();

  /** The server's tenant. */
  Tenant tenant();

  /** The server's identity tuple. */
  Tuple tuid();
}
