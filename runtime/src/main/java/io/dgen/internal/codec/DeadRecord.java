package io.dgen.internal.codec;

/**
 * A dead letter {@code (tuid.., "d", itemVS)}.
 *
 * @param envelope the queue item's envelope, as it was queued
 * @param attempts how many times it was attempted
 * @param error the last failure
 * @param at wall-clock milliseconds when it was moved
 * @param by the id of the failure that moved it (tells a retried mover it already did)
 */
public record DeadRecord(byte[] envelope, int attempts, String error, long at, String by) {}
