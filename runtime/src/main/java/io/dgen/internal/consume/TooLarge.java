package io.dgen.internal.consume;

/**
 * A batch that popped several items failed with a limit error ({@code ConsumerBatch.isLimitError}):
 * it is too large as a whole, and no one item is to blame yet. Its items are run one by one, each
 * in a batch of its own, so that the item that caused it fails alone; nothing is counted against
 * any.
 */
final class TooLarge extends RuntimeException {
  private static final long serialVersionUID = 1L;
  private final int items;

  TooLarge(Throwable cause, int items) {
    super(cause.getMessage(), cause, false, false);
    this.items = items;
  }

  /** How many items the failed batch popped: those to run one by one. */
  int items() {
    return items;
  }
}
