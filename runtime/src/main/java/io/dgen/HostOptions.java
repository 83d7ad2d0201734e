package io.dgen;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * How {@link DGen#host} runs every server of a kind hosted by id: the options every server has
 * ({@link ServerOptions}) and those of a hosted kind only ({@link #idleTimeout}, {@link
 * #holdsBuckets}, {@link #expireAfter}). A hosted server always consumes its queue, keeps its state
 * and is addressed by id, so these options have no {@code consume}, {@code reset} or {@code name}
 * (those are {@link StartOptions}'). Immutable; build with {@link #builder(Tenant)}.
 *
 * <pre>{@code
 * HostOptions options = HostOptions.builder(bank)
 *     .consumeK(16)
 *     .idleTimeout(Duration.ofMinutes(10))
 *     .build();
 * dgen.host(ACCOUNT, Account::new, options);
 * }</pre>
 */
public final class HostOptions extends ServerOptions {

  private final Duration idleTimeout;
  private final boolean holdsBuckets;
  private final @Nullable Duration expireAfter;

  private HostOptions(Builder b) {
    super(b);
    this.idleTimeout = b.idleTimeout;
    this.holdsBuckets = b.holdBuckets;
    this.expireAfter = b.expireAfter;
  }

  /**
   * Starts a builder for a kind hosted in {@code tenant}.
   *
   * @param tenant the tenant its servers live in, from {@link DGen#tenant}
   * @return a builder with the defaults: idle servers unloaded after a minute and kept until killed
   */
  public static Builder builder(Tenant tenant) {
    return new Builder(tenant);
  }

  /**
   * How long a loaded server of the kind stays loaded with an empty queue before its runtime drops
   * it (default 60 s). A dropped server costs nothing; its next message loads it again.
   */
  public Duration idleTimeout() {
    return idleTimeout;
  }

  /**
   * Whether this runtime takes leases on the kind's buckets and runs its servers, or only runs
   * their calls inline. See {@link Builder#holdBuckets}.
   *
   * @return whether the hosting runtime holds buckets of the kind
   */
  public boolean holdsBuckets() {
    return holdsBuckets;
  }

  /**
   * How long a server of the kind may go without a message before it is deleted, if ever (see
   * {@link Builder#expireAfter}). Empty by default: servers are kept until killed.
   *
   * @return the idle time after which a server of the kind expires
   */
  public Optional<Duration> expireAfter() {
    return Optional.ofNullable(expireAfter);
  }

  /**
   * Builds {@link HostOptions}: the setters of every server ({@link ServerOptions.Builder}) and
   * those of a hosted kind. Setters validate their argument and fail fast. Not thread-safe.
   */
  public static final class Builder extends ServerOptions.Builder<Builder, HostOptions> {
    private Duration idleTimeout = Duration.ofSeconds(60);
    private boolean holdBuckets = true;
    private @Nullable Duration expireAfter;

    private Builder(Tenant tenant) {
      super(tenant);
    }

    @Override
    HostOptions create() {
      if (expireAfter != null && expireAfter.compareTo(currentCallTimeout()) < 0) {
        throw new IllegalArgumentException(
            "expireAfter ("
                + expireAfter
                + ") must not be shorter than the call timeout ("
                + currentCallTimeout()
                + "): a server could expire while a call to it waits");
      }
      return new HostOptions(this);
    }

    /**
     * How long a loaded server of the kind stays loaded with an empty queue before its runtime
     * drops it, freeing its memory (its state stays stored; its next message loads it again).
     * Default 60 s.
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
     * Whether this runtime takes leases on the kind's buckets. Default true. With false, the
     * runtime has the kind's behaviour but holds none of its buckets (the web tier of a service,
     * whose servers run elsewhere): its refs run calls inline against the durable state when the
     * server's queue is empty and the server unlocked, and priority messages at once, as any
     * runtime that hosts the kind does for a server another runtime holds; everything else (casts,
     * queued calls, timers, init) goes to the holders. At least one runtime must host the kind with
     * true. See {@code docs/scale-out.md}.
     *
     * @param hold whether to hold buckets
     * @return this builder
     */
    public Builder holdBuckets(boolean hold) {
      this.holdBuckets = hold;
      return this;
    }

    /**
     * A server of the kind that received no message for {@code idle} is deleted, with its state,
     * queue, timers and kept replies, as a {@code kill} deletes it; its next message creates it
     * anew (its {@code init} runs again). The idle time counts from when its holder unloaded it,
     * which is {@link #idleTimeout} after its last message: a server is deleted no sooner than
     * {@code idle} after its last message, and usually within {@code idleTimeout + idle} plus a
     * collection period. A message that arrives once the idle time is over finds a new server, even
     * before the background collection ran. A server with a pending timer, a queued message, a held
     * lock or a pause is not idle. Expiry costs no write per message: the unload that marks the
     * server idle also records when it expires. Every runtime that hosts the kind should give it
     * the same expiry. Default: none, servers are kept until killed. See {@code docs/scale-out.md}.
     *
     * @param idle positive, at least the call timeout ({@link #callTimeout(Duration)}); {@link
     *     DGen#host} also refuses one shorter than the runtime's lease ({@link
     *     DGen.Builder#leaseDuration})
     * @return this builder
     * @throws IllegalArgumentException if zero or negative; {@link #build} throws it if shorter
     *     than the call timeout
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
  }
}
