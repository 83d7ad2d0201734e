package io.dgen.internal.codec;

import org.jspecify.annotations.Nullable;
import tools.jackson.databind.JsonNode;

/**
 * A queue item: what kind of message, its type tag (if the declared type needs one), the message
 * tree, and for a call the caller's reply slot.
 *
 * @param k the kind, {@link #CALL} or {@link #CAST}
 * @param t the type tag, or null
 * @param m the message
 * @param s the reply slot's Unix second (calls)
 * @param i the reply slot's id (calls), or null
 * @param f consecutive failures of this queue item so far (kept in the item itself, so a message
 *     that succeeds leaves nothing behind to clear)
 * @param x the id of the last failure recorded, or null (a recording retried after
 *     commit_unknown_result sees its own id and counts once)
 */
public record Envelope(
    int k, @Nullable String t, JsonNode m, long s, @Nullable String i, int f, @Nullable String x) {

  /** A new envelope with no failures. */
  public static Envelope of(int k, @Nullable String t, JsonNode m, long s, @Nullable String i) {
    return new Envelope(k, t, m, s, i, 0, null);
  }

  /** This envelope with {@code count} failures, the last one {@code failureId}. */
  public Envelope withFailure(int count, String failureId) {
    return new Envelope(k, t, m, s, i, count, failureId);
  }

  /** A call. */
  public static final int CALL = 1;

  /** A cast. */
  public static final int CAST = 2;

  /** True for a call. */
  public boolean isCall() {
    return k == CALL;
  }
}
