package io.dgen.internal.keys;

import com.google.common.collect.MapMaker;
import io.dgen.backend.Transaction;
import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentMap;
import java.util.function.Predicate;

/**
 * Per-transaction bookkeeping of pushes made in transactions the runtime does not own (the outbox)
 * and in its own: the user versions of versionstamped queue keys (distinct and increasing within
 * one transaction, so several pushes get distinct keys in push order), the doorbell rung in it
 * (once per server or reply slot, however many pushes), and, per server, whether an earlier attempt
 * of the same run already committed its pushes.
 *
 * <p>Threading: the scopes of foreign transactions sit in one concurrent map with weak keys
 * (compared by identity), shared by every process; a scope itself is locked only by the threads of
 * its one transaction.
 */
public final class UserVersions {

  private static final ConcurrentMap<Transaction, Scope> SCOPES =
      new MapMaker().weakKeys().makeMap();

  private static final class Scope {
    int next;
    final Map<ByteBuffer, Boolean> replayed = new HashMap<>();
    final Set<Long> rung = new HashSet<>();
  }

  private UserVersions() {}

  private static Scope scope(Transaction tx) {
    return SCOPES.computeIfAbsent(tx, k -> new Scope());
  }

  public static int next(Transaction tx) {
    if (tx instanceof TrackingTransaction own) {
      return own.nextUserVersion(); // the runtime's own transactions: no shared map, no lock
    }
    Scope s = scope(tx);
    synchronized (s) {
      if (s.next > 0xffff) {
        throw new IllegalStateException("more than 65,536 pushes in one transaction");
      }
      return s.next++;
    }
  }

  /**
   * For an outbox push into {@code tx}: whether an earlier attempt of this run committed the pushes
   * to server {@code server} (its root key), decided once per server and transaction by {@code
   * firstLook} (see {@link ServerEntry#alreadyCommitted}) and remembered for the transaction's
   * other pushes to it.
   */
  public static boolean alreadyCommitted(
      Transaction tx, byte[] server, Predicate<Transaction> firstLook) {
    Scope s = scope(tx);
    ByteBuffer key = ByteBuffer.wrap(server);
    synchronized (s) {
      Boolean known = s.replayed.get(key);
      if (known != null) {
        return known;
      }
      boolean committed = firstLook.test(tx);
      s.replayed.put(key, committed);
      return committed;
    }
  }

  /**
   * True the first time {@code wakeId} rings in {@code tx} (a wake log entry is then due), false
   * after: a transaction that pushes several messages to one server rings its doorbell once.
   */
  static boolean firstRing(Transaction tx, long wakeId) {
    if (tx instanceof TrackingTransaction own) {
      return own.firstRing(wakeId);
    }
    Scope s = scope(tx);
    synchronized (s) {
      return s.rung.add(wakeId);
    }
  }
}
