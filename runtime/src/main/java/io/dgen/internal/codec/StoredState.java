package io.dgen.internal.codec;

import org.jspecify.annotations.Nullable;
import tools.jackson.databind.JsonNode;

/**
 * A state as a codec last read or wrote it: the tree, plus whatever the codec needs to diff the
 * next write against it and to hand the state to callbacks. Shared between transactions of one
 * process; what it holds never changes in a way a reader could see.
 */
public interface StoredState {

  /** The state as a tree; never modified. */
  JsonNode tree();

  /**
   * The runtime is done with {@code state}, the state object this was written from: its callback
   * returned it, the write committed and the post-commit actions that received it have run. A codec
   * may then hand that very object to the next callback that loads this state, once, instead of
   * decoding a fresh one. Ignored for any other object.
   */
  default void lend(@Nullable Object state) {}
}
