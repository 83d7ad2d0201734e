package io.dgen;

/**
 * How a server's state is laid out in the store; chosen once per {@link DGen} with {@link
 * DGen.Builder#stateEncoding(StateEncoding)}. Both encodings read what the other wrote, so the
 * choice can change between deployments: the first state write after the change rewrites the state
 * in the new layout.
 *
 * <p>See {@code docs/state-encodings.md} for the key layout and how to shape state.
 */
public enum StateEncoding {

  /**
   * The default: the state's Jackson tree is stored by shape, recursively. An object is stored
   * field by field ("assigns"), a list whose elements are all objects with a unique string {@code
   * id} item by item in a fractional-index order ("components"), anything else as a chunked Smile
   * term. A write stores only the difference from the state it replaces, so a one-field change to a
   * large state writes about that field. Parts annotated {@link StoreAsTerm} stay terms.
   */
  STRUCTURED,

  /**
   * The whole state as one Smile document, chunked into 100,000-byte values. Any change rewrites
   * every chunk; an unchanged state writes nothing. Cheapest for small states that change as a
   * whole.
   */
  TERM
}
