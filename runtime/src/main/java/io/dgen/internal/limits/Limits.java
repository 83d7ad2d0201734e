package io.dgen.internal.limits;

import com.apple.foundationdb.subspace.Subspace;
import io.dgen.ServerOptions;
import io.dgen.internal.base.RuntimeServices;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The rate and concurrency limits of one runtime: it stores the configuration this runtime was
 * built with (a changed value replaces the stored one and is logged), checks that every limit a
 * server names is stored, and makes one {@link RateLimiter} and one {@link ConcurrencyGate} per
 * limit its servers name, shared by them.
 *
 * <p>Never enforces anything itself, and never reads a limit's numbers from this runtime's builder
 * once stored: the limiters read the stored configuration, so that every runtime enforces the same.
 *
 * <p>Threading: thread-safe.
 */
public final class Limits {

  private static final Logger log = LoggerFactory.getLogger(Limits.class);

  /** The limits a runtime was built with, by name. */
  public record Config(Map<String, LimitKeys.RateConfig> rates, Map<String, Integer> concurrency) {
    public Config {
      rates = Map.copyOf(rates);
      concurrency = Map.copyOf(concurrency);
    }

    boolean isEmpty() {
      return rates.isEmpty() && concurrency.isEmpty();
    }
  }

  private final RuntimeServices services;
  private final Config config;
  private volatile @Nullable LimitKeys keys;
  private final Map<String, RateLimiter> rates = new ConcurrentHashMap<>();
  private final Map<String, ConcurrencyGate> gates = new ConcurrentHashMap<>();

  public Limits(RuntimeServices services, Config config) {
    this.services = services;
    this.config = config;
  }

  /**
   * Stores the configured limits: a limit stored with other numbers is updated, with a warning
   * naming both; one stored with the same numbers is left alone.
   */
  public void store() {
    if (config.isEmpty()) {
      return;
    }
    LimitKeys k = keys(true);
    List<String> changes =
        services
            .backend()
            .run(
                tx -> {
                  List<String> changed = new ArrayList<>();
                  config
                      .rates()
                      .forEach(
                          (name, c) -> {
                            LimitKeys.RateConfig stored =
                                LimitKeys.RateConfig.decode(tx.get(k.rateConfig(name)));
                            if (!c.equals(stored)) {
                              tx.set(k.rateConfig(name), c.encode());
                              if (stored != null) {
                                changed.add("rate limit " + name + ": " + stored + " -> " + c);
                              }
                            }
                          });
                  config
                      .concurrency()
                      .forEach(
                          (name, limit) -> {
                            Integer stored =
                                LimitKeys.decodeLimit(tx.get(k.concurrencyConfig(name)));
                            if (!limit.equals(stored)) {
                              tx.set(k.concurrencyConfig(name), LimitKeys.encodeLimit(limit));
                              if (stored != null) {
                                changed.add(
                                    "concurrency limit " + name + ": " + stored + " -> " + limit);
                              }
                            }
                          });
                  return changed;
                });
    for (String change : changes) {
      log.warn(
          "this runtime's configuration changed a stored limit; every runtime enforces the new"
              + " value from its next transaction on: {}",
          change);
    }
  }

  /**
   * Checks that the limits {@code options} names are stored (configured by some runtime).
   *
   * @throws IllegalArgumentException naming the limit and how to configure it, if not
   */
  public void check(ServerOptions options) {
    options.rateLimit().ifPresent(this::rate);
    options.concurrencyLimit().ifPresent(this::gate);
  }

  /** The limiter of rate limit {@code name}, which must be stored. */
  public RateLimiter rate(String name) {
    RateLimiter r = rates.get(name);
    if (r != null) {
      return r;
    }
    LimitKeys k = stored("rate", "rateLimit(\"" + name + "\", permitsPerSecond, burst)");
    LimitKeys.RateConfig c =
        services.backend().run(tx -> LimitKeys.RateConfig.decode(tx.get(k.rateConfig(name))));
    if (c == null) {
      throw unconfigured("rate", name, "rateLimit(\"" + name + "\", permitsPerSecond, burst)");
    }
    return rates.computeIfAbsent(
        name,
        n -> {
          RateLimiter limiter =
              new RateLimiter(
                  n,
                  services.memberId(),
                  k,
                  c,
                  services.backend(),
                  services::nanoTime,
                  services::wallMillis,
                  services.executor(),
                  services.scheduler(),
                  services.hooks().metrics());
          limiter.start();
          return limiter;
        });
  }

  /** The gate of concurrency limit {@code name}, which must be stored. */
  public ConcurrencyGate gate(String name) {
    ConcurrencyGate g = gates.get(name);
    if (g != null) {
      return g;
    }
    String how = "concurrencyLimit(\"" + name + "\", limit)";
    LimitKeys k = stored("concurrency", how);
    Integer limit =
        services.backend().run(tx -> LimitKeys.decodeLimit(tx.get(k.concurrencyConfig(name))));
    if (limit == null) {
      throw unconfigured("concurrency", name, how);
    }
    return gates.computeIfAbsent(name, n -> new ConcurrencyGate(n, k, services));
  }

  @Override
  public String toString() {
    return rates.values().toString();
  }

  /** Stops the limiters: their waiters' processes are stopping. */
  public void close() {
    rates.values().forEach(RateLimiter::close);
    gates.values().forEach(ConcurrencyGate::close);
  }

  private LimitKeys stored(String type, String how) {
    LimitKeys k = keys(false);
    if (k == null) {
      throw new IllegalArgumentException(
          "no "
              + type
              + " limit is configured in this cluster: configure it on a runtime with"
              + " DGen.Builder."
              + how);
    }
    return k;
  }

  private static IllegalArgumentException unconfigured(String type, String name, String how) {
    return new IllegalArgumentException(
        "the "
            + type
            + " limit "
            + name
            + " is not configured by any runtime: configure it with DGen.Builder."
            + how
            + " limit="
            + name);
  }

  private @Nullable LimitKeys keys(boolean create) {
    LimitKeys k = keys;
    if (k != null) {
      return k;
    }
    Optional<Subspace> dir =
        create
            ? Optional.of(services.backend().directory(LimitKeys.directory()))
            : services.backend().openDirectory(LimitKeys.directory());
    if (dir.isEmpty()) {
      return null;
    }
    k = new LimitKeys(dir.get());
    keys = k;
    return k;
  }
}
