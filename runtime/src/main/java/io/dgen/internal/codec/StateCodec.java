package io.dgen.internal.codec;

import com.apple.foundationdb.subspace.Subspace;
import io.dgen.backend.KeyValue;
import io.dgen.backend.Transaction;
import java.util.List;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;
import tools.jackson.databind.JavaType;
import tools.jackson.databind.JsonNode;

/**
 * Stores a state under a server's state subspace {@code (tuid.., "s", 0)}. The version key {@code
 * (.., "v")} in that subspace belongs to the runtime: a codec neither reads nor clears it.
 *
 * <p>Thread-safe; a {@link StoredState} is shared by the transactions of a process.
 */
public interface StateCodec {

  /**
   * Rebuilds the stored state from the rows of the state subspace, read with one range read (the
   * version key's row is already removed).
   *
   * @param space the state subspace
   * @param rows the rows in key order
   * @return the stored state, or null if there are no rows
   * @throws io.dgen.UndecodableDataException if the rows are not of this layout
   */
  @Nullable StoredState decode(Subspace space, List<KeyValue> rows);

  /**
   * The state object for a callback. A deeply immutable state (see {@code docs/state-encodings.md})
   * is decoded once and the same instance is returned to every caller; any other state is decoded
   * afresh for each caller, so that no two callbacks share an object one of them may change.
   *
   * @param stored what is stored
   * @param stateType the server's declared state type
   * @return the state
   * @throws tools.jackson.core.JacksonException if the stored tree does not fit the type
   */
  @Nullable Object state(StoredState stored, JavaType stateType);

  /**
   * Whether {@code value} is deeply immutable by the rule that lets a decoded state be shared
   * between callbacks (see {@code docs/state-encodings.md}): nobody can change it once made, so it
   * may be handed over as it is rather than copied. Conservative: false when unsure.
   *
   * @param value any value, e.g. a reply
   * @return whether it is deeply immutable
   */
  default boolean isDeeplyImmutable(@Nullable Object value) {
    return value == null;
  }

  /**
   * Writes {@code state}, as a diff against {@code old} when it is known (unchanged parts write
   * nothing); with {@code old == null} clears whatever is stored first. The diff compares the new
   * state with what is stored, taking a part as unchanged without looking at it only when it is the
   * very deeply immutable instance {@code old} was written from.
   *
   * @param tx the transaction
   * @param space the state subspace
   * @param old what is stored now, or null if unknown or absent
   * @param state the new state (a {@code JsonNode} is stored as the tree it is)
   * @param stateType the server's declared state type, from which a codec learns how parts are to
   *     be stored (e.g. {@link io.dgen.StoreAsTerm})
   * @return the new stored state; {@code old} itself if nothing was written
   * @throws io.dgen.StateTooLargeException if the write would not fit in the transaction; nothing
   *     was written
   */
  default StoredState write(
      Transaction tx,
      Subspace space,
      @Nullable StoredState old,
      @Nullable Object state,
      JavaType stateType) {
    return write(tx, space, old, state, stateType, () -> Long.MAX_VALUE);
  }

  /**
   * {@link #write(Transaction, Subspace, StoredState, Object, JavaType)} within what {@code tx} has
   * left: the write may use at most {@code budget} bytes (and never more than the codec's own
   * budget). The budget is asked for only if the write changes something.
   *
   * @param budget the bytes of the transaction left for the state write
   * @throws io.dgen.StateTooLargeException if the write is over either budget; nothing was written
   */
  StoredState write(
      Transaction tx,
      Subspace space,
      @Nullable StoredState old,
      @Nullable Object state,
      JavaType stateType,
      LongSupplier budget);

  /**
   * Writes the tree {@code tree}, like {@link #write(Transaction, Subspace, StoredState, Object,
   * JavaType)} with a state type that asks for nothing.
   *
   * @param tx the transaction
   * @param space the state subspace
   * @param old what is stored now, or null if unknown or absent
   * @param tree the new state
   * @return the new stored state; {@code old} itself if nothing was written
   * @throws io.dgen.StateTooLargeException if the write would not fit in the transaction
   */
  StoredState write(Transaction tx, Subspace space, @Nullable StoredState old, JsonNode tree);
}
