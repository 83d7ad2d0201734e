package io.dgen.internal.idempotency;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.From;
import io.dgen.backend.KeyValue;
import io.dgen.backend.Transaction;
import io.dgen.internal.keys.KeptReplies;
import io.dgen.internal.keys.ServerKeys;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * One server's idempotency keys: the record {@code (tuid.., "i", key)} that a keyed push claims in
 * its own transaction, and their expiry index {@code (tuid.., "x", expirySecond, key)}, trimmed by
 * consumer batches.
 *
 * <p>A record holds the second it expires at, the id of the run that wrote it and, for a keyed
 * call, the call's kept reply ({@link KeptReplies}). The run id makes a claim idempotent without a
 * commit marker: an attempt that finds its own run's record knows an earlier attempt of it
 * committed (after {@code commit_unknown_result}) and does not push again. The check is exact — one
 * serializable read of one key — so two pushes of one key conflict and the second sees the first.
 *
 * <p>Never commits and never waits; stateless, thread-safe.
 */
final class IdempotencyKeys {

  /** The longest key, in UTF-8 bytes. */
  static final int MAX_KEY_BYTES = 256;

  /** The most expired keys one consumer batch removes. */
  static final int TRIM_LIMIT = 100;

  private static final byte[] EMPTY = new byte[0];

  /**
   * What a keyed push found: whether the key is this run's ({@code ours}), whether this attempt
   * wrote it ({@code created}: push now), and the kept call it names (null for a keyed cast).
   */
  record Claim(boolean ours, boolean created, @Nullable From call) {}

  private final ServerKeys keys;

  IdempotencyKeys(ServerKeys keys) {
    this.keys = keys;
  }

  /**
   * Checks a key before anything is stored.
   *
   * @throws IllegalArgumentException if null, empty or longer than {@link #MAX_KEY_BYTES} in UTF-8
   */
  static void check(@Nullable String key) {
    Objects.requireNonNull(key, "idempotencyKey must not be null");
    int bytes = key.getBytes(StandardCharsets.UTF_8).length;
    if (bytes == 0 || bytes > MAX_KEY_BYTES) {
      throw new IllegalArgumentException(
          "idempotencyKey must be 1 to "
              + MAX_KEY_BYTES
              + " bytes in UTF-8, was "
              + bytes
              + " bytes");
    }
  }

  /** Starts the one read a keyed push costs: the key's record (serializable). */
  CompletableFuture<byte @Nullable []> read(Transaction tx, String key) {
    return tx.getAsync(keys.idempotencyKey(key));
  }

  /**
   * Claims {@code key} unless a live record holds it: writes the record (expiring at {@code
   * expirySecond}, naming {@code call}) and its index entry, and removes the index entry of an
   * expired record it replaces.
   *
   * @param record the key's record, from {@link #read}
   */
  Claim claim(
      Transaction tx,
      String key,
      byte @Nullable [] record,
      long expirySecond,
      @Nullable From call,
      long nowMillis) {
    if (record != null) {
      Tuple r = Tuple.fromBytes(record);
      long expiry = r.getLong(0);
      if (!KeptReplies.expired(expiry, nowMillis)) {
        From prior = r.size() >= 4 ? new From(r.getLong(2), r.getString(3)) : null;
        return new Claim(tx.runId().equals(r.getUUID(1)), false, prior);
      }
      tx.clear(keys.expiry().pack(Tuple.from(expiry, key)));
    }
    Tuple value = Tuple.from(expirySecond, tx.runId());
    if (call != null) {
      value = value.add(call.slotSeconds()).add(call.slotId());
    }
    tx.set(keys.idempotencyKey(key), value.pack());
    tx.set(keys.expiry().pack(Tuple.from(expirySecond, key)), EMPTY);
    return new Claim(true, true, call);
  }

  /** Starts a snapshot read of up to {@link #TRIM_LIMIT} index entries expired at {@code now}. */
  CompletableFuture<List<KeyValue>> expired(Transaction tx, long nowMillis) {
    return tx.snapshot()
        .getRangeAsync(keys.expiry().range().begin, horizon(nowMillis), TRIM_LIMIT, false);
  }

  private byte[] horizon(long nowMillis) {
    return keys.expiry().pack(Tuple.from(TimeUnit.MILLISECONDS.toSeconds(nowMillis) + 1));
  }

  /**
   * Removes the keys of the {@link #expired} entries and every kept reply expired at {@code now}.
   * Each entry removed is read-conflicted: a push that re-used its key meanwhile (and so moved the
   * entry) aborts this transaction rather than lose its fresh record.
   */
  void trim(Transaction tx, List<KeyValue> expired, long nowMillis) {
    for (KeyValue kv : expired) {
      String key = keys.expiry().unpack(kv.key()).getString(1);
      tx.addReadConflictKey(kv.key());
      tx.clear(keys.idempotencyKey(key));
      tx.clear(kv.key());
    }
    long nowSecond = TimeUnit.MILLISECONDS.toSeconds(nowMillis);
    tx.clearRange(keys.kept().range().begin, keys.kept().pack(Tuple.from(nowSecond + 1)));
  }
}
