package io.dgen.internal.codec;

import com.apple.foundationdb.subspace.Subspace;
import com.apple.foundationdb.tuple.Tuple;
import io.dgen.backend.KeyValue;
import io.dgen.backend.Transaction;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;
import tools.jackson.databind.JsonNode;

/**
 * The term encoding: the whole state as one Smile document, chunked into 100,000-byte values at
 * {@code (.., "t", n)}. Any change rewrites every chunk; an unchanged state writes nothing.
 */
public final class TermStateCodec implements StateCodec {

  private static final String TERM = "t";

  private final Serde serde;

  /**
   * Creates the codec.
   *
   * @param serde the mapper to encode with
   */
  public TermStateCodec(Serde serde) {
    this.serde = serde;
  }

  private record Term(JsonNode tree) implements StoredState {}

  @Override
  public @Nullable StoredState decode(Subspace space, List<KeyValue> rows) {
    List<byte[]> parts = new ArrayList<>(rows.size());
    for (KeyValue kv : rows) {
      Tuple t = space.unpack(kv.key());
      if (t.size() == 2 && TERM.equals(t.get(0))) {
        parts.add(kv.value());
      }
    }
    return parts.isEmpty() ? null : new Term(serde.readTree(Chunks.join(parts)));
  }

  @Override
  public StoredState write(
      Transaction tx, Subspace space, @Nullable StoredState old, JsonNode tree) {
    if (old != null && old.tree().equals(tree)) {
      return old;
    }
    Subspace terms = space.subspace(Tuple.from(TERM));
    tx.clearRange(terms.range().begin, terms.range().end);
    List<byte[]> parts = Chunks.split(serde.toBytes(tree), Chunks.MAX_VALUE);
    for (int i = 0; i < parts.size(); i++) {
      tx.set(terms.pack(Tuple.from(i)), parts.get(i));
    }
    return new Term(tree);
  }
}
