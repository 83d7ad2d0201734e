package io.dgen.internal.consume;

import io.dgen.backend.KeyValue;
import java.util.Objects;

/** A callback failed on {@code item}, the {@code index}-th item of its batch. */
final class ItemFailure extends RuntimeException {
  private static final long serialVersionUID = 1L;
  private final transient KeyValue item;
  private final int index;

  ItemFailure(Throwable cause, KeyValue item, int index) {
    super(cause.getMessage(), cause, false, false);
    this.item = item;
    this.index = index;
  }

  /** The item whose callback failed. */
  KeyValue item() {
    return item;
  }

  /** Its position in the batch: the items before it may commit without it. */
  int index() {
    return index;
  }

  /** What the callback threw (or why its result or the state it wrote was refused). */
  Throwable reason() {
    return Objects.requireNonNull(getCause());
  }
}
