package io.dgen.internal.codec;

import com.apple.foundationdb.subspace.Subspace;
import io.dgen.StateTooLargeException;
import io.dgen.backend.KeyValue;
import io.dgen.backend.Transaction;
import java.util.List;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;
import tools.jackson.databind.JavaType;
import tools.jackson.databind.JsonNode;

/**
 * The term encoding: the whole state as one Smile document, chunked into 100,000-byte values at
 * {@code (.., "t", n)}. Any change rewrites every chunk; an unchanged state writes nothing.
 *
 * <p>It is the structured encoding with the root always a term, so it reads states the structured
 * codec wrote (and vice versa), and its first write after a switch clears the other layout.
 */
public final class TermStateCodec implements StateCodec {

  private final StructuredStateCodec delegate;

  /**
   * Creates the codec.
   *
   * @param serde the mapper to encode with
   */
  public TermStateCodec(Serde serde) {
    this.delegate = new StructuredStateCodec(serde, true, StateTooLargeException.DEFAULT_BUDGET);
  }

  @Override
  public @Nullable StoredState decode(Subspace space, List<KeyValue> rows) {
    return delegate.decode(space, rows);
  }

  @Override
  public @Nullable Object state(StoredState stored, JavaType stateType) {
    return delegate.state(stored, stateType);
  }

  @Override
  public StoredState write(
      Transaction tx,
      Subspace space,
      @Nullable StoredState old,
      @Nullable Object state,
      JavaType stateType,
      LongSupplier budget) {
    return delegate.write(tx, space, old, state, stateType, budget);
  }

  @Override
  public boolean isDeeplyImmutable(@Nullable Object value) {
    return delegate.isDeeplyImmutable(value);
  }

  @Override
  public StoredState write(
      Transaction tx, Subspace space, @Nullable StoredState old, JsonNode tree) {
    return delegate.write(tx, space, old, tree);
  }
}
