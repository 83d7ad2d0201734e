/**
 * Serialization: the Smile mapper, the allow-list of types stored data may name, queue envelopes,
 * replies, and the state codecs. No compatibility guarantee.
 */
@NullMarked
package io.dgen.internal.codec;

import org.jspecify.annotations.NullMarked;
