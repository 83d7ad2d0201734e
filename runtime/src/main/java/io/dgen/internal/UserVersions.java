package io.dgen.internal;

import com.google.common.collect.MapMaker;
import io.dgen.backend.Futures;
import io.dgen.backend.Transaction;
import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentMap;
import org.jspecify.annotations.Nullable;

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
final class UserVersions {

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

  static int next(Transaction tx) {
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
   * For an outbox push into {@code tx}: true if an earlier attempt of this run committed the pushes
   * to this server (so this attempt must not push again); otherwise writes the server's commit
   * marker into {@code tx} (once) and returns false. The first time per server and transaction it
   * also requires the server to exist ({@link ServerEntry#require}, read together with the marker;
   * a hosted server's absent entry is written idle).
   *
   * @throws io.dgen.ServerStoppedException if the server was killed
   */
  static boolean alreadyCommitted(Transaction tx, ServerKeys keys, ServerEntry entry) {
    Scope s = scope(tx);
    ByteBuffer server = ByteBuffer.wrap(keys.root().getKey());
    synchronized (s) {
      Boolean known = s.replayed.get(server);
      if (known != null) {
        return known;
      }
      CompletableFuture<@Nullable Void> live = entry.require(tx);
      byte[] marker = keys.marker(tx.runId());
      boolean committed = tx.attempt() > 1 && tx.get(marker) != null;
      Futures.join(live);
      if (!committed) {
        tx.set(marker, new byte[0]);
      }
      s.replayed.put(server, committed);
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
