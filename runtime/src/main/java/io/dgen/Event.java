package io.dgen;

import org.jspecify.annotations.Nullable;

/**
 * The message that took a server's lock, handed to {@link DGenServer#handleLocked}.
 *
 * <p>Only queued messages can take the lock, so {@link #type()} is {@link Type#CALL} or {@link
 * Type#CAST}; priority messages and infos bypass the lock and cannot take it.
 *
 * @param type whether it arrived as a call or a cast
 * @param message the message
 * @param from the caller for {@link Type#CALL}, else null
 * @param <M> the message type
 */
public record Event<M>(Type type, M message, @Nullable From from) {

  /** How a message reached the server. */
  public enum Type {
    /** A {@code call}: the caller waits for a reply. */
    CALL,
    /** A {@code cast}: no reply. */
    CAST,
    /** An {@code info} (never takes the lock; listed for completeness). */
    INFO
  }
}
