package io.dgen;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.backend.Backend;

/**
 * What {@link DGenServer#handleLocked} gets: the backend (it runs outside any transaction, and may
 * run its own), the tenant and the server's identity.
 */
public interface DbContext {

  /** The backend the server lives in. */
  Backend backend();

  /** The server's tenant. */
  Tenant tenant();

  /** The server's identity tuple: for a hosted server, its kind's name followed by its id. */
  Tuple tuid();

  /** The server's id, in the shape its {@code init} received it: see {@link TxContext#id()}. */
  Object id();
}
