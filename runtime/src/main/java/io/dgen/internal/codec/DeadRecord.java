package io.dgen.internal.codec;

import io.dgen.UndecodableDataException;
import java.util.Arrays;

/**
 * A dead letter {@code (tuid.., "d", itemVS)}.
 *
 * <pre>
 * byte     1            format (a record of the first format is a Smile document)
 * varint   attempts
 * varint   at           wall-clock milliseconds
 * string   by           the failure that moved it (at most 64 bytes)
 * string   error        the last failure (at most 1,000 bytes, less if the envelope is larger)
 * bytes    envelope     the rest: the queue item, as it was queued (raw)
 * </pre>
 *
 * @param envelope the queue item, as it was queued
 * @param attempts how many times it was attempted
 * @param error the last failure
 * @param at wall-clock milliseconds when it was moved
 * @param by the id of the failure that moved it (tells a retried mover it already did)
 */
public record DeadRecord(byte[] envelope, int attempts, String error, long at, String by) {

  /** The longest error kept. */
  static final int MAX_ERROR = 1_000;

  /** The most a dead letter adds to its envelope. */
  static final int MAX_OVERHEAD = 1 + 5 + 10 + 65 + 5 + MAX_ERROR;

  /** The record's bytes: never over one value, the error cut to fit. */
  public byte[] encode() {
    Binary.Out out = new Binary.Out(envelope.length + MAX_OVERHEAD);
    out.write(Envelope.FORMAT);
    out.varint(attempts).varint(at).string(by, 64);
    int room = Chunks.MAX_VALUE - out.size() - envelope.length - 5;
    out.string(error, Math.min(MAX_ERROR, room));
    out.write(envelope, 0, envelope.length);
    return out.toByteArray();
  }

  /**
   * Reads a dead letter of either format.
   *
   * @throws UndecodableDataException if it is neither
   */
  public static DeadRecord decode(byte[] bytes, Serde serde) {
    if (bytes.length == 0 || bytes[0] != Envelope.FORMAT) {
      return Binary.firstFormat(bytes, serde, DeadRecord.class, "dead letter");
    }
    Binary.In in = new Binary.In(bytes, 1);
    int attempts = in.intVarint();
    long at = in.varint();
    String by = in.string();
    String error = in.string();
    return new DeadRecord(
        Arrays.copyOfRange(bytes, in.at, bytes.length),
        attempts,
        error == null ? "" : error,
        at,
        by == null ? "" : by);
  }
}
