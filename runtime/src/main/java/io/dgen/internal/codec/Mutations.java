package io.dgen.internal.codec;

import com.apple.foundationdb.subspace.Subspace;
import com.apple.foundationdb.tuple.ByteArrayUtil;
import io.dgen.StateTooLargeException;
import io.dgen.backend.Transaction;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongSupplier;

/**
 * The mutations of one state write, held back until the whole diff is known so that a write that is
 * too large changes nothing. Costs are counted as FoundationDB counts them: a set is its key and
 * value plus the write-conflict range {@code [key, key + 0x00)}; a range clear is its bounds,
 * twice.
 */
final class Mutations {

  /** FoundationDB's key size limit. */
  static final int MAX_KEY = 10_000;

  private static final byte[] EMPTY = new byte[0];

  /** A set of key {@code a} to value {@code b}, or a clear of the range {@code [a, b)}. */
  private record Op(byte[] a, byte[] b, boolean clear, long cost, String part) {}

  private final KeyPath root;
  private final byte[] versionKey;
  private final LongSupplier budget;
  private final List<Op> ops = new ArrayList<>();
  private long cost;
  private int sets;
  private String part = "(state)";

  Mutations(KeyPath root, byte[] versionKey, LongSupplier budget) {
    this.root = root;
    this.versionKey = versionKey;
    this.budget = budget;
  }

  /** Attributes the following mutations to a top-level field or item, for error messages. */
  void label(KeyPath path, String name) {
    if (path == root) {
      part = name;
    }
  }

  void set(byte[] key, byte[] value) {
    add(new Op(key, value, false, 3L * key.length + 1 + value.length, part));
  }

  void clearRange(byte[] begin, byte[] end) {
    add(new Op(begin, end, true, 2L * (begin.length + end.length), part));
  }

  /** Clears a node's keys; at the root, everything but the version key. */
  void clearNode(KeyPath path) {
    byte[] prefix = path.key();
    if (path.isRoot()) {
      clearRange(ByteArrayUtil.join(prefix, new byte[] {0}), versionKey);
      clearRange(ByteArrayUtil.join(versionKey, new byte[] {0}), KeyPath.strinc(prefix));
    } else {
      clearRange(ByteArrayUtil.join(prefix, new byte[] {0}), KeyPath.strinc(prefix));
    }
  }

  private void add(Op op) {
    ops.add(op);
    cost += op.cost;
    sets += op.clear ? 0 : 1;
  }

  /** The keys set so far. */
  int sets() {
    return sets;
  }

  boolean isEmpty() {
    return ops.isEmpty();
  }

  /** A point to {@link #rollback} to. */
  int mark() {
    return ops.size();
  }

  /** Forgets the mutations made since {@code mark}. */
  void rollback(int mark) {
    while (ops.size() > mark) {
      Op op = ops.remove(ops.size() - 1);
      cost -= op.cost;
      sets -= op.clear ? 0 : 1;
    }
  }

  /**
   * Refuses the write if a key is too long or the whole is over the budget.
   *
   * @throws StateTooLargeException if so; nothing was applied
   */
  void check(Subspace space) {
    byte[] longest = EMPTY;
    for (Op op : ops) {
      if (!op.clear && op.a.length > longest.length) {
        longest = op.a;
      }
    }
    if (longest.length > MAX_KEY) {
      throw new StateTooLargeException(
          "state key of "
              + longest.length
              + " bytes exceeds FoundationDB's "
              + MAX_KEY
              + "-byte key limit: key="
              + ByteArrayUtil.printable(Arrays.copyOf(longest, 100))
              + "... state subspace="
              + ByteArrayUtil.printable(space.getKey())
              + "; nothing was written",
          longest.length,
          MAX_KEY);
    }
    long budget = this.budget.getAsLong();
    if (cost > budget) {
      Map<String, Long> costByPart = new HashMap<>();
      for (Op op : ops) {
        costByPart.merge(op.part, op.cost, Long::sum);
      }
      Map.Entry<String, Long> top =
          Collections.max(costByPart.entrySet(), Map.Entry.comparingByValue());
      throw new StateTooLargeException(
          "state write of "
              + cost
              + " bytes exceeds the "
              + budget
              + "-byte budget for state in this transaction (FoundationDB allows 10000000 in all;"
              + " a state write may use at most "
              + StateTooLargeException.DEFAULT_BUDGET
              + ", less what the transaction holds already: queue items, replies, your own"
              + " writes):"
              + " largest part="
              + quote(top.getKey())
              + " bytes="
              + top.getValue()
              + " state subspace="
              + ByteArrayUtil.printable(space.getKey())
              + "; nothing was written. Keep bulky data out of the state, or split it into"
              + " fields and items that change separately",
          cost,
          budget);
    }
  }

  void apply(Transaction tx) {
    for (Op op : ops) {
      if (op.clear) {
        tx.clearRange(op.a, op.b);
      } else {
        tx.set(op.a, op.b);
      }
    }
  }

  private static String quote(String s) {
    return s.length() <= 80 ? "\"" + s + "\"" : "\"" + s.substring(0, 40) + "...\"";
  }
}
