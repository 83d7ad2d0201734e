package io.dgen.backend.fdb;

import io.dgen.backend.ByteKeys;
import io.dgen.backend.KeyValue;
import io.dgen.backend.ReadTransaction;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.jspecify.annotations.Nullable;

/**
 * The reads of one attempt over an fdb-java read view: the transaction itself (serializable reads)
 * or its {@code snapshot()} (snapshot reads). Conflict ranges, read-your-writes and limits are
 * FoundationDB's own; this class only converts types and errors.
 */
class FdbReadTransaction implements ReadTransaction {

  private final com.apple.foundationdb.ReadTransaction reads;

  FdbReadTransaction(com.apple.foundationdb.ReadTransaction reads) {
    this.reads = reads;
  }

  @Override
  public CompletableFuture<byte @Nullable []> getAsync(byte[] key) {
    try {
      return FdbErrors.adapt(reads.get(key));
    } catch (RuntimeException e) {
      return FdbErrors.failed(e);
    }
  }

  @Override
  public CompletableFuture<List<KeyValue>> getRangeAsync(
      byte[] begin, byte[] end, int limit, boolean reverse) {
    if (limit < 0) {
      throw new IllegalArgumentException("limit must be >= 0 (0 = unlimited), was " + limit);
    }
    if (ByteKeys.compare(begin, end) >= 0) {
      // FoundationDB answers an empty or inverted range with no rows and no conflict range; say so
      // here rather than depend on the client's handling of inverted ranges.
      return CompletableFuture.completedFuture(List.of());
    }
    try {
      // asList() issues one EXACT request when a limit is given (so the read-conflict range ends
      // at the last row returned) and WANT_ALL batches otherwise.
      return FdbErrors.adapt(
          reads.getRange(begin, end, limit, reverse).asList(), FdbReadTransaction::toKeyValues);
    } catch (RuntimeException e) {
      return FdbErrors.failed(e);
    }
  }

  @Override
  public long getReadVersion() {
    try {
      return FdbErrors.join(reads.getReadVersion());
    } catch (RuntimeException e) {
      // reads.getReadVersion() itself may throw (an invalidated transaction); join maps the rest.
      throw FdbErrors.map(e);
    }
  }

  @Override
  public CompletableFuture<Long> getReadVersionAsync() {
    try {
      return FdbErrors.adapt(reads.getReadVersion());
    } catch (RuntimeException e) {
      return FdbErrors.failed(e);
    }
  }

  @Override
  public boolean isSnapshot() {
    return reads.isSnapshot();
  }

  private static List<KeyValue> toKeyValues(List<com.apple.foundationdb.KeyValue> rows) {
    List<KeyValue> out = new ArrayList<>(rows.size());
    for (com.apple.foundationdb.KeyValue row : rows) {
      out.add(new KeyValue(row.getKey(), row.getValue()));
    }
    return out;
  }
}
