package io.dgen.backend.memory;

import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;

/**
 * A {@link Storage} that also serves reads, so that the engine keeps in memory only the versions of
 * the keys written recently instead of every key: the storage of {@code
 * io.dgen.backend.rocksdb.RocksDbBackend}.
 *
 * <p>With a paged storage, {@link #recover} hands no keys to the engine (it only returns the newest
 * durable version). The engine keeps, per key written in the last few seconds, the chain of its
 * versions, and forgets a chain once every reader's version is at or above its newest version (that
 * version is then durable and visible in every {@link View} a reader holds). A read at read version
 * {@code rv} takes the newest version {@code <= rv} of the key's chain if the chain has one, and
 * otherwise asks the reader's {@link View}, which shows exactly the commits up to {@code rv}.
 *
 * <p>The engine does not know every key of a cleared range: it asks the storage for them ({@link
 * #latestKeys}) and appends a point delete each, or, for a range of many keys, the range itself
 * ({@link #append(long, List, List, List, List)}).
 */
public interface PagedStorage extends Storage {

  /**
   * The newest appended value of {@code key}, durable or not. Called under the engine's commit
   * lock, where it is the value as of the newest commit version handed out.
   *
   * @param key the key
   * @return its value, or null if absent
   */
  byte @Nullable [] latest(byte[] key);

  /**
   * How many bytes of chains the engine keeps in the heap as a cache of the storage (the newest
   * values of keys written or read recently), beyond the versions its readers need. Called once.
   *
   * @return the budget in bytes
   */
  long heapCacheBytes();

  /**
   * The keys of {@code [begin, end)} in the newest appended state, durable or not, ascending, at
   * most {@code limit} of them. Called under the engine's commit lock, for a range clear: the
   * engine writes a point delete for each key when there are few (range deletes make every later
   * read of RocksDB's memtable slower), and a range clear otherwise.
   *
   * @param begin the first key
   * @param end the end key (exclusive)
   * @param limit the most keys to return
   * @return the keys, at most {@code limit}
   */
  List<byte[]> latestKeys(byte[] begin, byte[] end, int limit);

  /**
   * Appends one committed batch: first the range clears ({@code [clearBegins[i], clearEnds[i])}),
   * then the point writes, as {@link #append(long, List, List)}.
   *
   * @param version the commit version
   * @param clearBegins the cleared ranges' first keys
   * @param clearEnds the cleared ranges' end keys (exclusive)
   * @param keys the written keys
   * @param values their values ({@code null}: cleared)
   */
  void append(
      long version,
      List<byte[]> clearBegins,
      List<byte[]> clearEnds,
      List<byte[]> keys,
      List<byte @Nullable []> values);

  @Override
  default void append(long version, List<byte[]> keys, List<byte @Nullable []> values) {
    append(version, List.of(), List.of(), keys, values);
  }

  /**
   * The view of the newest durable version, retained for the caller (who releases it): it shows
   * exactly the commits up to {@link View#version()}, which is at or above every version {@link
   * #awaitDurable} or {@link #durableAsync} returned before.
   *
   * @return a retained view
   */
  View view();

  /**
   * The committed data exactly as of one version (a RocksDB snapshot, for instance), reference
   * counted: the engine holds one reference per read epoch and one per reader, and the storage
   * frees the view's resources when the last is released.
   */
  abstract class View {
    private final long version;
    private final AtomicInteger refs = new AtomicInteger(1);

    /**
     * A view at {@code version}, with one reference held by its creator.
     *
     * @param version the newest commit version the view shows
     */
    protected View(long version) {
      this.version = version;
    }

    /**
     * The newest commit version this view shows.
     *
     * @return the version
     */
    public final long version() {
      return version;
    }

    /**
     * Takes a reference, unless the view was already freed.
     *
     * @return false if the view is freed (its reader must not use it)
     */
    public final boolean retain() {
      for (; ; ) {
        int r = refs.get();
        if (r <= 0) {
          return false;
        }
        if (refs.compareAndSet(r, r + 1)) {
          return true;
        }
      }
    }

    /** Drops a reference; the last one frees the view. */
    public final void release() {
      if (refs.decrementAndGet() == 0) {
        free();
      }
    }

    /**
     * The value of {@code key} in this view. The caller holds a reference.
     *
     * @param key the key
     * @return its value, or null if absent
     */
    public abstract byte @Nullable [] get(byte[] key);

    /**
     * The keys of {@code [begin, end)} in this view, ascending or descending. The caller holds a
     * reference until it closes the cursor.
     *
     * @param begin the first key
     * @param end the end key (exclusive)
     * @param reverse true for descending order
     * @return an open cursor, before its first entry
     */
    public abstract Cursor range(byte[] begin, byte[] end, boolean reverse);

    /** Frees the view's resources; called once, when the last reference is released. */
    protected abstract void free();
  }

  /** An open range read of a {@link View}. Not thread-safe. */
  interface Cursor extends AutoCloseable {
    /**
     * Moves to the next entry.
     *
     * @return false when the range is exhausted
     */
    boolean next();

    /**
     * The current entry's key.
     *
     * @return the key (not to be modified)
     */
    byte[] key();

    /**
     * The current entry's value.
     *
     * @return the value (not to be modified)
     */
    byte[] value();

    @Override
    void close();
  }
}
