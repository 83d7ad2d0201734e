package io.dgen.internal.hosting;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.backend.ByteKeys;
import io.dgen.backend.KeyValue;
import io.dgen.internal.base.RuntimeServices;
import io.dgen.internal.keys.TenantKeys;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.IntPredicate;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The rescan of a held bucket's ready index for one hosted kind ({@code HostedKind.rescan}): reads
 * the index in chunks and hands every server of the kind it finds to the kind's activation. Owns
 * only the reading; what loading means, and whether the bucket is still held, the kind tells it.
 * Threading: stateless between calls; a call runs in the caller's thread.
 */
final class ReadyRescan {

  private static final Logger log = LoggerFactory.getLogger(ReadyRescan.class);

  /** Ready index entries read per transaction by a rescan. */
  private static final int RESCAN_CHUNK = 1_000;

  private final RuntimeServices services;
  private final TenantKeys tenantKeys;
  private final String kind;
  private final String context;
  private final IntPredicate holds;
  private final Consumer<Tuple> activate;

  /**
   * @param holds whether this runtime still holds a bucket's lease for the kind
   * @param activate loads a server found ready
   */
  ReadyRescan(
      RuntimeServices services,
      TenantKeys tenantKeys,
      String kind,
      String context,
      IntPredicate holds,
      Consumer<Tuple> activate) {
    this.services = services;
    this.tenantKeys = tenantKeys;
    this.kind = kind;
    this.context = context;
    this.holds = holds;
    this.activate = activate;
  }

  /**
   * Loads every server of this kind in the ready index of {@code bucket} (a bucket just taken, or
   * one whose activations may have been missed): snapshot reads, {@value #RESCAN_CHUNK} entries a
   * transaction, from {@code resumeAt} (null: the start).
   *
   * @return null once done (or the bucket is no longer held); if a read failed, the key to go on
   *     from (the hosting tries again after a backoff)
   */
  byte @Nullable [] rescan(int bucket, byte @Nullable [] resumeAt) {
    var space = tenantKeys.ready(bucket);
    byte[] from = resumeAt != null ? resumeAt : space.range().begin;
    while (holds.test(bucket)) {
      byte[] begin = from;
      List<KeyValue> rows;
      try {
        rows =
            services
                .backend()
                .run(tx -> tx.snapshot().getRange(begin, space.range().end, RESCAN_CHUNK, false));
      } catch (RuntimeException e) {
        log.warn(
            "reading the ready index of bucket {} failed; it is read again from there after a"
                + " backoff: {}",
            bucket,
            context,
            e);
        return begin;
      }
      for (KeyValue kv : rows) {
        Tuple tuid = space.unpack(kv.key());
        if (tuid.size() > 0 && kind.equals(tuid.get(0))) {
          activate.accept(tuid);
        }
      }
      if (rows.size() < RESCAN_CHUNK) {
        return null;
      }
      from = ByteKeys.keyAfter(rows.get(rows.size() - 1).key());
    }
    return null;
  }
}
