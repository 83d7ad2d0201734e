/**
 * DGen: durable, distributed {@code gen_server}s for the JVM.
 *
 * <p>A durable server is state plus the operations on it ({@link io.dgen.DGenServer}). Its state
 * and its FIFO message queue live in a transactional key-value store ({@link
 * io.dgen.backend.Backend}), so it outlives any thread, JVM or node. Servers come in kinds ({@link
 * io.dgen.Kind}): every instance of a service hosts a kind ({@link io.dgen.DGen#host(io.dgen.Kind,
 * java.util.function.Supplier, io.dgen.HostOptions)}), and any code reaches one of its servers by
 * id through a {@link io.dgen.ServerRef} ({@link io.dgen.DGen#ref(io.dgen.Tenant, io.dgen.Kind,
 * String)}): {@code call} (a request that implements {@link io.dgen.Call}), {@code cast}, {@code
 * castAll}, timers, and {@link io.dgen.Outbox} to enqueue inside a transaction of your own. A
 * handler refuses a message by throwing {@link io.dgen.TerminalException}; its caller gets {@link
 * io.dgen.CallRejectedException}. {@link io.dgen.DGen#start} runs a server as a process you run
 * yourself.
 *
 * <pre>{@code
 * try (DGen dgen = DGen.builder(MemoryBackend.create()).build()) {
 *   Tenant tenant = dgen.tenant("demo");
 *   dgen.host(Counter.KIND, Counter::new, HostOptions.builder(tenant).build()); // every replica
 *   ServerRef<Counter.Msg> hits = dgen.ref(tenant, Counter.KIND, "home"); // anywhere, by id
 *   hits.cast(new Counter.Increment(5));
 *   long value = hits.call(new Counter.Get()); // Get is a Call<Long>
 * }
 * }</pre>
 *
 * <p>Everything under {@code io.dgen.internal} is an implementation detail with no compatibility
 * guarantee.
 */
@NullMarked
package io.dgen;

import org.jspecify.annotations.NullMarked;
