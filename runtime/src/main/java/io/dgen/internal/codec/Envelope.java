package io.dgen.internal.codec;

import io.dgen.UndecodableDataException;
import org.jspecify.annotations.Nullable;
import tools.jackson.databind.JsonNode;

/**
 * A queue item: a small binary header, then the message's bytes exactly as the mapper wrote them
 * (serialized once, never through a tree).
 *
 * <pre>
 * byte     1            format (1; an item of the first format is a Smile document: ':' or 0xFA)
 * byte     kind         1 call, 2 cast, 3 info; + 16 when the type index is of the kind's type
 *                       table; + 32 for a priority message a ref sent to its holder; + 64 when
 *                       the item carries its publisher's trace context
 * varint   type + 1     0: the declared message type; n + 1: entry n of the server's type table
 *                       (of its kind's, for a server addressed by id)
 * varint   failures     consecutive failures so far
 * string   failure id   the last failure recorded (failures > 0 only)
 * varint   slot second  calls and priority messages only: the caller's reply slot
 * string   slot id      calls and priority messages only
 * string   traceparent  traced items only (+ 64): the publisher's W3C traceparent
 * string   tracestate   traced items only: its W3C tracestate, or none
 * bytes    message      the rest: the message, Smile
 * </pre>
 *
 * Strings are a varint of the UTF-8 length plus one (0 for none), then the bytes. An item without a
 * trace context has no trace fields at all: tracing costs an untraced item nothing, and items
 * written before the flag existed read unchanged.
 *
 * @param kind {@link #CALL} or {@link #CAST}, with {@link #KIND_TABLE} when its type index is an
 *     entry of the server's kind's type table (a server addressed by id) rather than its own
 * @param typeIndex the message's entry in the server's type table, or {@link #DECLARED}
 * @param typeName the message's class name, in items of the first format (which named it)
 * @param slotSeconds the reply slot's Unix second (calls)
 * @param slotId the reply slot's id (calls), or null
 * @param failures consecutive failures of this item so far (kept in the item, so a message that
 *     succeeds leaves nothing behind to clear)
 * @param failureId the id of the last failure recorded, or null (a recording retried after
 *     commit_unknown_result sees its own id and counts once)
 * @param bytes the item (or, for an item of the first format, its message re-serialized)
 * @param messageOffset where the message starts in {@code bytes}
 * @param trace the publisher's trace context, or null (see {@link
 *     io.dgen.internal.observe.Tracing})
 */
