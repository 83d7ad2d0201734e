package io.dgen.internal.commit;

import io.dgen.backend.Transaction;
import java.util.concurrent.CompletableFuture;
import org.jspecify.annotations.Nullable;

/**
 * What a hosted server's transaction reads besides its own keys: its bucket's lease, which must
 * still name this runtime at the epoch it was loaded under. A batch or inline call of a deposed
 * holder commits nothing.
 */
public interface Fence {

  /**
   * Reads the lease in {@code tx}; the future fails with {@link Deposed} if it no longer names this
   * runtime at its epoch.
   */
  CompletableFuture<@Nullable Void> check(Transaction tx);

  /** A transaction read a lease that no longer names its runtime at its epoch. */
  final class Deposed extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** A deposed holder's failure, saying which lease moved. */
    public Deposed(String message) {
      super(message, null, false, false);
    }
  }
}
