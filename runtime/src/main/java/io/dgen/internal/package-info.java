/**
 * The runtime's implementation: the key layout ({@code ServerKeys}, {@code TenantKeys}), the shared
 * runtime ({@code RuntimeCore}: the executor, the bound on batches in flight, per tenant a doorbell
 * watcher holding one watch per bucket in use, batched clears) and, per process, the handle ({@code
 * ServerProcess}) over small components with one concern each (commit runner, state store, queue,
 * reply slots, call protocol, callback invoker, inline runner, consumer batch, consume loop, lock
 * coordinator, dead letters, sweeper, lifecycle); {@code docs/architecture.md} draws them. No
 * compatibility guarantee: anything here may change in any release.
 */
@NullMarked
package io.dgen.internal;

import org.jspecify.annotations.NullMarked;
