package io.dgen.internal.keys;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Base64;
import java.util.Objects;
import java.util.UUID;
import org.jspecify.annotations.Nullable;

/**
 * A timer's index entry: {@code (tuid length, tuid, envelope)} for a one-shot timer; for a
 * recurring one {@code (-1, schedule length, schedule, tuid length, tuid, envelope)}, which a
 * runtime before recurring timers cannot read (see CHANGELOG).
 *
 * @param schedule when it fires again, or null for a one-shot timer
 * @param tuid the packed tuid of its server
 * @param envelope the queue item it pushes
 */
public record TimerEntry(@Nullable TimerSchedule schedule, byte[] tuid, byte[] envelope) {

  private static final int RECURRING = -1;

  public byte[] encode() {
    byte[] sched = schedule == null ? null : schedule.encode();
    int head = sched == null ? 0 : 2 * Integer.BYTES + sched.length;
    ByteBuffer b = ByteBuffer.allocate(head + Integer.BYTES + tuid.length + envelope.length);
    if (sched != null) {
      b.putInt(RECURRING).putInt(sched.length).put(sched);
    }
    return b.putInt(tuid.length).put(tuid).put(envelope).array();
  }

  public static TimerEntry decode(byte[] value) {
    ByteBuffer b = ByteBuffer.wrap(value);
    int n = b.getInt();
    TimerSchedule schedule = null;
    if (n == RECURRING) {
      byte[] sched = new byte[b.getInt()];
      b.get(sched);
      schedule = TimerSchedule.decode(sched);
      n = b.getInt();
    }
    byte[] tuid = new byte[n];
    b.get(tuid);
    return new TimerEntry(schedule, tuid, Arrays.copyOfRange(value, b.position(), value.length));
  }

  // ---------------------------------------------------------------- ids and times

  private static final Base64.Encoder ID_ENCODER = Base64.getUrlEncoder().withoutPadding();

  /** A timer's id as the API shows it: its UUID, URL-safe Base64. */
  public static String format(UUID id) {
    return ID_ENCODER.encodeToString(
        ByteBuffer.allocate(16)
            .putLong(id.getMostSignificantBits())
            .putLong(id.getLeastSignificantBits())
            .array());
  }

  /**
   * The UUID of a timer id.
   *
   * @throws IllegalArgumentException if it is not one
   */
  public static UUID parse(String timerId) {
    Objects.requireNonNull(timerId, "timerId must not be null");
    byte[] b;
    try {
      b = Base64.getUrlDecoder().decode(timerId);
    } catch (IllegalArgumentException e) {
      b = new byte[0];
    }
    if (b.length != 16) {
      throw new IllegalArgumentException(
          "not a timer id: \""
              + timerId
              + "\"; use an id castAfter, castAt, castEvery or castCron returned");
    }
    ByteBuffer buf = ByteBuffer.wrap(b);
    return new UUID(buf.getLong(), buf.getLong());
  }
}
