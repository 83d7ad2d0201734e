package io.dgen;

import org.jspecify.annotations.Nullable;

/**
 * The message that took a server's lock, handed to {@link DGenServer#handleLocked}.
 *
 * @param type whether it arrived as a call, a cast or an info
 * @param message the message (for {@link Type#INFO}, the info object)
 * @param from the caller for {@link Type#CALL}, else null
 * @param <M> the message type
 */
public record Event<M>(Type type, Object message, @Nullable From from) {

  /** How a message reached the server. */
  public enum Type {
    /** A {@code call}: the caller waits for a reply. */
    CALL,
    /** A {@code cast}: no reply. */
    CAST,
    /** An {@code info}. */
    INFO
  }
}
