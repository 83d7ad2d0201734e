package io.dgen;

import java.time.Instant;
import org.jspecify.annotations.Nullable;

/**
 * A message that was moved out of a server's queue after failing {@code deadLetterThreshold}
 * consecutive times (or because it could not be decoded). Inspect with {@link
 * io.dgen.admin.ServerControl#deadLetters()}, put back with {@link
 * io.dgen.admin.ServerControl#requeueDeadLetter}, drop with {@link
 * io.dgen.admin.ServerControl#purgeDeadLetter}.
 *
 * @param id the dead letter's id (stable; the queue item's versionstamp in hex)
 * @param type how the message was sent ({@link Event.Type#CALL} or {@link Event.Type#CAST})
 * @param message the message, or null if it cannot be decoded
 * @param attempts how many times it was attempted
 * @param lastError the last failure, as {@code ExceptionClass: message}
 * @param deadAt when it was moved
 * @param <M> the message type
 */
public record DeadLetter<M>(
    String id,
    Event.Type type,
    @Nullable M message,
    int attempts,
    String lastError,
    Instant deadAt) {}