public record Envelope(
    int kind,
    int typeIndex,
    @Nullable String typeName,
    long slotSeconds,
    @Nullable String slotId,
    int failures,
    @Nullable String failureId,
    byte[] bytes,
    int messageOffset,
    @Nullable Trace trace) {

  /** A call. */
  public static final int CALL = 1;

  /** A cast. */
  public static final int CAST = 2;

  /**
   * An info message ({@code handleInfo}); only ever a {@link #PRIORITY} one, sent by a ref whose
   * runtime does not host the server's kind.
   */
  public static final int INFO = 3;

  /**
   * A flag of {@link #kind}: a priority message ({@code priorityCall}, {@code priorityCast}, {@code
   * info}) that a ref whose runtime does not host the server's kind queued at the head for the
   * holder, with a reply slot for its outcome: run next, never retried (a failure is the caller's
   * error), never dead-lettered.
   */
  public static final int PRIORITY = 32;

  /**
   * A flag of {@link #kind}: the type index is an entry of the type table of the server's kind
   * ({@code FF (12, kind, n)}), shared by every server of the kind, not of the server's own.
   */
  public static final int KIND_TABLE = 16;

  /**
   * A flag of the stored kind byte: the item carries a {@link Trace}. Never set in {@link #kind}
   * (whether {@link #trace} is null says it).
   */
  static final int TRACED = 64;

  private static final int KIND_MASK = 15;
  private static final int FLAGS = KIND_TABLE | PRIORITY;

  /**
   * A publisher's W3C trace context, as it travels with an item.
   *
   * @param traceparent the {@code traceparent} header's value
   * @param tracestate the {@code tracestate} header's value, or null if there was none
   */
  public record Trace(String traceparent, @Nullable String tracestate) {}

  /** The message is of the declared type: no type index. */
  public static final int DECLARED = -1;

  /** The first byte of an item of this format. */
  static final byte FORMAT = 1;

  /** The most a failure adds to an item: its count and id. */
  static final int MAX_FAILURE_GROWTH = 64;

  /**
   * The largest item a push may write: after failures, and wrapped in the largest record that holds
   * an item (a dead letter; the lock record adds less), it still fits in one value.
   */
  public static final int MAX_ITEM =
      Chunks.MAX_VALUE
          - MAX_FAILURE_GROWTH
          - Math.max(DeadRecord.MAX_OVERHEAD, LockRecord.MAX_OVERHEAD);

  /** True for a call. */
  public boolean isCall() {
    return (kind & KIND_MASK) == CALL;
  }

  /** {@link #CALL}, {@link #CAST} or {@link #INFO}, without the flags. */
  public int type() {
    return kind & KIND_MASK;
  }

  /** True for a priority message sent to the holder ({@link #PRIORITY}). */
  public boolean priority() {
    return (kind & PRIORITY) != 0;
  }

  /** True if the item names a reply slot: a call, or a priority message. */
  public boolean hasSlot() {
    return hasSlot(kind);
  }

  private static boolean hasSlot(int kind) {
    return (kind & KIND_MASK) == CALL || (kind & PRIORITY) != 0;
  }

  /** True if the type index is an entry of the kind's type table ({@link #KIND_TABLE}). */
  public boolean kindTable() {
    return (kind & KIND_TABLE) != 0;
  }

  /**
   * Encodes a message as a queue item.
   *
   * @param typeIndex the message's type table entry, or {@link #DECLARED}
   * @param slotId the reply slot (calls), or null
   * @param trace the publisher's trace context, or null
   */
  public static byte[] encode(
      Serde serde,
      int kind,
      int typeIndex,
      long slotSeconds,
      @Nullable String slotId,
      @Nullable Trace trace,
      Object message) {
    Binary.Out out = header(kind, typeIndex, 0, null, slotSeconds, slotId, trace, 128);
    serde.mapper().writeValue(out, message);
    return out.toByteArray();
  }

  /**
   * This item, in this format, with {@code count} failures, the last one {@code failureId}.
   *
   * @param failureId the last failure's id; null with no failures
   * @param typeIndex the message's type table entry (an item of the first format named its type)
   */
  public byte[] withFailure(int count, @Nullable String failureId, int typeIndex) {
    int length = bytes.length - messageOffset;
    Binary.Out out =
        header(
            kind,
            typeIndex,
            count,
            failureId,
            slotSeconds,
            slotId,
            trace,
            length + MAX_FAILURE_GROWTH);
    out.write(bytes, messageOffset, length);
    return out.toByteArray();
  }

  /** The message's Smile bytes' length. */
  public int messageLength() {
    return bytes.length - messageOffset;
  }

  private static Binary.Out header(
      int kind,
      int typeIndex,
      int failures,
      @Nullable String failureId,
      long slotSeconds,
      @Nullable String slotId,
      @Nullable Trace trace,
      int size) {
    Binary.Out out = new Binary.Out(size + 48);
    out.write(FORMAT);
    out.write(trace == null ? kind : kind | TRACED);
    out.varint(typeIndex + 1L).varint(failures);
    if (failures > 0) {
      out.string(failureId);
    }
    if (hasSlot(kind)) {
      out.varint(slotSeconds).string(slotId);
    }
    if (trace != null) {
      out.string(trace.traceparent()).string(trace.tracestate());
    }
    return out;
  }

  /**
   * Reads a queue item, of either format.
   *
   * @throws UndecodableDataException if it is neither
   */
  public static Envelope decode(byte[] item, Serde serde) {
    if (item.length == 0) {
      throw new UndecodableDataException("empty queue item", null);
    }
    if (item[0] != FORMAT) {
      return first(item, serde);
    }
    Binary.In in = new Binary.In(item, 1);
    if (in.remaining() < 1) {
      throw new UndecodableDataException("queue item ends early", null);
    }
    int stored = item[in.at++];
    int kind = stored & ~TRACED;
    int type = kind & KIND_MASK;
    if ((kind & ~(KIND_MASK | FLAGS)) != 0
        || (type != CALL && type != CAST && !(type == INFO && (kind & PRIORITY) != 0))) {
      throw new UndecodableDataException("queue item of unknown kind " + kind, null);
    }
    int typeIndex = in.intVarint() - 1;
    int failures = in.intVarint();
    String failureId = failures > 0 ? in.string() : null;
    long slotSeconds = 0;
    String slotId = null;
    if (hasSlot(kind)) {
      slotSeconds = in.varint();
      slotId = in.string();
      if (slotId == null) {
        throw new UndecodableDataException("a call without a reply slot", null);
      }
    }
    Trace trace = null;
    if ((stored & TRACED) != 0) {
      String parent = in.string();
      if (parent == null) {
        throw new UndecodableDataException("a traced item without a traceparent", null);
      }
      trace = new Trace(parent, in.string());
    }
    return new Envelope(
        kind, typeIndex, null, slotSeconds, slotId, failures, failureId, item, in.at, trace);
  }

  /** The first format: a Smile document {k, t, m, s, i, f, x} with the message as a tree. */
  record First(
      int k,
      @Nullable String t,
      JsonNode m,
      long s,
      @Nullable String i,
      int f,
      @Nullable String x) {}

  private static Envelope first(byte[] item, Serde serde) {
    First v = Binary.firstFormat(item, serde, First.class, "queue item");
    if (v.k() != CALL && v.k() != CAST || v.m() == null) {
      throw new UndecodableDataException("queue item of unknown kind " + v.k(), null);
    }
    return new Envelope(
        v.k(), DECLARED, v.t(), v.s(), v.i(), v.f(), v.x(), serde.toBytes(v.m()), 0, null);
  }
}
