package io.dgen.internal.keys;

import com.apple.foundationdb.tuple.Tuple;
import java.time.Instant;
import java.util.UUID;
import org.jspecify.annotations.Nullable;

/**
 * Why a hosted server is not running although it has work: its stored state did not decode when its
 * holder last loaded it. Stored at {@code (tuid.., "u")} by the holder, shown by {@code dgen
 * inspect} and the dashboard, cleared by a state repair ({@code ServerAdmin.replaceState}), an
 * eviction and a kill. Encoded as a tuple {@code (wallMillis, member, message)}.
 *
 * <p>Public for the admin tools ({@code io.dgen.admin}); not an API.
 *
 * @param since when the holder found the state undecodable (its wall clock)
 * @param member the placement member id of the runtime that found it
 * @param reason the decoding error's message
 */
public record StuckRecord(Instant since, String member, String reason) {

  /** The longest reason kept: a record stays small whatever the error says. */
  private static final int REASON_MAX = 2_000;

  /** Encodes a record: {@code reason} is cut at {@value #REASON_MAX} characters. */
  public static byte[] encode(long wallMillis, UUID member, @Nullable String reason) {
    String r = reason == null ? "" : reason;
    if (r.length() > REASON_MAX) {
      r = r.substring(0, REASON_MAX) + "…";
    }
    return Tuple.from(wallMillis, member.toString(), r).pack();
  }

  /**
   * Decodes a stored record.
   *
   * @throws IllegalArgumentException if {@code bytes} is not one
   */
  public static StuckRecord decode(byte[] bytes) {
    try {
      Tuple t = Tuple.fromBytes(bytes);
      return new StuckRecord(Instant.ofEpochMilli(t.getLong(0)), t.getString(1), t.getString(2));
    } catch (RuntimeException e) {
      throw new IllegalArgumentException("not a stuck-server record", e);
    }
  }
}
