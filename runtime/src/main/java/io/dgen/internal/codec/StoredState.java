package io.dgen.internal.codec;

import tools.jackson.databind.JsonNode;

/**
 * A state as a codec last read or wrote it: the tree, plus whatever the codec needs to diff the
 * next write against it and to hand the state to callbacks. Shared between transactions of one
 * process; what it holds never changes in a way a reader could see.
 */
public interface StoredState {

  /** The state as a tree; never modified. */
  JsonNode tree();
}
