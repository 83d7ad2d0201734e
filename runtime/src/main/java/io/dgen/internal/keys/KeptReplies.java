package io.dgen.internal.keys;

import io.dgen.From;
import io.dgen.UnknownCallException;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

/**
 * Kept replies: the replies of {@code submit}ted and keyed calls, kept (not cleared when read)
 * until their retention window ends. A kept call's {@link From} names its slot under {@code
 * (tuid.., "r", expirySecond, id)} instead of a waiting caller's {@code ("c", createdSecond, id)}:
 * its seconds are the second it expires at, and its id carries a prefix no random id has. Its call
 * id, the string users hold, is {@code "<expirySecond>:<uuid>"}.
 *
 * <p>Stateless; the reply slots and the call protocol ask it what kind of slot a {@code From}
 * names.
 */
public final class KeptReplies {

  private static final String PREFIX = "kept:";

  private KeptReplies() {}

  /** Whether {@code from} names a kept reply. */
  public static boolean isKept(From from) {
    return from.slotId().startsWith(PREFIX);
  }

  /** A fresh kept call that expires {@code retention} after {@code nowMillis}. */
  public static From newFrom(long nowMillis, Duration retention) {
    return new From(expirySecond(nowMillis, retention), PREFIX + UUID.randomUUID());
  }

  /** The first whole second at or after {@code nowMillis + retention}. */
  public static long expirySecond(long nowMillis, Duration retention) {
    long end = nowMillis + retention.toMillis();
    return Math.floorDiv(end + 999, 1000);
  }

  /** Whether something expiring at {@code expirySecond} has expired at {@code nowMillis}. */
  public static boolean expired(long expirySecond, long nowMillis) {
    return expirySecond <= TimeUnit.MILLISECONDS.toSeconds(nowMillis);
  }

  /** The id users hold for the kept call {@code from}. */
  public static String callId(From from) {
    return from.slotSeconds() + ":" + from.slotId().substring(PREFIX.length());
  }

  /**
   * The kept call a call id names.
   *
   * @throws UnknownCallException if {@code callId} is not a call id
   */
  public static From parse(String callId) {
    int colon = callId.indexOf(':');
    try {
      long seconds = Long.parseLong(callId.substring(0, Math.max(colon, 0)));
      UUID id = UUID.fromString(callId.substring(colon + 1));
      return new From(seconds, PREFIX + id);
    } catch (RuntimeException e) {
      throw new UnknownCallException("not a call id: '" + callId + "'");
    }
  }
}
