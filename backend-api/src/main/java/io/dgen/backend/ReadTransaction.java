package io.dgen.backend;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.jspecify.annotations.Nullable;

/**
 * The reads of one transaction attempt: either serializable reads (which add read-conflict ranges,
 * see {@link Transaction}) or, through {@link Transaction#snapshot()}, snapshot reads (which add
 * none).
 *
 * <p>Every read of one attempt sees the database as of the attempt's read version, overlaid with
 * the attempt's own pending writes (read-your-writes), including sets, clears and range clears seen
 * through range reads.
 *
 * <p>Async methods report errors by completing their future exceptionally with a {@link
 * BackendException}; the blocking twins throw it directly. A transaction is not thread-safe for
 * writes; concurrent reads from several threads of one attempt are allowed.
 */
public interface ReadTransaction {

  /** No limit on the number of rows a range read returns. */
  int UNLIMITED = 0;

  /**
   * Reads one key.
   *
   * <p>As a serializable read, adds the read-conflict range {@code [key, keyAfter(key))}, whether
   * or not the key exists.
   *
   * @param key the key
   * @return a future of the value, or of {@code null} if the key is absent
   */
  CompletableFuture<byte @Nullable []> getAsync(byte[] key);

  /**
   * Reads one key and waits for it; see {@link #getAsync}.
   *
   * @param key the key
   * @return the value, or {@code null} if the key is absent
   * @throws BackendException with the backend's error code
   */
  default byte @Nullable [] get(byte[] key) {
    return Futures.join(getAsync(key));
  }

  /**
   * Reads the keys in {@code [begin, end)} in key order (or in reverse order), at most {@code
   * limit} of them.
   *
   * <p>As a serializable read, adds a read-conflict range as FoundationDB does: {@code [begin,
   * end)} when fewer than {@code limit} rows came back; when the limit was reached, only the part
   * that was read ({@code [begin, keyAfter(last))} forward, {@code [smallest, end)} in reverse). A
   * range with {@code begin >= end} returns no rows and adds no conflict.
   *
   * @param begin the first key of the range (inclusive)
   * @param end the end of the range (exclusive)
   * @param limit the maximum number of rows, or {@link #UNLIMITED}
   * @param reverse whether to return the rows from the end of the range backwards
   * @return a future of the rows
   * @throws IllegalArgumentException if {@code limit} is negative
   */
  CompletableFuture<List<KeyValue>> getRangeAsync(
      byte[] begin, byte[] end, int limit, boolean reverse);

  /**
   * Reads a range and waits for it; see {@link #getRangeAsync}.
   *
   * @param begin the first key of the range (inclusive)
   * @param end the end of the range (exclusive)
   * @param limit the maximum number of rows, or {@link #UNLIMITED}
   * @param reverse whether to return the rows from the end of the range backwards
   * @return the rows
   * @throws BackendException with the backend's error code
   */
  default List<KeyValue> getRange(byte[] begin, byte[] end, int limit, boolean reverse) {
    return Futures.join(getRangeAsync(begin, end, limit, reverse));
  }

  /**
   * Reads every key in {@code [begin, end)} in key order; see {@link #getRangeAsync}.
   *
   * @param begin the first key of the range (inclusive)
   * @param end the end of the range (exclusive)
   * @return the rows
   */
  default List<KeyValue> getRange(byte[] begin, byte[] end) {
    return getRange(begin, end, UNLIMITED, false);
  }

  /**
   * Returns the attempt's read version, acquiring it if no read has done so yet. Every read of the
   * attempt sees exactly the commits at or below this version.
   *
   * @return the read version
   */
  long getReadVersion();

  /**
   * Returns a future of the attempt's read version, acquiring it if no read has done so yet,
   * without waiting for it on a thread: it completes when the version is known (on FoundationDB,
   * when the cluster answered the attempt's request for a read version). FoundationDB's five-second
   * limit on a transaction counts from then.
   *
   * <p>The default completes with {@link #getReadVersion()} at once, for backends that assign a
   * read version without waiting.
   *
   * @return the read version, once known
   */
  default CompletableFuture<Long> getReadVersionAsync() {
    try {
      return CompletableFuture.completedFuture(getReadVersion());
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /** True for the snapshot view, whose reads add no read-conflict ranges. */
  boolean isSnapshot();
}
