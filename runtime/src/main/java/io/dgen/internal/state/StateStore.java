package io.dgen.internal.state;

import com.apple.foundationdb.subspace.Subspace;
import com.apple.foundationdb.tuple.ByteArrayUtil;
import io.dgen.ServerStoppedException;
import io.dgen.StateTooLargeException;
import io.dgen.UndecodableDataException;
import io.dgen.backend.BackendException;
import io.dgen.backend.Futures;
import io.dgen.backend.KeyValue;
import io.dgen.backend.ReadTransaction;
import io.dgen.backend.Transaction;
import io.dgen.internal.codec.Serde;
import io.dgen.internal.codec.StateCodec;
import io.dgen.internal.codec.StateTag;
import io.dgen.internal.codec.StoredState;
import io.dgen.internal.codec.TypeNames;
import io.dgen.internal.commit.CommitRunner;
import io.dgen.internal.keys.ServerEntry;
import io.dgen.internal.keys.ServerKeys;
import io.dgen.internal.keys.TrackingTransaction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.jspecify.annotations.Nullable;
import tools.jackson.databind.JavaType;

/**
 * One server's durable state as this process sees it: loading it (from the cache while the version
 * key still matches), decoding it to the state type, writing it as a diff, the version key, and the
 * cache itself.
 *
 * <p>Never commits (callers hand it their transaction) and never runs callbacks.
 *
 * <p>Threading: the cache is an immutable snapshot in a volatile field; whoever commits last
 * publishes it, and a stale cache is merely a miss. The miss streak is touched only by the consume
 * loop, which never runs concurrently with itself. Every load hands out a state no other callback
 * holds, unless the codec found it deeply immutable (then all share one decoded instance): the
 * consume loop, inline calls and priority messages load from the same cache at the same time.
 *
 * @param <S> the state type
 */
public final class StateStore<S> implements CommitRunner.Observer {

  private static final byte[] EMPTY = new byte[0];

  /** FoundationDB's transaction size limit ({@code transaction_too_large}, 2101). */
  public static final long TRANSACTION_LIMIT = 10_000_000;

  /** Room kept after a state write for what its transaction writes next. */
  static final long MARGIN = 100_000;

  /**
   * The state as read in a transaction, and what is stored (the base of the next diff). For a
   * hosted server with no stored state yet, both are null ({@link #absent}): its first message
   * creates it. {@code stamp} is the version key as read: a later read that finds the same stamp
   * finds the same state (every state write changes it); null with no state.
   */
  public record Loaded<S>(
      @Nullable StoredState stored,
      @Nullable S state,
      @Nullable String tag,
      byte @Nullable [] stamp) {
    /** Whether there is no stored state (a hosted server not created yet). */
    public boolean absent() {
      return stored == null;
    }
  }

  /** A state write as a commit body's value, so that the commit publishes it. */
  public record Written(@Nullable StoredState written) implements CommitRunner.WritesState {}

  private record Cached(byte[] stamp, StoredState stored, @Nullable String tag) {}

  private final ServerKeys keys;
  private final StateCodec codec;
  private final JavaType stateType;
  private final StateTag stateTag;
  private final Serde serde;
  private final boolean caching;
  private final boolean createdByFirstMessage;
  private final String context;

  private final @Nullable ServerEntry entry;
  private volatile @Nullable Cached cache;
  private int missStreak;

  /**
   * @param createdByFirstMessage a hosted server's: no stored state loads as {@link Loaded#absent}
   *     rather than failing (its first message runs {@code init})
   * @param entry the server's entry, read with every state read the cache did not validate, so that
   *     a process never runs its callbacks on another incarnation's state; null for none
   */
  public StateStore(
      ServerKeys keys,
      StateCodec codec,
      Serde serde,
      JavaType stateType,
      boolean caching,
      boolean createdByFirstMessage,
      @Nullable ServerEntry entry,
      String context) {
    this.keys = keys;
    this.codec = codec;
    this.serde = serde;
    this.stateType = stateType;
    this.stateTag = new StateTag(stateType.getRawClass(), serde.migrations());
    this.caching = caching;
    this.createdByFirstMessage = createdByFirstMessage;
    this.entry = entry;
    this.context = context;
  }

  /**
   * Writes the initial state unless a state exists and {@code reset} is false.
   *
   * @return the write, or null if the stored state wins
   */
  public @Nullable Written initialize(Transaction tx, S initial, boolean reset) {
    byte[] version = tx.get(keys.versionKey());
    if (version != null && !reset) {
      return null;
    }
    StoredState stored =
        codec.write(tx, keys.state(), null, initial, stateType, () -> budgetLeft(tx));
    writeTag(tx, null, true);
    tx.setVersionstampedValue(keys.versionKey(), EMPTY);
    return new Written(stored);
  }

