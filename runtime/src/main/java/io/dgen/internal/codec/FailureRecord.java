package io.dgen.internal.codec;

/**
 * The consecutive failure count of a queue item {@code (tuid.., "f", itemVS)}.
 *
 * @param count consecutive failures so far
 * @param last the id of the last failure recorded (a retried recording sees its own id and stops)
 */
public record FailureRecord(int count, String last) {}
