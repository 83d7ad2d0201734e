package io.dgen.internal.codec;

import com.apple.foundationdb.tuple.ByteArrayUtil;
import com.apple.foundationdb.tuple.Tuple;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * A node's key prefix in the structured layout. Its packed length is known at once (shapes depend
 * on it); the bytes are packed only when a mutation needs them, so walking an unchanged subtree
 * packs no keys.
 */
final class KeyPath {

  /** The longest key prefix under which a node is still split into per-child keys. */
  static final int STRUCTURE_KEY_LIMIT = 8_192;

  /** Stands for the longest index an item may get, when bounding the length of its keys. */
  private static final byte[] LONGEST_INDEX = new byte[FractionalIndex.MAX_LENGTH];

  static {
    java.util.Arrays.fill(LONGEST_INDEX, (byte) 0xFF);
  }

  private final @Nullable KeyPath parent;
  private final String tag;
  private final byte @Nullable [] index;
  private final String name;
  final int length;
  private byte @Nullable [] packed;

  KeyPath(byte[] root) {
    this.parent = null;
    this.tag = "";
    this.index = null;
    this.name = "";
    this.length = root.length;
    this.packed = root;
  }

  KeyPath(KeyPath parent, String tag, byte @Nullable [] index, String name) {
    this.parent = parent;
    this.tag = tag;
    this.index = index;
    this.name = name;
    this.length = childLength(parent.length, tag, index, name);
  }

  /** The prefix of field {@code name} of this object node. */
  KeyPath field(String name) {
    return new KeyPath(this, StoredNode.ASSIGNS, null, name);
  }

  /** The prefix of item {@code id} at {@code index} of this list node. */
  KeyPath item(byte[] index, String id) {
    return new KeyPath(this, StoredNode.COMPONENTS, index, id);
  }

  boolean isRoot() {
    return parent == null;
  }

  byte[] key() {
    byte[] p = packed;
    if (p == null) {
      KeyPath up = Objects.requireNonNull(parent);
      Tuple t = index == null ? Tuple.from(tag, name) : Tuple.from(tag, index, name);
      p = ByteArrayUtil.join(up.key(), t.pack());
      packed = p;
    }
    return p;
  }

  byte[] key(byte[] suffix) {
    return ByteArrayUtil.join(key(), suffix);
  }

  /** Whether field {@code name} of this node keeps its key prefix within the limit. */
  boolean fitsField(String name) {
    return fits(StoredNode.ASSIGNS, null, name);
  }

  /** Whether item {@code id} of this node keeps its key prefix within the limit, at any index. */
  boolean fitsItem(String id) {
    return fits(StoredNode.COMPONENTS, LONGEST_INDEX, id);
  }

  private boolean fits(String tag, byte @Nullable [] index, String name) {
    if (!wellFormed(name)) {
      return false;
    }
    // A tag packs to 3 bytes, an index to at most 2 more than its length, a UTF-16 unit to at
    // most 3: short names need no exact count.
    int bound = length + 3 + FractionalIndex.MAX_LENGTH + 2 + 2 + 3 * name.length();
    return bound <= STRUCTURE_KEY_LIMIT
        || childLength(length, tag, index, name) <= STRUCTURE_KEY_LIMIT;
  }

  static int childLength(int parent, String tag, byte @Nullable [] index, String name) {
    return parent
        + packedLength(tag)
        + (index == null ? 0 : packedLength(index))
        + packedLength(name);
  }

  /** No unpaired surrogates: the name survives UTF-8, so it can be part of a key. */
  static boolean wellFormed(String s) {
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c < Character.MIN_SURROGATE) {
        continue;
      }
      if (Character.isHighSurrogate(c)) {
        if (i + 1 >= s.length() || !Character.isLowSurrogate(s.charAt(i + 1))) {
          return false;
        }
        i++;
      } else if (Character.isLowSurrogate(c)) {
        return false;
      }
    }
    return true;
  }

  /** The tuple layer's encoded length of a string: type code, UTF-8 with NULs escaped, end. */
  static int packedLength(String s) {
    int n = 2;
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == 0) {
        n += 2;
      } else if (c < 0x80) {
        n += 1;
      } else if (c < 0x800) {
        n += 2;
      } else if (Character.isHighSurrogate(c)
          && i + 1 < s.length()
          && Character.isLowSurrogate(s.charAt(i + 1))) {
        n += 4;
        i++;
      } else {
        n += 3;
      }
    }
    return n;
  }

  /** The tuple layer's encoded length of a byte string: type code, bytes with NULs escaped, end. */
  static int packedLength(byte[] b) {
    int n = 2 + b.length;
    for (byte x : b) {
      if (x == 0) {
        n++;
      }
    }
    return n;
  }

  /** The end of the range of keys that extend {@code prefix} with a tuple element. */
  static byte[] strinc(byte[] prefix) {
    return ByteArrayUtil.join(prefix, new byte[] {(byte) 0xFF});
  }
}
