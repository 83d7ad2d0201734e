package io.dgen.internal.process;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.DGenServer;
import io.dgen.ServerOptions;
import io.dgen.Tenant;
import io.dgen.internal.base.RuntimeServices;
import io.dgen.internal.codec.TypeNames;
import io.dgen.internal.keys.Buckets;
import io.dgen.internal.keys.ServerKeys;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The tuid of a started server whose {@code init} names none: from its behaviour's logical name, or
 * an alias under which a renamed behaviour's server has state.
 *
 * <p>Threading: stateless.
 */
final class DefaultTuid {

  private static final Logger log = LoggerFactory.getLogger(DefaultTuid.class);

  /** The first element of a default tuid. */
  static final String PREFIX = "dgen_server";

  private DefaultTuid() {}

  /**
   * The default tuid {@code ("dgen_server", name)}: the behaviour's logical name if it is annotated
   * with {@link io.dgen.TypeName} (else its class name); if no server has state under it but one
   * has under an alias, that one (a renamed behaviour keeps its server). One read-only transaction,
   * only for an annotated behaviour with aliases.
   */
  static Tuple of(RuntimeServices services, DGenServer<?, ?> server, ServerOptions options) {
    Tuple named = Tuple.from(PREFIX, TypeNames.name(server.getClass()));
    io.dgen.TypeName annotation = server.getClass().getAnnotation(io.dgen.TypeName.class);
    if (annotation == null || annotation.aliases().length == 0) {
      return named;
    }
    Tenant tenant = options.tenant();
    Buckets buckets = Buckets.of(tenant.bucketCount());
    Tuple found =
        services
            .backend()
            .run(
                tx -> {
                  if (tx.get(new ServerKeys(tenant.subspace(), buckets, named).versionKey())
                      != null) {
                    return named;
                  }
                  for (String alias : annotation.aliases()) {
                    Tuple old = Tuple.from(PREFIX, alias);
                    if (tx.get(new ServerKeys(tenant.subspace(), buckets, old).versionKey())
                        != null) {
                      return old;
                    }
                  }
                  return named;
                });
    if (!found.equals(named)) {
      log.info(
          "behaviour {} starts the server stored under its alias: tuid={}",
          server.getClass().getName(),
          found);
    }
    return found;
  }
}
