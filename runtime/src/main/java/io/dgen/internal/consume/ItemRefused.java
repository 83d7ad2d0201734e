package io.dgen.internal.consume;

import io.dgen.TerminalException;

/**
 * A callback refused its item (it threw {@link TerminalException}) after it wrote through its
 * transaction: those writes cannot be taken back, so nothing of the batch commits. The items before
 * it are run again in a batch that stops short of it; the item itself, once at the head, is refused
 * by the next batch that finds the state as the refusing attempt read it ({@link Attempt#refusal}),
 * without running its callback again. Nothing is counted against it.
 */
final class ItemRefused extends RuntimeException {
  private static final long serialVersionUID = 1L;
  private final int index;

  ItemRefused(TerminalException cause, int index) {
    super(cause.getMessage(), cause, false, false);
    this.index = index;
  }

  /** Its position in the batch: the items before it may commit without it. */
  int index() {
    return index;
  }
}
