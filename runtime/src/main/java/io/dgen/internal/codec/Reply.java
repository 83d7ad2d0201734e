package io.dgen.internal.codec;

import org.jspecify.annotations.Nullable;
import tools.jackson.databind.JsonNode;

/**
 * A reply as stored in a reply slot: success with a tagged value, or a failure with a kind and a
 * message.
 *
 * @param t the value's type tag (success)
 * @param v the value (success), or null
 * @param e the failure kind, e.g. {@code "dead_letter"}, or null on success
 * @param msg the failure message, or null
 * @param n the attempts (dead letters)
 */
public record Reply(
    @Nullable String t, @Nullable JsonNode v, @Nullable String e, @Nullable String msg, int n) {}
