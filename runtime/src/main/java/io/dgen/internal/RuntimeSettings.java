package io.dgen.internal;

import io.dgen.DGenListener;
import io.dgen.backend.Backend;
import io.dgen.internal.base.OperationTimeouts;
import io.dgen.internal.codec.Serde;
import io.dgen.internal.codec.StateCodec;
import io.dgen.internal.limits.LimitKeys;
import io.dgen.internal.observe.RuntimeHooks;
import java.time.Clock;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.Executor;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;

/**
 * What {@code DGen.Builder} configured, handed to the composition root ({@link RuntimeCore}) in one
 * value.
 *
 * @param backend the backend
 * @param serde the mapper
 * @param codec the state codec
 * @param ticker nanosecond clock
 * @param clock wall clock (lock ages, timers)
 * @param executor the executor of callbacks and asynchronous steps, or null for a fixed pool of
 *     {@code workerThreads} daemon threads that the runtime shuts down on close
 * @param workerThreads size of that pool
 * @param maxBatchesInFlight the bound on consumer batches in flight
 * @param retryInitial first backoff after a failed batch
 * @param retryMax backoff cap
 * @param listener hears events such as a fenced lock holder
 * @param hooks background consumers or not, the metrics and the tracing
 * @param operationTimeout the bound on pushes, kills and the like (see {@link OperationTimeouts})
 * @param leaseDuration how long a hosting runtime's leases outlive its last heartbeat
 * @param rateLimits the rate limits this runtime configures, stored by the runtime
 * @param concurrencyLimits the concurrency limits this runtime configures, stored likewise
 */
public record RuntimeSettings(
    Backend backend,
    Serde serde,
    StateCodec codec,
    LongSupplier ticker,
    Clock clock,
    @Nullable Executor executor,
    int workerThreads,
    int maxBatchesInFlight,
    Duration retryInitial,
    Duration retryMax,
    DGenListener listener,
    RuntimeHooks hooks,
    Duration operationTimeout,
    Duration leaseDuration,
    Map<String, LimitKeys.RateConfig> rateLimits,
    Map<String, Integer> concurrencyLimits) {}
