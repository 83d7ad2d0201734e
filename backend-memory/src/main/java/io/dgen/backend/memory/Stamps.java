package io.dgen.backend.memory;

import com.apple.foundationdb.tuple.Tuple;
import com.apple.foundationdb.tuple.Versionstamp;
import java.util.ArrayList;
import java.util.List;

/**
 * Versionstamp helpers that never touch fdb-java's native-backed code: packing a tuple with an
 * incomplete stamp ({@code Tuple.packWithVersionstamp}) asks {@code FDB.instance()} for the API
 * version and loads {@code libfdb_c}, so the memory backend substitutes a complete stamp and packs
 * with the plain, pure-Java {@code Tuple.pack()}. The bytes are the same: an incomplete stamp packs
 * as {@code 0x33, FF×10, userVersion}, a complete one as {@code 0x33, version(10), userVersion}.
 */
final class Stamps {

  /** Ten {@code 0xff} bytes: the largest transaction version, the top of an unreadable range. */
  static final byte[] MAX_TR_VERSION = {-1, -1, -1, -1, -1, -1, -1, -1, -1, -1};

  private Stamps() {}

  /** Counts the incomplete versionstamps in {@code tuple}, looking into nested tuples and lists. */
  static int countIncomplete(Tuple tuple) {
    return countIncomplete(tuple.getItems());
  }

  private static int countIncomplete(List<?> items) {
    int n = 0;
    for (Object o : items) {
      if (o instanceof Versionstamp vs) {
        if (!vs.isComplete()) {
          n++;
        }
      } else if (o instanceof Tuple t) {
        n += countIncomplete(t.getItems());
      } else if (o instanceof List<?> l) {
        n += countIncomplete(l);
      }
    }
    return n;
  }

  /**
   * Returns {@code tuple} with its incomplete versionstamps completed with the 10-byte transaction
   * version {@code trVersion}, each keeping its user version.
   */
  static Tuple complete(Tuple tuple, byte[] trVersion) {
    return Tuple.fromList(completeItems(tuple.getItems(), trVersion));
  }

  private static List<Object> completeItems(List<?> items, byte[] trVersion) {
    List<Object> out = new ArrayList<>(items.size());
    for (Object o : items) {
      if (o instanceof Versionstamp vs && !vs.isComplete()) {
        out.add(Versionstamp.complete(trVersion, vs.getUserVersion()));
      } else if (o instanceof Tuple t) {
        out.add(Tuple.fromList(completeItems(t.getItems(), trVersion)));
      } else if (o instanceof List<?> l) {
        out.add(completeItems(l, trVersion));
      } else {
        out.add(o);
      }
    }
    return out;
  }

  /** The 10-byte transaction versionstamp of a commit: BE64(version) then BE16(order). */
  static byte[] transactionStamp(long version, int order) {
    byte[] b = new byte[10];
    for (int i = 0; i < 8; i++) {
      b[i] = (byte) (version >>> (56 - 8 * i));
    }
    b[8] = (byte) (order >>> 8);
    b[9] = (byte) order;
    return b;
  }
}
