package io.dgen;

import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import org.jspecify.annotations.Nullable;

/**
 * The options a server has however it runs: those of a process {@link DGen#start} starts ({@link
 * StartOptions}) and those of every server of a kind {@link DGen#host} hosts ({@link HostOptions}).
 * Each of the two adds only the options that apply to it, so a builder offers nothing its use would
 * refuse: a hosted kind has no {@code name} or {@code reset}, a started process no {@code
 * idleTimeout} or {@code expireAfter}. Immutable.
 */
public abstract sealed class ServerOptions permits StartOptions, HostOptions {

  private final Tenant tenant;
  private final boolean cache;
  private final int consumeK;
  private final int deadLetterThreshold;
  private final @Nullable Duration lockTimeout;
  private final Duration callTimeout;
  private final List<Class<?>> allowedTypes;
  private final Duration idempotencyRetention;
  private final @Nullable String rateLimit;
  private final @Nullable String concurrencyLimit;

  ServerOptions(Builder<?, ?> b) {
    this.tenant = b.tenant;
    this.cache = b.cache;
    this.consumeK = b.consumeK;
    this.deadLetterThreshold = b.deadLetterThreshold;
    this.lockTimeout = b.lockTimeout;
    this.callTimeout = b.callTimeout;
    this.allowedTypes = List.copyOf(b.allowedTypes);
    this.idempotencyRetention = b.idempotencyRetention;
    this.rateLimit = b.rateLimit;
    this.concurrencyLimit = b.concurrencyLimit;
  }

  /** The tenant the server lives in. */
  public Tenant tenant() {
    return tenant;
  }

  /** Whether the consumer caches the decoded state between batches (default true). */
  public boolean cache() {
    return cache;
  }

  /** The maximum number of queued messages per consumer transaction (default 1). */
  public int consumeK() {
    return consumeK;
  }

  /** Consecutive failures before a message is dead-lettered; empty means never (the default). */
  public OptionalInt deadLetterThreshold() {
    return deadLetterThreshold == Integer.MAX_VALUE
        ? OptionalInt.empty()
        : OptionalInt.of(deadLetterThreshold);
  }

  /** How long a lock may be held before another consumer busts it; empty means never. */
  public Optional<Duration> lockTimeout() {
    return Optional.ofNullable(lockTimeout);
  }

  /** The default timeout of {@link ServerRef#call(Call)} (default 5 s). */
  public Duration callTimeout() {
    return callTimeout;
  }

  /** Extra classes allowed in messages and replies besides the server's declared types. */
  public List<Class<?>> allowedTypes() {
    return allowedTypes;
  }

  /** How long idempotency keys and kept replies are remembered (default 24 hours). */
  public Duration idempotencyRetention() {
    return idempotencyRetention;
  }

  /**
   * The rate limit whose permits this server's consumed messages take, if any (see {@link
   * Builder#rateLimit}).
   */
  public Optional<String> rateLimit() {
    return Optional.ofNullable(rateLimit);
  }

  /**
   * The concurrency limit that bounds how many servers naming it run {@code handleLocked} at once,
   * if any (see {@link Builder#concurrencyLimit}).
   */
  public Optional<String> concurrencyLimit() {
    return Optional.ofNullable(concurrencyLimit);
  }

  /**
   * The setters both {@link StartOptions.Builder} and {@link HostOptions.Builder} have; each
   * returns the builder it is called on, so that the options of either kind chain in any order.
   * Setters validate their argument and fail fast. Not thread-safe.
   *
   * @param <B> the builder's own type
   * @param <O> the options it builds
   */
  public abstract static class Builder<B extends Builder<B, O>, O extends ServerOptions> {
    private final Tenant tenant;
    private boolean cache = true;
    private int consumeK = 1;
    private int deadLetterThreshold = Integer.MAX_VALUE;
    private @Nullable Duration lockTimeout;
    private Duration callTimeout = Duration.ofSeconds(5);
    private List<Class<?>> allowedTypes = List.of();
    private Duration idempotencyRetention = Duration.ofHours(24);
    private @Nullable String rateLimit;
    private @Nullable String concurrencyLimit;

    Builder(Tenant tenant) {
      this.tenant = Objects.requireNonNull(tenant, "tenant must not be null");
    }

    /** This builder, as its own type: {@code B} is the type of every subclass's {@code this}. */
    @SuppressWarnings("unchecked")
    private B self() {
      return (B) this;
    }

    /** The options, once the common ones are checked. */
    abstract O create();

    /**
     * Whether the consumer keeps the state between batches and validates it by the version key
     * alone instead of reading it. Default true.
     *
     * @param cache whether to cache
     * @return this builder
     */
    public B cache(boolean cache) {
      this.cache = cache;
      return self();
    }

    /**
     * The maximum number of queued messages processed per transaction. Default 1, which also
     * enables inline calls; greater values batch, and every call then goes through the queue.
     *
     * @param consumeK at least 1
     * @return this builder
     * @throws IllegalArgumentException if {@code consumeK < 1}
     */
    public B consumeK(int consumeK) {
      if (consumeK < 1) {
        throw new IllegalArgumentException("consumeK must be at least 1, was " + consumeK);
      }
      this.consumeK = consumeK;
      return self();
    }

    /**
     * Consecutive failures after which a queued message is moved to the dead letters. Default:
     * never.
     *
     * @param threshold at least 1
     * @return this builder
     * @throws IllegalArgumentException if {@code threshold < 1}
     */
    public B deadLetterThreshold(int threshold) {
      if (threshold < 1) {
        throw new IllegalArgumentException(
            "deadLetterThreshold must be at least 1, was " + threshold);
      }
      this.deadLetterThreshold = threshold;
      return self();
    }

