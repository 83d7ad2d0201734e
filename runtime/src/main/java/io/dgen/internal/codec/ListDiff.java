package io.dgen.internal.codec;

import io.dgen.internal.codec.StateWriter.ListView;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * Writes lists of components: items with unique string ids, each stored under its fractional index.
 * A diff keeps the index of the items that form a longest run still in their old order; every other
 * item (moved or new) gets a fresh index between its kept neighbours, and is cleared at its old
 * keys and written at the new ones. When a fresh index would be too long, the list is rewritten
 * with evenly spaced indexes.
 */
final class ListDiff {

  private ListDiff() {}

  /** Writes the list where nothing is stored. */
  static StoredNode fresh(
      StateWriter w, KeyPath path, ListView list, Plan plan, TermSchema schema, int depth) {
    String[] ids = Objects.requireNonNull(list.ids);
    w.mutations.set(path.key(StoredNode.COMPONENTS_KEY), StateWriter.EMPTY);
    List<byte[]> indexes = FractionalIndex.spread(ids.length);
    TermSchema element = schema.element();
    Slot slot = plan.elementSlot();
    boolean all = plan.immutable;
    List<StoredNode.Item> items = new ArrayList<>(ids.length);
    for (int i = 0; i < ids.length; i++) {
      byte[] index = indexes.get(i);
      w.mutations.label(path, ids[i]);
      StoredNode node =
          w.fresh(path.item(index, ids[i]), list.elements[i], slot, element, depth + 1);
      all &= w.frozen;
      items.add(new StoredNode.Item(ids[i], index, node));
    }
    w.frozen = all;
    return StoredNode.components(items);
  }

  /**
   * Writes what changed between the stored list {@code old} and {@code list}.
   *
   * @param before the elements of the deeply immutable list {@code old} was written from, or null
   */
  static StoredNode diff(
      StateWriter w,
      KeyPath path,
      StoredNode old,
      @Nullable Object @Nullable [] before,
      ListView list,
      Plan plan,
      TermSchema schema,
      int depth) {
    String[] ids = Objects.requireNonNull(list.ids);
    int n = ids.length;
    Map<String, Integer> oldPosition = old.positions();
    int[] from = new int[n];
    boolean[] survives = new boolean[old.items.size()];
    for (int i = 0; i < n; i++) {
      Integer p = oldPosition.get(ids[i]);
      from[i] = p == null ? -1 : p;
      if (p != null) {
        survives[p] = true;
      }
    }
    boolean[] keep = longestIncreasingRun(from);
    byte[][] index = new byte[n][];
    int lastKept = -1;
    for (int i = 0; i <= n; i++) {
      if (i < n && !keep[i]) {
        continue;
      }
      if (i < n) {
        index[i] = old.items.get(from[i]).index();
      }
      int gap = i - lastKept - 1;
      if (gap > 0) {
        byte[] lo = lastKept < 0 ? null : index[lastKept];
        byte[] hi = i < n ? index[i] : null;
        List<byte[]> fresh;
        try {
          fresh = FractionalIndex.between(lo, hi, gap);
        } catch (IllegalArgumentException notAnIndex) {
          fresh = List.of(); // stored indexes of another writer: renumber the whole list
        }
        for (int j = 0; j < gap; j++) {
          byte[] x = j < fresh.size() ? fresh.get(j) : null;
          if (x == null || x.length > FractionalIndex.MAX_LENGTH) {
            // Rebalance: every item moves to an evenly spaced index, so the list is rewritten.
            w.mutations.clearNode(path);
            return fresh(w, path, list, plan, schema, depth);
          }
          index[lastKept + 1 + j] = x;
        }
      }
      lastKept = i;
    }
    boolean changed = n != old.items.size();
    for (int i = 0; i < survives.length; i++) {
      if (!survives[i]) {
        StoredNode.Item gone = old.items.get(i);
        w.mutations.label(path, gone.id());
        w.mutations.clearNode(path.item(gone.index(), gone.id()));
        changed = true;
      }
    }
    TermSchema element = schema.element();
    Slot slot = plan.elementSlot();
    boolean all = plan.immutable;
    List<StoredNode.Item> items = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      Object value = list.elements[i];
      KeyPath child = path.item(index[i], ids[i]);
      StoredNode after;
      if (keep[i]) {
        StoredNode was = old.items.get(from[i]).value();
        Object b = before == null ? StateWriter.NONE : before[from[i]];
        if (b != StateWriter.NONE && b == value) {
          after = was;
        } else {
          w.mutations.label(path, ids[i]);
          after = w.diff(child, was, b, value, slot, element, depth + 1);
          all &= w.frozen;
          changed |= after != was;
        }
      } else {
        w.mutations.label(path, ids[i]);
        if (from[i] >= 0) {
          StoredNode.Item moved = old.items.get(from[i]);
          w.mutations.clearNode(path.item(moved.index(), moved.id()));
        }
        after = w.fresh(child, value, slot, element, depth + 1);
        all &= w.frozen;
        changed = true;
      }
      items.add(new StoredNode.Item(ids[i], index[i], after));
    }
    w.frozen = all;
    return changed ? StoredNode.components(items) : old;
  }

  /**
   * Marks the members of one longest strictly increasing subsequence of {@code from}, ignoring
   * negative entries (new items): the items that can keep their index.
   */
  static boolean[] longestIncreasingRun(int[] from) {
    int n = from.length;
    int[] tailIndex = new int[n];
    int[] previous = new int[n];
    int length = 0;
    for (int i = 0; i < n; i++) {
      if (from[i] < 0) {
        continue;
      }
      int lo = 0;
      int hi = length;
      while (lo < hi) {
        int mid = (lo + hi) >>> 1;
        if (from[tailIndex[mid]] < from[i]) {
          lo = mid + 1;
        } else {
          hi = mid;
        }
      }
      previous[i] = lo > 0 ? tailIndex[lo - 1] : -1;
      tailIndex[lo] = i;
      if (lo == length) {
        length++;
      }
    }
    boolean[] keep = new boolean[n];
    for (int i = length > 0 ? tailIndex[length - 1] : -1; i >= 0; i = previous[i]) {
      keep[i] = true;
    }
    return keep;
  }
}
