package io.dgen;

import com.apple.foundationdb.tuple.Tuple;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * What {@link DGenServer#init} returns: the initial state (and optionally the server's identity
 * tuple), or a reason to refuse the start.
 *
 * @param <S> the state type
 */
public final class InitResult<S> {

  private final @Nullable Tuple tuid;
  private final @Nullable S state;
  private final @Nullable Object error;

  private InitResult(@Nullable Tuple tuid, @Nullable S state, @Nullable Object error) {
    this.tuid = tuid;
    this.state = state;
    this.error = error;
  }

  /**
   * Starts with {@code state} under the default identity {@code ("dgen_server", <class name>)}. If
   * durable state already exists it wins, unless the start option {@code reset} is set.
   *
   * @param state the initial state, not null
   * @param <S> the state type
   * @return the result
   */
  public static <S> InitResult<S> ok(S state) {
    return new InitResult<>(
        null, Objects.requireNonNull(state, "initial state must not be null"), null);
  }

  /**
   * Starts with {@code state} under the identity {@code tuid}: servers with the same tenant and
   * tuid are the same durable server.
   *
   * @param tuid the identity tuple, not empty
   * @param state the initial state, not null
   * @param <S> the state type
   * @return the result
   */
  public static <S> InitResult<S> ok(Tuple tuid, S state) {
    Objects.requireNonNull(tuid, "tuid must not be null");
    if (tuid.size() == 0) {
      throw new IllegalArgumentException("tuid must not be empty");
    }
    return new InitResult<>(
        tuid, Objects.requireNonNull(state, "initial state must not be null"), null);
  }

  /**
   * Refuses the start; {@link DGen#start} throws a {@link DGenException} carrying the reason. A
   * hosted kind's {@code init} ({@link DGen#host}) so declines to create the server for the message
   * that addressed it, as a {@link TerminalException} with {@code String.valueOf(reason)} would:
   * the message is refused ({@link CallRejectedException} for a call) and nothing is stored.
   *
   * @param reason why, not null
   * @param <S> the state type
   * @return the result
   */
  public static <S> InitResult<S> error(Object reason) {
    return new InitResult<>(null, null, Objects.requireNonNull(reason, "reason must not be null"));
  }

  /** The identity tuple given by {@link #ok(Tuple, Object)}, or null for the default. */
  public @Nullable Tuple tuid() {
    return tuid;
  }

  /** The initial state, or null for an error. */
  public @Nullable S state() {
    return state;
  }

  /** The reason given by {@link #error}, or null. */
  public @Nullable Object error() {
    return error;
  }

  /** True for {@link #error}. */
  public boolean isError() {
    return error != null;
  }
}
