package io.dgen.internal.consume;

import io.dgen.TerminalException;
import io.dgen.backend.KeyValue;
import io.dgen.internal.behaviour.CallbackInvoker;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * The items the latest attempt of a batch popped, so that a failure of its commit can be blamed on
 * them. One per consume loop (or drain), reset by each attempt; attempts never overlap.
 */
final class Attempt {
  private volatile List<KeyValue> popped = List.of();
  private volatile @Nullable Refusing refusing;

  /**
   * The head item a callback refused after writing ({@link ItemRefused}), and the state's stamp it
   * ran on: a batch that finds that item at the head and the same stamp refuses it without running
   * its callback. Kept until another refusal replaces it: any later batch that matches both finds
   * exactly what the refusing attempt found.
   */
  private record Refusing(byte[] item, byte @Nullable [] stamp, TerminalException reason) {}

  /** Starts a new attempt: it has popped nothing yet. */
  void reset() {
    popped = new ArrayList<>();
  }

  /** The refusal of {@code item} as the head over the state {@code stamp}, if one is known. */
  @Nullable TerminalException refusal(KeyValue item, byte @Nullable [] stamp) {
    Refusing r = refusing;
    return r != null && Arrays.equals(r.item(), item.key()) && Arrays.equals(r.stamp(), stamp)
        ? r.reason()
        : null;
  }

  /** Remembers that a callback refused {@code item} after writing, over the state {@code stamp}. */
  void refused(KeyValue item, byte @Nullable [] stamp, TerminalException reason) {
    refusing = new Refusing(item.key(), stamp, reason);
  }

  /** {@code item} is popped by this attempt. */
  void popped(KeyValue item) {
    popped.add(item);
  }

  /** How many items this attempt popped. */
  int size() {
    return popped.size();
  }

  /**
   * What a failed batch's error means for the items this attempt popped. A limit error ({@code
   * ConsumerBatch.isLimitError}) of a batch that popped one item is that item's failure ({@link
   * ItemFailure}, counted toward its dead-lettering); of a batch that popped several, {@link
   * TooLarge}: run them one by one. Anything else is returned as it is.
   */
  Throwable blame(Throwable cause) {
    if (!CallbackInvoker.isLimitError(cause)) {
      return cause;
    }
    List<KeyValue> popped = this.popped;
    if (popped.size() == 1) {
      return new ItemFailure(cause, popped.get(0), 0);
    }
    return popped.size() > 1 ? new TooLarge(cause, popped.size()) : cause;
  }
}