    /**
     * How long a lock may be held before another consumer busts it. Default: never.
     *
     * @param lockTimeout positive
     * @return this builder
     * @throws IllegalArgumentException if not positive
     */
    public B lockTimeout(Duration lockTimeout) {
      Objects.requireNonNull(lockTimeout, "lockTimeout must not be null");
      if (lockTimeout.isNegative() || lockTimeout.isZero()) {
        throw new IllegalArgumentException("lockTimeout must be positive, was " + lockTimeout);
      }
      this.lockTimeout = lockTimeout;
      return self();
    }

    /**
     * The default timeout of {@link ServerRef#call(Call)}. Default 5 s, at most one hour (reply
     * slots older than that are swept as abandoned).
     *
     * @param callTimeout positive, at most one hour
     * @return this builder
     * @throws IllegalArgumentException if not positive or over an hour
     */
    public B callTimeout(Duration callTimeout) {
      Objects.requireNonNull(callTimeout, "callTimeout must not be null");
      if (callTimeout.isNegative()
          || callTimeout.isZero()
          || callTimeout.compareTo(Duration.ofHours(1)) > 0) {
        throw new IllegalArgumentException(
            "callTimeout must be positive and at most one hour, was " + callTimeout);
      }
      this.callTimeout = callTimeout;
      return self();
    }

    /**
     * Allows extra classes in messages and replies, besides the server's declared message type, its
     * permitted subtypes (for a sealed type), its state type and common JDK value types. Stored
     * data naming any other class is refused without loading that class.
     *
     * @param types the classes
     * @return this builder
     */
    public B allowTypes(Class<?>... types) {
      for (Class<?> t : types) {
        Objects.requireNonNull(t, "allowed type must not be null");
      }
      this.allowedTypes = List.of(types);
      return self();
    }

    /**
     * How long idempotency keys ({@link ServerRef#cast(Object, String)}, {@link ServerRef#call(
     * Call, String, Duration)}) and kept replies ({@link ServerRef#submit}) of this server are
     * remembered, by the runtime's clock. Default 24 hours.
     *
     * @param retention positive, at most 3,650 days
     * @return this builder
     * @throws IllegalArgumentException if not positive or too long
     */
    public B idempotencyRetention(Duration retention) {
      Objects.requireNonNull(retention, "idempotencyRetention must not be null");
      if (retention.isNegative()
          || retention.isZero()
          || retention.compareTo(Duration.ofDays(3650)) > 0) {
        throw new IllegalArgumentException(
            "idempotencyRetention must be positive and at most 3650 days, was " + retention);
      }
      this.idempotencyRetention = retention;
      return self();
    }

    /**
     * Paces this server's consumption with the rate limit {@code name}, configured on a runtime
     * with {@link DGen.Builder#rateLimit}: each message the server consumes from its queue takes
     * one permit of the limit's bucket, which every server of every runtime that names it shares. A
     * server without a permit waits, holding no thread and no transaction; its queue keeps its
     * order. Publishing is never limited, nor are priority messages (which bypass the queue); calls
     * of a rate-limited server are always queued, never run inline. A batch takes up to {@code
     * consumeK} messages, as many as it has permits for. Default: no rate limit. See {@code
     * docs/limits.md}.
     *
     * @param name the limit's name, not blank
     * @return this builder
     * @throws IllegalArgumentException if blank; {@link DGen#start} and {@link DGen#host} fail with
     *     it if no runtime configured the limit
     */
    public B rateLimit(String name) {
      this.rateLimit = checkLimitName(name);
      return self();
    }

    /**
     * Bounds, with the concurrency limit {@code name} configured on a runtime with {@link
     * DGen.Builder#concurrencyLimit}, how many servers naming it are inside {@code handleLocked} at
     * once, across all runtimes. A server takes a permit in the transaction that takes its lock,
     * and gives it back in the one that commits or releases {@code handleLocked}'s outcome; the
     * permit expires with the lock, after {@link #lockTimeout} (which is therefore required), so a
     * dead holder's permit comes back then, and a holder whose permit expired and was taken by
     * another has its outcome refused ({@link LockFencedException}). A server finding no permit
     * free waits, holding no thread, for a release or an expiry. Default: none. See {@code
     * docs/limits.md}.
     *
     * @param name the limit's name, not blank
     * @return this builder
     * @throws IllegalArgumentException if blank; {@link DGen#start} and {@link DGen#host} fail with
     *     it if no runtime configured the limit
     */
    public B concurrencyLimit(String name) {
      this.concurrencyLimit = checkLimitName(name);
      return self();
    }

    static String checkLimitName(String name) {
      Objects.requireNonNull(name, "a limit's name must not be null");
      if (name.isBlank()) {
        throw new IllegalArgumentException("a limit's name must not be blank");
      }
      return name;
    }

    /** The call timeout set so far, for a subclass's checks. */
    Duration currentCallTimeout() {
      return callTimeout;
    }

    /**
     * Builds the options.
     *
     * @return the options
     * @throws IllegalArgumentException if a concurrency limit is named without a {@link
     *     #lockTimeout} (its permits expire with the lock), or an option of the subclass is refused
     */
    public O build() {
      if (concurrencyLimit != null && lockTimeout == null) {
        throw new IllegalArgumentException(
            "concurrencyLimit("
                + concurrencyLimit
                + ") needs a lockTimeout: a permit expires with the lock, so that a dead holder's"
                + " permit comes back");
      }
      return create();
    }
  }
}