  /**
   * Whether {@code version}, a version key read by {@link #prefetchVersion} that has completed,
   * validates the cached state: nothing wrote the state since this process last read or wrote it
   * (so it is still the server this process started in).
   */
  public boolean validates(@Nullable CompletableFuture<byte @Nullable []> version) {
    Cached c = cache;
    if (c == null || version == null || !version.isDone() || version.isCompletedExceptionally()) {
      return false;
    }
    byte[] v = version.join();
    return v != null && Arrays.equals(v, c.stamp());
  }

  /** Whether a load reads the state: no cached state may save the read. */
  public boolean cold() {
    return !caching || cache == null;
  }

  /**
   * Starts reading the version key, which validates the cached state, if the cache is on (and, with
   * {@code onlyWhenWarm}, holds a state): the read then overlaps the caller's other reads.
   */
  public @Nullable CompletableFuture<byte @Nullable []> prefetchVersion(
      Transaction tx, boolean onlyWhenWarm) {
    return caching && (!onlyWhenWarm || cache != null) ? tx.getAsync(keys.versionKey()) : null;
  }

  /**
   * The state as read in {@code tx}: from the cache when the version key still matches.
   *
   * @param prefetchedVersion the version key's read, if started already
   * @param consumer whether the consume loop asks (it counts the misses)
   * @throws ServerStoppedException if there is no state (the server was killed), unless the server
   *     is created by its first message ({@link Loaded#absent})
   * @throws UndecodableDataException if the stored state does not decode as the state type
   */
  public Loaded<S> load(
      Transaction tx,
      @Nullable CompletableFuture<byte @Nullable []> prefetchedVersion,
      boolean consumer) {
    return Futures.join(loadAsync(tx, prefetchedVersion, consumer));
  }

  /**
   * {@link #load} without waiting: completes at once on a cache hit whose version key was read
   * already, else when the reads it needs (the version key, the state's range) are in. Fails with
   * the exceptions {@code load} throws.
   */
  public CompletableFuture<Loaded<S>> loadAsync(
      Transaction tx,
      @Nullable CompletableFuture<byte @Nullable []> prefetchedVersion,
      boolean consumer) {
    Cached c = caching ? cache : null;
    if (c == null) {
      return readState(tx);
    }
    CompletableFuture<byte @Nullable []> version =
        prefetchedVersion != null ? prefetchedVersion : tx.getAsync(keys.versionKey());
    return version.thenCompose(
        v -> {
          if (v != null && Arrays.equals(v, c.stamp())) {
            if (consumer) {
              missStreak = 0;
            }
            return CompletableFuture.completedFuture(
                new Loaded<>(c.stored(), decode(c.stored(), c.tag()), c.tag(), v));
          }
          if (consumer) {
            missStreak++;
          }
          return readState(tx);
        });
  }

  private CompletableFuture<Loaded<S>> readState(Transaction tx) {
    Subspace all = keys.stateAndTag();
    // A state not validated by the cache may be another incarnation's (the server was killed and
    // started again since this process started): the server's entry tells, in the same round.
    CompletableFuture<@Nullable Void> ours =
        entry != null ? entry.current(tx) : CompletableFuture.completedFuture(null);
    return tx.getRangeAsync(all.range().begin, all.range().end, ReadTransaction.UNLIMITED, false)
        .thenCombine(ours, (found, same) -> found)
        .thenApply(
            found -> {
              List<KeyValue> rows = new ArrayList<>(found.size());
              String tag = null;
              byte[] stamp = null;
              for (KeyValue kv : found) {
                if (Arrays.equals(kv.key(), keys.stateTagKey())) {
                  tag = new String(kv.value(), StandardCharsets.UTF_8);
                } else if (Arrays.equals(kv.key(), keys.versionKey())) {
                  stamp = kv.value();
                } else {
                  rows.add(kv);
                }
              }
              StoredState stored;
              try {
                stored = codec.decode(keys.state(), rows);
              } catch (UndecodableDataException e) {
                throw e.at(context, null);
              }
              if (stored == null && createdByFirstMessage) {
                return new Loaded<S>(null, null, null, null);
              }
              if (stored == null) {
                throw new ServerStoppedException(
                    "server has no durable state (it was killed or never started): " + context);
              }
              return new Loaded<>(stored, decode(stored, tag), tag, stamp);
            });
  }

  /**
   * What a transaction that wrote {@code written} (null: nothing changed) from {@code state} over
   * {@code before} has loaded now: the base of its next write of this state, in the same
   * transaction (several steps of atomic work on one server).
   */
  public Loaded<S> after(Loaded<S> before, @Nullable StoredState written, S state) {
    return written == null
        ? new Loaded<>(before.stored(), state, before.tag(), before.stamp())
        : new Loaded<>(written, state, stateTag.current(), null);
  }

  /**
   * A copy of {@code loaded}'s state that no callback holds (the codec's shared instance of a
   * deeply immutable state), for a read-only view; null for a server not created yet.
   */
  public @Nullable S copy(Loaded<S> loaded) {
    StoredState stored = loaded.stored();
    return stored == null ? null : decode(stored, loaded.tag());
  }

