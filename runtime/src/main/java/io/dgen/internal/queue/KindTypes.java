package io.dgen.internal.queue;

import com.apple.foundationdb.subspace.Subspace;
import com.apple.foundationdb.tuple.Tuple;
import io.dgen.backend.Backend;
import io.dgen.backend.KeyValue;
import io.dgen.backend.ReadTransaction;
import io.dgen.backend.Transaction;
import io.dgen.internal.codec.TypeRegistry;
import io.dgen.internal.keys.TenantKeys;
import java.nio.charset.StandardCharsets;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * One kind's type table in one tenant, as this runtime knows it: {@code FF (12, kind, n)} = the
 * class name of entry {@code n}, shared by every server of the kind (items pushed through a ref
 * carry {@link io.dgen.internal.codec.Envelope#KIND_TABLE}). Like a server's own table, entries are
 * appended at the next free index and never changed or removed, so what a runtime learned stays
 * true; unlike it, a kill of one server leaves it alone.
 *
 * <p>A runtime that hosts the kind completes the table at {@code host} with every class its
 * behaviour accepts; a ref appends a class the table lacks on its first push of it (one
 * transaction, once per class and kind ever; two runtimes appending at once conflict on the table's
 * read and the second retries). A consumer that meets an index it has not learned reads that one
 * entry.
 *
 * <p>Threading: thread-safe.
 */
public final class KindTypes {

  private final Backend backend;
  private final Subspace table;
  private final TypeRegistry registry;

  public KindTypes(Backend backend, TenantKeys keys, String kind, TypeRegistry registry) {
    this.backend = backend;
    this.table = keys.kindTypes(kind);
    this.registry = registry;
  }

  /** The registry: the behaviour's types where the kind is hosted, else an open one. */
  public TypeRegistry registry() {
    return registry;
  }

  /** The kind's table. */
  Subspace table() {
    return table;
  }

  /**
   * The entry of {@code tag}, appended to the stored table first if no runtime has yet. Runs a
   * transaction (in the caller's thread) only for a class this runtime has not seen in the table.
   */
  int index(String tag) {
    int i = registry.indexOf(tag);
    if (i >= 0) {
      return i;
    }
    complete(List.of(tag));
    return registry.indexOf(tag);
  }

  /** Appends to the stored table the classes it lacks, and learns the whole table. */
  public void complete(Collection<String> tags) {
    Map<Integer, String> learned =
        backend.run(
            tx -> {
              Map<Integer, String> t = new HashMap<>();
              for (KeyValue kv :
                  tx.getRange(
                      table.range().begin, table.range().end, ReadTransaction.UNLIMITED, false)) {
                t.put(
                    (int) table.unpack(kv.key()).getLong(0),
                    new String(kv.value(), StandardCharsets.UTF_8));
              }
              int next = t.keySet().stream().mapToInt(n -> n + 1).max().orElse(0);
              Set<String> present = new HashSet<>(t.values());
              for (String tag : tags) {
                if (present.add(tag)) {
                  tx.set(table.pack(Tuple.from(next)), tag.getBytes(StandardCharsets.UTF_8));
                  t.put(next++, tag);
                }
              }
              return t;
            });
    registry.learn(learned);
  }

  /** Learns entry {@code index} if this runtime has not: a snapshot read in {@code tx}. */
  void learn(Transaction tx, int index) {
    if (registry.knows(index)) {
      return;
    }
    byte[] name = tx.snapshot().get(table.pack(Tuple.from(index)));
    if (name != null) {
      registry.learn(Map.of(index, new String(name, StandardCharsets.UTF_8)));
    }
  }
}
