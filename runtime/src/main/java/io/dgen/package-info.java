/**
 * DGen: durable, distributed {@code gen_server}s for the JVM.
 *
 * <p>A durable server is state plus the operations on it ({@link io.dgen.DGenServer}). Its state
 * and its FIFO message queue live in a transactional key-value store ({@link
 * io.dgen.backend.Backend}), so it outlives any thread, JVM or node. Start one with {@link
 * io.dgen.DGen#start}, talk to it through the returned {@link io.dgen.ServerRef}: {@code call},
 * {@code cast}, {@code castAll}, {@code priorityCall}, {@code priorityCast}, {@code info}, and
 * {@link io.dgen.Outbox} to enqueue inside a transaction of your own.
 *
 * <pre>{@code
 * try (DGen dgen = DGen.builder(MemoryBackend.create()).build()) {
 *   Tenant tenant = dgen.tenant("demo", "counter");
 *   ServerRef<CounterMsg> ref = dgen.start(new Counter(), null, StartOptions.builder(tenant).build());
 *   ref.cast(new Increment(5));
 *   long value = ref.call(new Get()); // the counter replies with its long value
 * }
 * }</pre>
 *
 * <p>Everything under {@code io.dgen.internal} is an implementation detail with no compatibility
 * guarantee.
 */
@NullMarked
package io.dgen;

import org.jspecify.annotations.NullMarked;
