package io.dgen.internal;

import io.dgen.backend.Transaction;
import java.util.Collections;
import java.util.Map;
import java.util.WeakHashMap;

/**
 * Hands out the user versions of versionstamped queue keys: distinct and increasing within one
 * transaction, so several pushes in one transaction get distinct keys in push order.
 */
final class UserVersions {

  private static final Map<Transaction, int[]> NEXT =
      Collections.synchronizedMap(new WeakHashMap<>());

  private UserVersions() {}

  static int next(Transaction tx) {
    int[] n = NEXT.computeIfAbsent(tx, k -> new int[1]);
    synchronized (n) {
      if (n[0] > 0xffff) {
        throw new IllegalStateException("more than 65,536 pushes in one transaction");
      }
      return n[0]++;
    }
  }
}
