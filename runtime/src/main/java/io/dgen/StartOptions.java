package io.dgen;

import java.util.Objects;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * How {@link DGen#start} starts a process of a server: the options every server has ({@link
 * ServerOptions}) and those of a started process only ({@link #consume}, {@link #reset}, {@link
 * #name}). A kind hosted by id takes {@link HostOptions} instead. Immutable; build with {@link
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
public final class StartOptions extends ServerOptions {

  private final boolean consume;
  private final boolean reset;
  private final @Nullable String name;

  private StartOptions(Builder b) {
    super(b);
    this.consume = b.consume;
    this.reset = b.reset;
    this.name = b.name;
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

  /** Whether this process consumes the queue (default true); false makes it publish-only. */
  public boolean consume() {
    return consume;
  }

  /** Whether the initial state replaces stored state (default false). */
  public boolean reset() {
    return reset;
  }

  /** The name this process is registered under ({@link DGen#whereis}), if any. */
  public Optional<String> name() {
    return Optional.ofNullable(name);
  }

  /**
   * Builds {@link StartOptions}: the setters of every server ({@link ServerOptions.Builder}) and
   * those of a started process. Setters validate their argument and fail fast. Not thread-safe.
   */
  public static final class Builder extends ServerOptions.Builder<Builder, StartOptions> {
    private boolean consume = true;
    private boolean reset = false;
    private @Nullable String name;

    private Builder(Tenant tenant) {
      super(tenant);
    }

    @Override
    StartOptions create() {
      return new StartOptions(this);
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
  }
}
