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
 */
public record Envelope(int k, @Nullable String t, JsonNode m, long s, @Nullable String i) {

  /** A call. */
  public static final int CALL = 1;

  /** A cast. */
  public static final int CAST = 2;

  /** True for a call. */
  public boolean isCall() {
    return k == CALL;
  }
}
