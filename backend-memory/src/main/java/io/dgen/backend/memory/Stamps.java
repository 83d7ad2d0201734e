package io.dgen.backend.memory;

import com.apple.foundationdb.tuple.Tuple;
import com.apple.foundationdb.tuple.Versionstamp;
import io.dgen.backend.ByteKeys;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Versionstamp helpers that never touch fdb-java's native-backed code: packing a tuple with an
 * incomplete stamp ({@code Tuple.packWithVersionstamp}) asks {@code FDB.instance()} for the API
 * version and loads {@code libfdb_c}, so the memory backend substitutes a complete stamp and packs
 * with the plain, pure-Java {@code Tuple.pack()}. The bytes are the same: an incomplete stamp packs
 * as {@code 0x33, FF×10, userVersion}, a complete one as {@code 0x33, version(10), userVersion}.
 */
final class Stamps {

  private static final byte VERSIONSTAMP_CODE = 0x33;

  /** Ten zero bytes: the smallest transaction version. */
  static final byte[] MIN_TR_VERSION = new byte[10];

  /** Ten {@code 0xff} bytes: the largest transaction version, the top of an unreadable range. */
  static final byte[] MAX_TR_VERSION = {-1, -1, -1, -1, -1, -1, -1, -1, -1, -1};

  private Stamps() {}

  /**
   * Returns {@code tuple} with its one incomplete versionstamp completed with the 10-byte
   * transaction version {@code trVersion}, keeping its user version; nested tuples and lists are
   * searched too.
   *
   * @throws IllegalArgumentException unless {@code tuple} holds exactly one incomplete stamp
   */
  static Tuple completeSingle(Tuple tuple, byte[] trVersion) {
    int[] found = new int[2];
    List<Object> items = completeItems(tuple.getItems(), trVersion, found);
    if (found[0] != 1) {
      throw new IllegalArgumentException(
          "key must hold exactly one incomplete Versionstamp, found " + found[0]);
    }
    return Tuple.fromList(items);
  }

  private static List<Object> completeItems(List<?> items, byte[] trVersion, int[] found) {
    List<Object> out = new ArrayList<>(items.size());
    for (Object o : items) {
      if (o instanceof Versionstamp vs && !vs.isComplete()) {
        found[0]++;
        found[1] = vs.getUserVersion();
        out.add(Versionstamp.complete(trVersion, vs.getUserVersion()));
      } else if (o instanceof Tuple t) {
        out.add(Tuple.fromList(completeItems(t.getItems(), trVersion, found)));
      } else if (o instanceof List<?> l) {
        out.add(completeItems(l, trVersion, found));
      } else {
        out.add(o);
      }
    }
    return out;
  }

  /**
   * Packs {@code prefix + tuple} with its one incomplete stamp set to FF×10 and locates the stamp.
   *
   * @return the packed key, and in {@code offset[0]} the index of the stamp's first byte
   * @throws IllegalArgumentException unless {@code tuple} holds exactly one incomplete stamp
   */
  static byte[] packWithMaxStamp(byte[] prefix, Tuple tuple, int[] offset) {
    if (tuple.size() == 1 && tuple.get(0) instanceof Versionstamp vs && !vs.isComplete()) {
      // The common shape (a queue's items: the rest of the key is in the prefix): the tuple
      // encoding of a stamp written directly.
      byte[] key = Arrays.copyOf(prefix, prefix.length + 13);
      key[prefix.length] = VERSIONSTAMP_CODE;
      System.arraycopy(MAX_TR_VERSION, 0, key, prefix.length + 1, 10);
      key[prefix.length + 11] = (byte) (vs.getUserVersion() >>> 8);
      key[prefix.length + 12] = (byte) vs.getUserVersion();
      offset[0] = prefix.length + 1;
      return key;
    }
    Tuple top = completeSingle(tuple, MAX_TR_VERSION);
    byte[] key = ByteKeys.concat(prefix, top.pack());
    int at = uniqueStamp(key, prefix.length);
    if (at < 0) {
      // The stamp's encoding also occurs inside some other element: the bytes that differ from a
      // packing with another stamp are the stamp's.
      byte[] other = ByteKeys.concat(prefix, completeSingle(tuple, MIN_TR_VERSION).pack());
      at = Arrays.mismatch(key, other);
    }
    offset[0] = at;
    return key;
  }

  /** The index after the only {@code 0x33, FF×10} in {@code key} from {@code from}, or -1. */
  private static int uniqueStamp(byte[] key, int from) {
    int found = -1;
    outer:
    for (int i = from; i + 11 <= key.length; i++) {
      if (key[i] != VERSIONSTAMP_CODE) {
        continue;
      }
      for (int j = 1; j <= 10; j++) {
        if (key[i + j] != (byte) 0xff) {
          continue outer;
        }
      }
      if (found >= 0) {
        return -1;
      }
      found = i + 1;
    }
    return found;
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
