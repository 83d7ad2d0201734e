package io.dgen.internal.observe;

import io.dgen.ServerRef;
import java.util.function.IntSupplier;

/**
 * The runtime's meters, as hooks: the runtime calls them and knows no metrics library. {@link
 * #NONE} records nothing; {@link MicrometerMetrics}, the one class that touches Micrometer, records
 * them in a {@code MeterRegistry} (see {@code docs/operations.md}, "Metrics"). Implementations are
 * thread-safe and never throw.
 */
public interface Metrics {

  /** Records nothing. */
  Metrics NONE = new Metrics() {};

  /** The meters of the servers of one tenant and behaviour: never per server (tuid). */
  default Server server(String tenant, Class<?> behaviour) {
    return Server.NONE;
  }

  /** A transaction of the runtime is retried after the retryable error {@code code}. */
  default void transactionRetried(int code) {}

  /**
   * A push transaction of plain casts committed, carrying {@code casts} {@code cast} or {@code
   * castAll} calls (more than one when publisher group commit grouped them).
   */
  default void pushed(int casts) {}

  /**
   * A transaction that carried the one-message batches of {@code servers} servers committed
   * (consumers batching across servers at {@code consumeK} 1; batches that ran alone are not
   * counted here).
   */
  default void consumedTogether(int servers) {}

  /**
   * The runtime's gauges: its live processes, and the watches it holds (one per bucket it uses in
   * each tenant).
   */
  default void runtime(IntSupplier processes, IntSupplier watches) {}

  /**
   * The gauges of a kind this runtime hosts in a tenant: the buckets whose lease it holds, and the
   * servers of the kind it has loaded.
   */
  default void hosted(String tenant, String kind, IntSupplier buckets, IntSupplier loaded) {}

  /** A hosted server of {@code kind} expired and was deleted ({@code expireAfter}). */
  default void expired(String tenant, String kind) {}

  /**
   * The meters of the limit {@code name} of {@code type} ({@code "rate"} or {@code "concurrency"})
   * in this runtime, with the gauge of its servers waiting for a permit now.
   */
  default Limit limit(String name, String type, IntSupplier throttled) {
    return Limit.NONE;
  }

  /** Meters of one limit in this runtime. */
  interface Limit {

    /** Records nothing. */
    Limit NONE = new Limit() {};

    /** {@code permits} permits were granted to a server (taken by a batch). */
    default void granted(int permits) {}

    /** A server waited {@code nanos} for a permit. */
    default void waited(long nanos) {}

    /**
     * A limiter transaction committed after {@code attempts} attempts (conflicts: attempts - 1).
     */
    default void transaction(int attempts) {}
  }

  /** Meters of one tenant and behaviour. */
  interface Server {

    /** Records nothing. */
    Server NONE = new Server() {};

    /** A call's route. */
    enum Route {
      INLINE,
      QUEUED,
      PRIORITY
    }

    /** A consumer batch committed {@code processed} messages (at least 1) in {@code nanos}. */
    default void batch(int processed, long nanos) {}

    /** A callback failed on a message: its batch was aborted. */
    default void failed() {}

    /** A message was moved to the dead letters. */
    default void deadLettered() {}

    /** A cast was refused by its handler ({@code TerminalException}) and dropped (committed). */
    default void castRefused() {}

    /** The server's stored state could not be decoded: its process stopped. */
    default void stateUndecodable() {}

    /** A callback's {@code Result.lock} took the lock (committed). */
    default void lockAcquired() {}

    /** An expired lock was busted (committed). */
    default void lockBusted() {}

    /** A call ended after {@code nanos}, with a reply or failed. */
    default void call(Route route, long nanos, boolean failed) {}

    /** A process of this behaviour started: its queue may be sampled. */
    default void started(ServerRef<?> process) {}

    /** A process of this behaviour stopped. */
    default void stopped(ServerRef<?> process) {}
  }
}
