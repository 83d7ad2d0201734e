package io.dgen.internal.codec;

import com.apple.foundationdb.subspace.Subspace;
import io.dgen.backend.KeyValue;
import io.dgen.backend.Transaction;
import java.util.List;
import org.jspecify.annotations.Nullable;
import tools.jackson.databind.JavaType;
import tools.jackson.databind.JsonNode;

/**
 * Stores a state tree under a server's state subspace {@code (tuid.., "s", 0)}. The version key
 * {@code (.., "v")} in that subspace belongs to the runtime: a codec neither reads nor clears it.
 */
public interface StateCodec {

  /**
   * Rebuilds the state from the rows of the state subspace, read with one range read (the version
   * key's row is already removed).
   *
   * @param space the state subspace
   * @param rows the rows in key order
   * @return the stored state, or null if there are no rows
   */
  @Nullable StoredState decode(Subspace space, List<KeyValue> rows);

  /**
   * Writes {@code tree}, as a diff against {@code old} when it is known (unchanged parts write
   * nothing); with {@code old == null} clears whatever is stored first.
   *
   * @param tx the transaction
   * @param space the state subspace
   * @param old what is stored now, or null if unknown or absent
   * @param tree the new state
   * @return the new stored state; {@code old} itself if nothing was written
   * @throws io.dgen.StateTooLargeException if the write would not fit in the transaction; nothing
   *     was written
   */
  StoredState write(Transaction tx, Subspace space, @Nullable StoredState old, JsonNode tree);

  /**
   * Writes {@code tree} like {@link #write(Transaction, Subspace, StoredState, JsonNode)}, knowing
   * the declared state type, from which a codec may learn how parts of the tree are to be stored
   * (e.g. {@link io.dgen.StoreAsTerm}). The default ignores the type.
   *
   * @param tx the transaction
   * @param space the state subspace
   * @param old what is stored now, or null if unknown or absent
   * @param tree the new state
   * @param stateType the server's declared state type
   * @return the new stored state; {@code old} itself if nothing was written
   * @throws io.dgen.StateTooLargeException if the write would not fit in the transaction; nothing
   *     was written
   */
  default StoredState write(
      Transaction tx,
      Subspace space,
      @Nullable StoredState old,
      JsonNode tree,
      JavaType stateType) {
    return write(tx, space, old, tree);
  }
}
