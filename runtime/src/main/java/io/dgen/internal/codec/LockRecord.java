package io.dgen.internal.codec;

import io.dgen.UndecodableDataException;
import java.util.Arrays;

/**
 * The lock record {@code (tuid.., "k")}: who holds the lock and the queue item that took it.
 *
 * <pre>
 * byte     1            format (a record of the first format is a Smile document)
 * string   token
 * varint   acquired at  wall-clock milliseconds
 * bytes    envelope     the rest: the queue item, as queued (raw, so the record is only a few
 *                       dozen bytes larger than the item)
 * </pre>
 *
 * @param token the holder's fencing token
 * @param acquiredAt wall-clock milliseconds when the lock was taken
 * @param envelope the queue item of the message that took the lock (re-queued if the lock is
 *     busted)
 */
public record LockRecord(String token, long acquiredAt, byte[] envelope) {

  /** The longest token a record keeps (run id, attempt and a hosted holder's member id). */
  static final int MAX_TOKEN = 96;

  /** The most a lock record adds to its envelope. */
  static final int MAX_OVERHEAD = 1 + (MAX_TOKEN + 1) + 10;

  /** The record's bytes. */
  public byte[] encode() {
    Binary.Out out = new Binary.Out(envelope.length + MAX_OVERHEAD);
    out.write(Envelope.FORMAT);
    out.string(token, MAX_TOKEN).varint(acquiredAt);
    out.write(envelope, 0, envelope.length);
    return out.toByteArray();
  }

  /**
   * Reads a lock record of either format.
   *
   * @throws UndecodableDataException if it is neither
   */
  public static LockRecord decode(byte[] bytes, Serde serde) {
    if (bytes.length == 0 || bytes[0] != Envelope.FORMAT) {
      return Binary.firstFormat(bytes, serde, LockRecord.class, "lock record");
    }
    Binary.In in = new Binary.In(bytes, 1);
    String token = in.string();
    long at = in.varint();
    if (token == null) {
      throw new UndecodableDataException("a lock record without a token", null);
    }
    return new LockRecord(token, at, Arrays.copyOfRange(bytes, in.at, bytes.length));
  }
}
