package io.dgen.internal.consume;

import io.dgen.internal.base.Lifecycle;
import io.dgen.internal.behaviour.CallbackInvoker;
import io.dgen.internal.commit.CommitRunner;
import io.dgen.internal.lock.DeadLetters;
import io.dgen.internal.lock.LockCoordinator;
import io.dgen.internal.state.StateStore;

/**
 * What consuming one process's queue takes, shared by its two drivers: the {@link ConsumeLoop} (in
 * the background) and the {@link CallerDrain} (in a test's thread). Holds nothing of its own.
 *
 * @param consumeK the most items a batch takes
 * @param deadLetterThreshold the failures after which an item is dead-lettered
 * @param undecodableState tells the runtime's listener that the server's state cannot be decoded
 * @param <S> the state type
 * @param <M> the message type
 */
public record ConsumerParts<S, M>(
    CommitRunner commits,
    ConsumerBatch<S, M> batches,
    StateStore<S> states,
    LockCoordinator<S, M> locks,
    DeadLetters<M> deadLetters,
    CallbackInvoker<S, M> invoker,
    Lifecycle lifecycle,
    int consumeK,
    int deadLetterThreshold,
    java.util.function.Consumer<io.dgen.UndecodableDataException> undecodableState) {}
