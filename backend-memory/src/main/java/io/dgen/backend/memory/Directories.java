package io.dgen.backend.memory;

import com.apple.foundationdb.Range;
import com.apple.foundationdb.subspace.Subspace;
import com.apple.foundationdb.tuple.Tuple;
import io.dgen.backend.Backend;
import io.dgen.backend.ByteKeys;
import io.dgen.backend.KeyValue;
import io.dgen.backend.Transaction;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;

/**
 * Directories (tenants) of a {@link MemoryBackend}, stored in the store itself under the node
 * prefix {@code \xfe}, as FoundationDB's {@code DirectoryLayer} stores its nodes, so that they are
 * transactional and concurrent creators of one path end with one directory.
 *
 * <table>
 *   <caption>Directory metadata keys</caption>
 *   <tr><th>key</th><th>value</th></tr>
 *   <tr><td>{@code \xfe + ("dir", e1, ..., en)}</td><td>the directory's raw key prefix</td></tr>
 *   <tr><td>{@code \xfe + ("next",)}</td><td>the next allocation number, 8-byte little-endian</td></tr>
 * </table>
 *
 * <p>A prefix is {@code Tuple.from(n).pack()} for the next allocation number {@code n}, counted up
 * from a random start chosen when the backend is created (so callers cannot hard-code prefixes).
 * Packed tuple integers are self-delimiting, so no directory's prefix is a prefix of another's, and
 * none starts with {@code \xfe} or {@code \xff}. Creating a path creates its missing parents, each
 * with its own prefix; removing a path removes the data of its sub-directories too.
 */
final class Directories {

  private static final byte[] NODE_PREFIX = {(byte) 0xfe};
  private static final byte[] NEXT_KEY = ByteKeys.concat(NODE_PREFIX, Tuple.from("next").pack());
  private static final String DIR = "dir";

  private final Backend backend;
  private final long firstNumber;

  Directories(Backend backend, long firstNumber) {
    this.backend = backend;
    this.firstNumber = firstNumber;
  }

  Subspace createOrOpen(String... path) {
    String[] p = validate(path);
    byte[] prefix = backend.run(tx -> createOrOpen(tx, p));
    return new Subspace(prefix);
  }

  Optional<Subspace> open(String... path) {
    String[] p = validate(path);
    byte[] prefix = backend.run(tx -> tx.get(nodeKey(p, p.length)));
    return prefix == null ? Optional.empty() : Optional.of(new Subspace(prefix));
  }

  boolean remove(String... path) {
    String[] p = validate(path);
    return backend.run(tx -> remove(tx, p));
  }

  List<String> list(String... parent) {
    if (parent.length > 0) {
      validate(parent);
    }
    Tuple node = nodeTuple(parent, parent.length);
    Range below = node.range(NODE_PREFIX);
    List<KeyValue> nodes = backend.run(tx -> tx.getRange(below.begin, below.end));
    List<String> names = new ArrayList<>();
    for (KeyValue kv : nodes) {
      Tuple t = Tuple.fromBytes(kv.key(), NODE_PREFIX.length, kv.key().length - 1);
      if (t.size() == node.size() + 1) {
        names.add(t.getString(node.size()));
      }
    }
    return names;
  }

  private byte[] createOrOpen(Transaction tx, String[] path) {
    byte[] prefix = null;
    for (int depth = 1; depth <= path.length; depth++) {
      byte[] key = nodeKey(path, depth);
      prefix = tx.get(key);
      if (prefix == null) {
        prefix = allocate(tx);
        tx.set(key, prefix);
      }
    }
    return prefix;
  }

  private byte[] allocate(Transaction tx) {
    byte[] raw = tx.get(NEXT_KEY);
    long n = raw == null ? firstNumber : decode(raw);
    tx.set(NEXT_KEY, MemoryTransaction.addLittleEndian(null, n + 1));
    return Tuple.from(n).pack();
  }

  private static long decode(byte[] le) {
    long n = 0;
    for (int i = 0; i < Math.min(8, le.length); i++) {
      n |= (le[i] & 0xffL) << (8 * i);
    }
    return n;
  }

  private static Boolean remove(Transaction tx, String[] path) {
    Tuple node = nodeTuple(path, path.length);
    byte[] key = node.pack(NODE_PREFIX);
    byte[] prefix = tx.get(key);
    if (prefix == null) {
      return false;
    }
    // Tuple.range() spans exactly the descendants: a sibling whose name extends this one with
    // "\0" packs as key + 0xff... and stays outside it.
    Range children = node.range(NODE_PREFIX);
    List<KeyValue> nodes = tx.getRange(children.begin, children.end);
    clearPrefix(tx, prefix);
    for (KeyValue kv : nodes) {
      clearPrefix(tx, kv.value());
    }
    tx.clear(key);
    tx.clearRange(children.begin, children.end);
    return true;
  }

  private static void clearPrefix(Transaction tx, byte[] prefix) {
    tx.clearRange(prefix, ByteKeys.strinc(prefix));
  }

  private static byte[] nodeKey(String[] path, int depth) {
    return nodeTuple(path, depth).pack(NODE_PREFIX);
  }

  private static Tuple nodeTuple(String[] path, int depth) {
    Object[] items = new Object[depth + 1];
    items[0] = DIR;
    System.arraycopy(path, 0, items, 1, depth);
    return Tuple.from(items);
  }

  private static String[] validate(String... path) {
    if (path == null || path.length == 0) {
      throw new IllegalArgumentException("a directory path needs at least one element");
    }
    for (int i = 0; i < path.length; i++) {
      if (path[i] == null || path[i].isEmpty()) {
        throw new IllegalArgumentException(
            "directory path element " + i + " is empty: path=" + Arrays.toString(path));
      }
    }
    return path.clone();
  }
}
