package io.dgen;

import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import org.jspecify.annotations.Nullable;

/**
 * How {@link DGen#start} starts a process of a server. Immutable; build with {@link
 * #builder(Tenant)}.
 *
 * <pre>{@code
 * StartOptions options = StartOptions.builder(tenant)
 *     .consumeK(16)
 *     .deadLetterThreshold(5)
 *     .name("counter")
 *     .build();
 * }</pre>
 */
public final class StartOptions {

  private final Tenant tenant;
  private final boolean consume;
  private final boolean reset;
  private final boolean cache;
  private final int consumeK;
  private final int deadLetterThreshold;
  private final @Nullable Duration lockTimeout;
  private final @Nullable String name;
  private final Duration callTimeout;
  private final List<Class<?>> allowedTypes;
  private final Duration idempotencyRetention;
  private final Duration idleTimeout;
  private final boolean holdsBuckets;
  private final @Nullable Duration expireAfter;
  private final @Nullable String rateLimit;
  private final @Nullable String concurrencyLimit;

  private StartOptions(Builder b) {
    this.tenant = b.tenant;
    this.consume = b.consume;
    this.reset = b.reset;
    this.cache = b.cache;
    this.consumeK = b.consumeK;
    this.deadLetterThreshold = b.deadLetterThreshold;
    this.lockTimeout = b.lockTimeout;
    this.name = b.name;
    this.callTimeout = b.callTimeout;
    this.allowedTypes = List.copyOf(b.allowedTypes);
    this.idempotencyRetention = b.idempotencyRetention;
    this.idleTimeout = b.idleTimeout;
    this.holdsBuckets = b.holdBuckets;
    this.expireAfter = b.expireAfter;
    this.rateLimit = b.rateLimit;
    this.concurrencyLimit = b.concurrencyLimit;
  }

  /**
   * Starts a builder for a process in {@code tenant}.
   *
   * @param tenant the tenant, from {@link DGen#tenant}
   * @return a builder with the defaults
   */
  public static Builder builder(Tenant tenant) {
    return new Builder(tenant);
  }

  /** The tenant the server lives in. */
  public Tenant tenant() {
    return tenant;
  }

  /** Whether this process consumes the queue (default true); false makes it publish-only. */
  public boolean consume() {
    return consume;
  }