  /**
   * The state for a callback: the codec's shared instance of a deeply immutable state, or a fresh
   * decode that no other callback sees; a state stored under an older tag, migrated first.
   */
  @SuppressWarnings("unchecked") // the codec decodes as stateType
  private S decode(StoredState stored, @Nullable String tag) {
    TypeNames.Tag t = tag == null ? null : TypeNames.parse(tag);
    try {
      if ((tag == null || tag.equals(stateTag.current())) && !stateTag.migrates(tag)) {
        return (S) codec.state(stored, stateType);
      }
      return serde.fromTree(stateTag.upcast(tag, stored.tree()), stateType);
    } catch (UndecodableDataException e) {
      throw e.at(context, ByteArrayUtil.printable(keys.state().getKey()));
    } catch (RuntimeException e) {
      throw new UndecodableDataException(
              "stored state does not decode as " + stateType + ": " + e.getMessage(),
              t == null ? TypeNames.name(stateType.getRawClass()) : t.name(),
              t == null ? 1 : t.version(),
              e)
          .at(context, ByteArrayUtil.printable(keys.state().getKey()));
    }
  }

  /**
   * Writes the state's type tag if it is not the one stored ({@code stored}), or, with {@code
   * fresh} (the state was written from scratch), clears one an unannotated state type leaves.
   *
   * @return whether it wrote
   */
  private boolean writeTag(Transaction tx, @Nullable String stored, boolean fresh) {
    String current = stateTag.current();
    if (current == null) {
      if (fresh) {
        tx.clear(keys.stateTagKey());
      }
      return false;
    }
    if (!fresh && !stateTag.stale(stored)) {
      return false;
    }
    tx.set(keys.stateTagKey(), current.getBytes(StandardCharsets.UTF_8));
    return true;
  }

  /**
   * Writes {@code state} as a diff against what {@code loaded} read, within what the transaction
   * has left ({@link #budgetLeft}).
   *
   * @return what is stored now, or null if nothing changed
   * @throws io.dgen.StateTooLargeException if the write would not fit in the transaction
   */
  public @Nullable StoredState write(Transaction tx, Loaded<S> loaded, S state) {
    StoredState written;
    try {
      written =
          codec.write(tx, keys.state(), loaded.stored(), state, stateType, () -> budgetLeft(tx));
    } catch (StateTooLargeException e) {
      long used = tx.getApproximateSize();
      if (used + MARGIN < TRANSACTION_LIMIT) {
        throw e;
      }
      // Full before the state came: the transaction is too large, whatever the state.
      BackendException full =
          new BackendException(
              BackendException.TRANSACTION_TOO_LARGE,
              "the transaction holds "
                  + used
                  + " bytes before its state write, leaving no room under FoundationDB's "
                  + TRANSACTION_LIMIT
                  + "-byte limit; nothing was committed: "
                  + context);
      full.addSuppressed(e);
      throw full;
    }
    // A state read under an older tag stores the current one: the next load reads it as is.
    boolean tagged = writeTag(tx, loaded.tag(), loaded.stored() == null);
    if (written == loaded.stored() && !tagged) {
      return null;
    }
    tx.setVersionstampedValue(keys.versionKey(), EMPTY);
    return written;
  }

  /**
   * The bytes a state write may use in {@code tx}: FoundationDB's 10,000,000 less what the
   * transaction holds already (a batch's items, replies and the callbacks' own writes, with their
   * conflict ranges) and less {@link #MARGIN} for what follows the state write (the version key,
   * the pops' count, a sweep, the commit marker). Asked once per state write that changes
   * something; {@link Transaction#getApproximateSize()} is not free (a call into FoundationDB's
   * client that this thread would wait for), so a transaction whose tracked size bound leaves the
   * whole default budget is answered from the bound: a value at least the codec's budget, so the
   * codec's own budget is the one that applies, exactly as with the real size.
   */
  public static long budgetLeft(Transaction tx) {
    if (tx instanceof TrackingTransaction own) {
      long bound = own.sizeBound();
      if (bound >= 0
          && bound <= TRANSACTION_LIMIT - MARGIN - StateTooLargeException.DEFAULT_BUDGET) {
        // Far from the limit: the codec's own budget binds, and the client is not asked.
        return TRANSACTION_LIMIT - MARGIN - bound;
      }
    }
    return TRANSACTION_LIMIT - tx.getApproximateSize() - MARGIN;
  }

  /** Consecutive consumer loads that found the cache stale: another consumer is active. */
  public int missStreak() {
    return missStreak;
  }

  /** Forgets the cached state: the next load reads it. */
  public void invalidate() {
    cache = null;
  }

  @Override
  public void stateCommitted(StoredState written, byte[] stamp) {
    if (caching) {
      // Whatever this process writes is stored under the current tag (none if not annotated).
      cache = new Cached(stamp, written, stateTag.current());
    }
  }

  @Override
  public void replayed() {
    invalidate(); // the committed state's stamp is not known here
  }
}
