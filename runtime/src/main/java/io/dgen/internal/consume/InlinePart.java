package io.dgen.internal.consume;

import io.dgen.internal.calls.ReplySlots;
import io.dgen.internal.keys.ServerKeys;
import io.dgen.internal.queue.ServerQueue;

/**
 * A server's components that work running its callbacks inline in another transaction drives (an
 * atomic transaction of several servers): its inline runner, reply slots, queue and keys.
 *
 * @param inline runs its callbacks inline
 * @param slots its reply slots
 * @param queue its queue
 * @param keys its keys
 * @param context the server, for messages
 * @param <S> the state type
 * @param <M> the message type
 */
public record InlinePart<S, M>(
    InlineRunner<S, M> inline,
    ReplySlots slots,
    ServerQueue<M> queue,
    ServerKeys keys,
    String context) {}
