/**
 * Inspection and repair of stored servers without their behaviours: {@link io.dgen.admin.DGenAdmin}
 * lists a backend's tenants, {@link io.dgen.admin.TenantAdmin} a tenant's servers, and {@link
 * io.dgen.admin.ServerAdmin} reads one server's state, queue, lock and dead letters as Jackson
 * trees and re-queues, purges or kills. Nothing here loads a behaviour's, state's or message's
 * class: the stored Smile is decoded generically, so the admin CLI ({@code dgen}) runs with only
 * the runtime on its class path.
 */
@NullMarked
package io.dgen.admin;

import org.jspecify.annotations.NullMarked;
