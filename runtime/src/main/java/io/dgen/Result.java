package io.dgen;

import io.dgen.internal.codec.ReplyTypes;
import java.util.List;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * What a callback returns: the new state, an optional reply (for calls), post-commit {@link
 * Action}s, and what the server does next.
 *
 * <ul>
 *   <li>{@link #reply(Call, Object, Object)} — answer a {@link Call} with a reply of the type it
 *       names, and keep going ({@link #reply(Object, Object)} for a request that is not a {@code
 *       Call});
 *   <li>{@link #noReply(Object)} — keep going (casts, info; a call answered this way gets a null
 *       reply);
 *   <li>{@link #lock(Object)} — commit the state and continue in {@link DGenServer#handleLocked},
 *       outside any transaction;
 *   <li>{@link #stop(Object, Object)} — commit the state, then stop this process.
 * </ul>
 *
 * <p>A callback that does not want its message applied at all throws {@link TerminalException}
 * rather than returning a result: nothing of it is committed, and its caller gets {@link
 * CallRejectedException}.
 *
 * @param <S> the state type
 */
public final class Result<S> {

  /** What the server does after the callback. */
  public enum Kind {
    /** Reply to a call and continue. */
    REPLY,
    /** Continue without a reply. */
    NO_REPLY,
    /** Take the lock and continue in {@code handleLocked}. */
    LOCK,
    /** Stop this process after the commit. */
    STOP
  }

  private final Kind kind;
  private final @Nullable Object reply;
  private final S state;
  private final List<Action<S>> actions;
  private final @Nullable Object reason;

  private Result(
      Kind kind,
      @Nullable Object reply,
      S state,
      List<Action<S>> actions,
      @Nullable Object reason) {
    this.kind = kind;
    this.reply = reply;
    this.state = Objects.requireNonNull(state, "state must not be null");
    this.actions = List.copyOf(Objects.requireNonNull(actions, "actions must not be null"));
    this.reason = reason;
  }

  /**
   * Replies {@code reply} to the caller of {@code request} and keeps {@code state}; the reply's
   * type is checked against the one the request names when this compiles.
   *
   * @param request the call being answered
   * @param reply the reply (may be null)
   * @param state the new state, not null
   * @param <R> the reply type {@code request} names
   * @param <S> the state type
   * @return the result
   * @throws IllegalArgumentException if {@code reply} is not of that type (through raw types)
   */
  public static <R, S> Result<S> reply(Call<R> request, @Nullable R reply, S state) {
    return reply(request, reply, state, List.of());
  }

  /**
   * Replies {@code reply} to the caller of {@code request}, keeps {@code state}, and runs {@code
   * actions} after the commit.
   *
   * @param request the call being answered
   * @param reply the reply (may be null)
   * @param state the new state, not null
   * @param actions post-commit actions, in order
   * @param <R> the reply type {@code request} names
   * @param <S> the state type
   * @return the result
   * @throws IllegalArgumentException if {@code reply} is not of that type (through raw types)
   */
  public static <R, S> Result<S> reply(
      Call<R> request, @Nullable R reply, S state, List<Action<S>> actions) {
    ReplyTypes.check(Objects.requireNonNull(request, "request must not be null"), reply);
    return new Result<>(Kind.REPLY, reply, state, actions, null);
  }

  /**
   * Replies {@code reply} to the caller and keeps {@code state}: for a request that is not a {@link
   * Call} (one sent with {@link ServerRef#call(Object, Class, java.time.Duration)}). To a {@code
   * Call}, prefer {@link #reply(Call, Object, Object)}: a reply of another type than it names fails
   * the callback before its transaction commits either way.
   *
   * @param reply the reply (may be null); must be serializable by the runtime's mapper
   * @param state the new state, not null
   * @param <S> the state type
   * @return the result
   * @throws NullPointerException if {@code state} (or {@code actions}) is null
   */
  public static <S> Result<S> reply(@Nullable Object reply, S state) {
    return new Result<>(Kind.REPLY, reply, state, List.of(), null);
  }

  /**
   * Replies, keeps {@code state}, and runs {@code actions} after the commit.
   *
   * @param reply the reply (may be null)
   * @param state the new state, not null
   * @param actions post-commit actions, in order
   * @param <S> the state type
   * @return the result
   * @throws NullPointerException if {@code state} (or {@code actions}) is null
   */
  public static <S> Result<S> reply(@Nullable Object reply, S state, List<Action<S>> actions) {
    return new Result<>(Kind.REPLY, reply, state, actions, null);
  }

  /**
   * Keeps {@code state} without replying.
   *
   * @param state the new state, not null
   * @param <S> the state type
   * @return the result
   * @throws NullPointerException if {@code state} (or {@code actions}) is null
   */
  public static <S> Result<S> noReply(S state) {
    return new Result<>(Kind.NO_REPLY, null, state, List.of(), null);
  }

  /**
   * Keeps {@code state} and runs {@code actions} after the commit.
   *
   * @param state the new state, not null
   * @param actions post-commit actions, in order
   * @param <S> the state type
   * @return the result
   * @throws NullPointerException if {@code state} (or {@code actions}) is null
   */
  public static <S> Result<S> noReply(S state, List<Action<S>> actions) {
    return new Result<>(Kind.NO_REPLY, null, state, actions, null);
  }

  /**
   * Commits {@code state} with a lock record and continues in {@link DGenServer#handleLocked}.
   *
   * @param state the new state, not null
   * @param <S> the state type
   * @return the result
   * @throws NullPointerException if {@code state} (or {@code actions}) is null
   */
  public static <S> Result<S> lock(S state) {
    return new Result<>(Kind.LOCK, null, state, List.of(), null);
  }

  /**
   * Commits {@code state}, then stops this process (the durable state is kept). A hosted server
   * ({@code DGen.host}) is deactivated rather than gone: its next message, from any runtime, loads
   * it again with its state as stored, and messages already queued behind the stop load it at once.
   *
   * @param reason why the process stops (logged)
   * @param state the new state, not null
   * @param <S> the state type
   * @return the result
   * @throws NullPointerException if {@code state} (or {@code actions}) is null
   */
  public static <S> Result<S> stop(Object reason, S state) {
    return new Result<>(Kind.STOP, null, state, List.of(), reason);
  }

  /**
   * Commits {@code state}, runs {@code actions}, then stops this process (a hosted server is
   * deactivated, as by {@link #stop(Object, Object)}).
   *
   * @param reason why the process stops (logged)
   * @param state the new state, not null
   * @param actions post-commit actions, in order
   * @param <S> the state type
   * @return the result
   * @throws NullPointerException if {@code state} (or {@code actions}) is null
   */
  public static <S> Result<S> stop(Object reason, S state, List<Action<S>> actions) {
    return new Result<>(Kind.STOP, null, state, actions, reason);
  }

  /** What the server does next. */
  public Kind kind() {
    return kind;
  }

  /** The reply, or null. */
  public @Nullable Object reply() {
    return reply;
  }

  /** The new state. */
  public S state() {
    return state;
  }

  /** The post-commit actions, in order; never null. */
  public List<Action<S>> actions() {
    return actions;
  }

  /** The stop reason for {@link Kind#STOP}, else null. */
  public @Nullable Object reason() {
    return reason;
  }

  @Override
  public String toString() {
    return "Result{kind=" + kind + ", reply=" + reply + ", actions=" + actions.size() + "}";
  }
}
