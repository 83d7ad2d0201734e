/**
 * Serialization: the Smile mapper, the allow-list of types stored data may name, queue envelopes,
 * replies, and the state codecs. No compatibility guarantee.
 */
@InternalApi
@NullMarked
package io.dgen.internal.codec;

import io.dgen.InternalApi;
import org.jspecify.annotations.NullMarked;
