package io.dgen;

import java.util.Objects;

/**
 * Identifies the caller of a {@code call}: its reply slot. Opaque to callbacks; useful in logs.
 *
 * <p>An inline call (run in the caller's own transaction) and a call whose caller gave up have a
 * {@code From} too; the reply to a caller that gave up is dropped.
 */
public final class From {

  private final long slotSeconds;
  private final String slotId;

  /**
   * Creates a From. Used by the runtime.
   *
   * @param slotSeconds the Unix second the reply slot was created at
   * @param slotId the slot's unique id
   */
  public From(long slotSeconds, String slotId) {
    this.slotSeconds = slotSeconds;
    this.slotId = Objects.requireNonNull(slotId);
  }

  /** The Unix second the caller's reply slot was created at (used to sweep abandoned slots). */
  public long slotSeconds() {
    return slotSeconds;
  }

  /** The unique id of the caller's reply slot. */
  public String slotId() {
    return slotId;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof From f && f.slotSeconds == slotSeconds && f.slotId.equals(slotId);
  }

  @Override
  public int hashCode() {
    return Objects.hash(slotSeconds, slotId);
  }

  @Override
  public String toString() {
    return "From{" + slotSeconds + "/" + slotId + "}";
  }
}
