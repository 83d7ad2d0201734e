package io.dgen.internal.codec;

/**
 * The lock record {@code (tuid.., "k")}: who holds the lock and the queue item that took it.
 *
 * @param token the holder's fencing token
 * @param acquiredAt wall-clock milliseconds when the lock was taken
 * @param envelope the envelope of the message that took the lock (re-queued if the lock is busted)
 */
public record LockRecord(String token, long acquiredAt, byte[] envelope) {}
