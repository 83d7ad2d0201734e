package io.dgen.internal.codec;

import com.apple.foundationdb.subspace.Subspace;
import com.apple.foundationdb.tuple.ByteArrayUtil;
import com.apple.foundationdb.tuple.Tuple;
import io.dgen.UndecodableDataException;
import io.dgen.backend.KeyValue;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/** Rebuilds the stored nodes of a state from the rows of its subspace, read in key order. */
final class RowReader {

  /** The runtime's version key inside the state subspace; reserved. */
  static final String VERSION = "v";

  private RowReader() {}

  /**
   * The root node of the rows, or null if there are none but the version key.
   *
   * @throws UndecodableDataException if a key is not of the structured layout
   */
  static @Nullable StoredNode read(Subspace space, List<KeyValue> rows, Serde serde) {
    NodeRows root = new NodeRows();
    boolean any = false;
    for (KeyValue kv : rows) {
      Tuple t;
      try {
        t = space.unpack(kv.key());
      } catch (RuntimeException e) {
        throw undecodable(kv.key(), "not a tuple", e);
      }
      if (t.size() == 1 && VERSION.equals(t.get(0))) {
        continue;
      }
      root.add(t, 0, kv);
      any = true;
    }
    return any ? root.build(serde) : null;
  }

  private static UndecodableDataException undecodable(
      byte[] key, String why, @Nullable Throwable cause) {
    return new UndecodableDataException(
        "stored state key " + ByteArrayUtil.printable(key) + " is not a state encoding: " + why,
        cause);
  }

  /** The rows of one node, in key order. */
  private static final class NodeRows {
    StoredNode.@Nullable Shape shape;
    final LinkedHashMap<String, NodeRows> fields = new LinkedHashMap<>(); // rows come sorted
    final List<ItemRows> items = new ArrayList<>();
    final List<byte[]> chunks = new ArrayList<>();

    void add(Tuple t, int at, KeyValue kv) {
      if (at >= t.size() || !(t.get(at) instanceof String)) {
        throw undecodable(kv.key(), "expected a shape tag at element " + at, null);
      }
      String tag = t.getString(at);
      if (StoredNode.ASSIGNS.equals(tag)) {
        shape(StoredNode.Shape.ASSIGNS, kv);
        if (at + 1 == t.size()) {
          return;
        }
        if (!(t.get(at + 1) instanceof String)) {
          throw undecodable(kv.key(), "a field name must be a string", null);
        }
        fields.computeIfAbsent(t.getString(at + 1), k -> new NodeRows()).add(t, at + 2, kv);
      } else if (StoredNode.COMPONENTS.equals(tag)) {
        shape(StoredNode.Shape.COMPONENTS, kv);
        if (at + 1 == t.size()) {
          return;
        }
        if (at + 2 >= t.size()
            || !(t.get(at + 1) instanceof byte[])
            || !(t.get(at + 2) instanceof String)) {
          throw undecodable(kv.key(), "an item key needs an index and a string id", null);
        }
        byte[] index = t.getBytes(at + 1);
        String id = t.getString(at + 2);
        ItemRows last = items.isEmpty() ? null : items.get(items.size() - 1);
        if (last == null || !Arrays.equals(last.index, index) || !last.id.equals(id)) {
          last = new ItemRows(index, id);
          items.add(last);
        }
        last.node.add(t, at + 3, kv);
      } else if (StoredNode.TERM.equals(tag)) {
        shape(StoredNode.Shape.TERM, kv);
        if (t.size() != at + 2
            || !(t.get(at + 1) instanceof Long)
            || t.getLong(at + 1) != chunks.size()) {
          throw undecodable(kv.key(), "expected chunk " + chunks.size(), null);
        }
        chunks.add(kv.value());
      } else {
        throw undecodable(kv.key(), "unknown tag '" + tag + "'", null);
      }
    }

    private void shape(StoredNode.Shape s, KeyValue kv) {
      if (shape == null) {
        shape = s;
      } else if (shape != s) {
        throw undecodable(kv.key(), "a node stored both as " + shape + " and " + s, null);
      }
    }

    StoredNode build(Serde serde) {
      StoredNode.Shape s = shape;
      if (s == StoredNode.Shape.ASSIGNS) {
        String[] names = new String[fields.size()];
        StoredNode[] children = new StoredNode[fields.size()];
        int i = 0;
        for (Map.Entry<String, NodeRows> e : fields.entrySet()) {
          names[i] = e.getKey();
          children[i++] = e.getValue().build(serde);
        }
        return StoredNode.assigns(new StoredNode.Names(names), children);
      }
      if (s == StoredNode.Shape.COMPONENTS) {
        List<StoredNode.Item> out = new ArrayList<>(items.size());
        for (ItemRows i : items) {
          out.add(new StoredNode.Item(i.id, i.index, i.node.build(serde)));
        }
        return StoredNode.components(out);
      }
      if (s == StoredNode.Shape.TERM) {
        return StoredNode.term(serde.readTree(Chunks.join(chunks)), chunks.size());
      }
      throw new IllegalStateException("a node without rows");
    }
  }

  private static final class ItemRows {
    final byte[] index;
    final String id;
    final NodeRows node = new NodeRows();

    ItemRows(byte[] index, String id) {
      this.index = index;
      this.id = id;
    }
  }
}
