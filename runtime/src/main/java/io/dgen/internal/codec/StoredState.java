package io.dgen.internal.codec;

import tools.jackson.databind.JsonNode;

/**
 * A state as a codec last read or wrote it: the tree, plus whatever the codec needs to diff the
 * next write against it. Immutable; shared between transactions of one process.
 */
public interface StoredState {

  /** The state as a tree; never modified. */
  JsonNode tree();
}
