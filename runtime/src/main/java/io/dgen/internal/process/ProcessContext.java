package io.dgen.internal.process;

import io.dgen.Tenant;
import io.dgen.internal.base.RuntimeServices;
import io.dgen.internal.consume.ConsumeGroups;
import io.dgen.internal.limits.Limits;
import io.dgen.internal.queue.PushGroups;
import io.dgen.internal.tenant.TenantRuntime;
import java.util.function.Function;

/**
 * What every process of one runtime is handed by the composition root ({@code RuntimeCore}): the
 * runtime's services, the registry of its live started processes, its per-tenant runtimes, its
 * limits, and the groups that share transactions among its casts and among its consumers' batches.
 *
 * @param services the runtime's services
 * @param processes the live started processes and their names
 * @param tenants what this runtime runs for a tenant, made on first use
 * @param limits the rate and concurrency limits
 * @param pushGroups the group commit of plain casts
 * @param consumeGroups the batches of one message that share transactions across servers
 */
public record ProcessContext(
    RuntimeServices services,
    LocalProcesses processes,
    Function<Tenant, TenantRuntime> tenants,
    Limits limits,
    PushGroups pushGroups,
    ConsumeGroups consumeGroups) {

  /** What this runtime runs for {@code tenant}: its doorbells and timers. */
  TenantRuntime tenant(Tenant tenant) {
    return tenants.apply(tenant);
  }
}