  /** Whether the initial state replaces stored state (default false). */
  public boolean reset() {
    return reset;
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

  /** The name this process is registered under ({@link DGen#whereis}), if any. */
  public Optional<String> name() {
    return Optional.ofNullable(name);
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
   * For servers hosted by id ({@link DGen#host}): how long a loaded server stays loaded with an
   * empty queue before its runtime drops it (default 60 s). A dropped server costs nothing; its
   * next message loads it again.
   */
  public Duration idleTimeout() {
    return idleTimeout;
  }

  /**
   * For servers hosted by id: whether this runtime takes leases on the kind's buckets and runs its
   * servers, or only runs their calls inline. See {@link Builder#holdBuckets}.
   *
   * @return whether the hosting runtime holds buckets of the kind
   */
  public boolean holdsBuckets() {
    return holdsBuckets;
  }

  /**
   * For servers hosted by id: how long a server may go without a message before it is deleted, if
   * ever (see {@link Builder#expireAfter}). Empty by default: servers are kept until killed.
   *
   * @return the idle time after which a server of the kind expires
   */
  public Optional<Duration> expireAfter() {
    return Optional.ofNullable(expireAfter);
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
   * Builds {@link StartOptions}; setters validate their argument and fail fast. Not thread-safe.
   */
  public static final class Builder {
    private final Tenant tenant;
    private boolean consume = true;
    private boolean reset = false;
    private boolean cache = true;
    private int consumeK = 1;
    private int deadLetterThreshold = Integer.MAX_VALUE;
    private @Nullable Duration lockTimeout;
    private @Nullable String name;
    private Duration callTimeout = Duration.ofSeconds(5);
    private List<Class<?>> allowedTypes = List.of();
    private Duration idempotencyRetention = Duration.ofHours(24);
    private Duration idleTimeout = Duration.ofSeconds(60);
    private boolean holdBuckets = true;
    private @Nullable Duration expireAfter;
    private @Nullable String rateLimit;
    private @Nullable String concurrencyLimit;

    private Builder(Tenant tenant) {
      this.tenant = Objects.requireNonNull(tenant, "tenant must not be null");
    }

    /**
     * Whether this process consumes the queue. Default true. A process with {@code false} only
     * publishes: its calls always go through the queue and wait for a consumer elsewhere.
     *
     * @param consume whether to consume
     * @return this builder
     */
    public Builder consume(boolean consume) {
      this.consume = consume;
      return this;
    }

    /**
     * Whether the state returned by {@code init} replaces stored state. Default false: stored state
     * wins. The queue is kept either way.
     *
     * @param reset whether to reset
     * @return this builder
     */
    public Builder reset(boolean reset) {
      this.reset = reset;
      return this;
    }

    /**
     * Whether the consumer keeps the state between batches and validates it by the version key
     * alone instead of reading it. Default true.
     *
     * @param cache whether to cache
     * @return this builder
     */
    public Builder cache(boolean cache) {
      this.cache = cache;
      return this;
    }

    /**
     * The maximum number of queued messages processed per transaction. Default 1, which also
     * enables inline calls; greater values batch, and every call then goes through the queue.
     *
     * @param consumeK at least 1
     * @return this builder
     * @throws IllegalArgumentException if {@code consumeK < 1}
     */
    public Builder consumeK(int consumeK) {
      if (consumeK < 1) {
        throw new IllegalArgumentException("consumeK must be at least 1, was " + consumeK);
      }
      this.consumeK = consumeK;
      return this;
    }

    /**
     * Consecutive failures after which a queued message is moved to the dead letters. Default:
     * never.
     *
     * @param threshold at least 1
     * @return this builder
     * @throws IllegalArgumentException if {@code threshold < 1}
     */
    public Builder deadLetterThreshold(int threshold) {
      if (threshold < 1) {
        throw new IllegalArgumentException(
            "deadLetterThreshold must be at least 1, was " + threshold);
      }
      this.deadLetterThreshold = threshold;
      return this;
    }

    /**
     * How long a lock may be held before another consumer busts it. Default: never.
     *
     * @param lockTimeout positive
     * @return this builder
     * @throws IllegalArgumentException if not positive
     */
    public Builder lockTimeout(Duration lockTimeout) {
      Objects.requireNonNull(lockTimeout, "lockTimeout must not be null");
      if (lockTimeout.isNegative() || lockTimeout.isZero()) {
        throw new IllegalArgumentException("lockTimeout must be positive, was " + lockTimeout);
      }
      this.lockTimeout = lockTimeout;
      return this;
    }

    /**
     * Registers the process under {@code name} in its {@link DGen} ({@link DGen#whereis}).
     *
     * @param name not blank, unique among the live processes of the {@link DGen}
     * @return this builder
     * @throws IllegalArgumentException if blank
     */
    public Builder name(String name) {
      Objects.requireNonNull(name, "name must not be null");
      if (name.isBlank()) {
        throw new IllegalArgumentException("name must not be blank");
      }
      this.name = name;
      return this;
    }

    /**
     * The default timeout of {@link ServerRef#call(Call)}. Default 5 s, at most one hour (reply
     * slots older than that are swept as abandoned).
     *
     * @param callTimeout positive, at most one hour
     * @return this builder
     * @throws IllegalArgumentException if not positive or over an hour
     */
    public Builder callTimeout(Duration callTimeout) {
      Objects.requireNonNull(callTimeout, "callTimeout must not be null");
      if (callTimeout.isNegative()
          || callTimeout.isZero()
          || callTimeout.compareTo(Duration.ofHours(1)) > 0) {
        throw new IllegalArgumentException(
            "callTimeout must be positive and at most one hour, was " + callTimeout);
      }
      this.callTimeout = callTimeout;
      return this;
    }

    /**
     * Allows extra classes in messages and replies, besides the server's declared message type, its
     * permitted subtypes (for a sealed type), its state type and common JDK value types. Stored
     * data naming any other class is refused without loading that class.
     *
     * @param types the classes
     * @return this builder
     */
    public Builder allowTypes(Class<?>... types) {
      for (Class<?> t : types) {
        Objects.requireNonNull(t, "allowed type must not be null");
      }
      this.allowedTypes = List.of(types);
      return this;
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
    public Builder idempotencyRetention(Duration retention) {
      Objects.requireNonNull(retention, "idempotencyRetention must not be null");
      if (retention.isNegative()
          || retention.isZero()
          || retention.compareTo(Duration.ofDays(3650)) > 0) {
        throw new IllegalArgumentException(
            "idempotencyRetention must be positive and at most 3650 days, was " + retention);
      }
      this.idempotencyRetention = retention;
      return this;
    }

    /**
     * For servers hosted by id ({@link DGen#host}): how long a loaded server stays loaded with an
     * empty queue before its runtime drops it, freeing its memory (its state stays stored; its next
     * message loads it again). Default 60 s. Ignored by {@link DGen#start}.
     *
     * @param idleTimeout positive
     * @return this builder
     * @throws IllegalArgumentException if not positive
     */
    public Builder idleTimeout(Duration idleTimeout) {
      Objects.requireNonNull(idleTimeout, "idleTimeout must not be null");
      if (idleTimeout.isNegative() || idleTimeout.isZero()) {
        throw new IllegalArgumentException("idleTimeout must be positive, was " + idleTimeout);
      }
      this.idleTimeout = idleTimeout;
      return this;
    }

    /**
     * For servers hosted by id ({@link DGen#host}): whether this runtime takes leases on the kind's
     * buckets. Default true. With false, the runtime has the kind's behaviour but holds none of its
     * buckets (the web tier of a service, whose servers run elsewhere): its refs run calls inline
     * against the durable state when the server's queue is empty and the server unlocked, and
     * priority messages at once, as any runtime that hosts the kind does for a server another
     * runtime holds; everything else (casts, queued calls, timers, init) goes to the holders. At
     * least one runtime must host the kind with true. Ignored by {@link DGen#start}. See {@code
     * docs/scale-out.md}.
     *
     * @param hold whether to hold buckets
     * @return this builder
     */
    public Builder holdBuckets(boolean hold) {
      this.holdBuckets = hold;
      return this;
    }

    /**
     * For servers hosted by id ({@link DGen#host}) only: a server of the kind that received no
     * message for {@code idle} is deleted, with its state, queue, timers and kept replies, as a
     * {@code kill} deletes it; its next message creates it anew (its {@code init} runs again). The
     * idle time counts from when its holder unloaded it, which is {@link #idleTimeout} after its
     * last message: a server is deleted no sooner than {@code idle} after its last message, and
     * usually within {@code idleTimeout + idle} plus a collection period. A message that arrives
     * once the idle time is over finds a new server, even before the background collection ran. A
     * server with a pending timer, a queued message, a held lock or a pause is not idle. Expiry
     * costs no write per message: the unload that marks the server idle also records when it
     * expires. Every runtime that hosts the kind should give it the same expiry. Default: none,
     * servers are kept until killed. See {@code docs/scale-out.md}.
     *
     * @param idle positive, at least the call timeout ({@link #callTimeout}); {@link DGen#host}
     *     also refuses one shorter than the runtime's lease ({@link DGen.Builder#leaseDuration})
     * @return this builder
     * @throws IllegalArgumentException if zero or negative; {@link #build} throws it if shorter
     *     than the call timeout, and {@link DGen#start} for any expiry (a started server is kept
     *     until killed)
     */
    public Builder expireAfter(Duration idle) {
      Objects.requireNonNull(idle, "expireAfter must not be null");
      if (idle.isNegative() || idle.isZero()) {
        throw new IllegalArgumentException(
            "expireAfter must be positive (a server idle for that long is deleted), was " + idle);
      }
      this.expireAfter = idle;
      return this;
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
    public Builder rateLimit(String name) {
      this.rateLimit = checkLimitName(name);
      return this;
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
    public Builder concurrencyLimit(String name) {
      this.concurrencyLimit = checkLimitName(name);
      return this;
    }

    static String checkLimitName(String name) {
      Objects.requireNonNull(name, "a limit's name must not be null");
      if (name.isBlank()) {
        throw new IllegalArgumentException("a limit's name must not be blank");
      }
      return name;
    }

    /**
     * Builds the options.
     *
     * @return the options
     * @throws IllegalArgumentException if a concurrency limit is named without a {@link
     *     #lockTimeout} (its permits expire with the lock), or {@link #expireAfter} is shorter than
     *     the call timeout
     */
    public StartOptions build() {
      if (expireAfter != null && expireAfter.compareTo(callTimeout) < 0) {
        throw new IllegalArgumentException(
            "expireAfter ("
                + expireAfter
                + ") must not be shorter than the call timeout ("
                + callTimeout
                + "): a server could expire while a call to it waits");
      }
      if (concurrencyLimit != null && lockTimeout == null) {
        throw new IllegalArgumentException(
            "concurrencyLimit("
                + concurrencyLimit
                + ") needs a lockTimeout: a permit expires with the lock, so that a dead holder's"
                + " permit comes back");
      }
      return new StartOptions(this);
    }
  }
}
