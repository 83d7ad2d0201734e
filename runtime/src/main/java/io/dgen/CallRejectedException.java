package io.dgen;

import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * The server refused the call: its handler (or a hosted server's {@code init}) threw {@link
 * TerminalException}. Nothing the handler did was committed and the call left the queue; it is not
 * retried. {@link #reason()} is the handler's message, which this exception's message contains too.
 *
 * <p>A keyed call ({@link ServerRef#call(Call, String, java.time.Duration)}) or a submitted one
 * keeps this outcome for its retention window: calling again with the same key, or {@link
 * ServerRef#awaitReply} with the same call id, throws it again without running the handler.
 */
public class CallRejectedException extends DGenException {

  private static final long serialVersionUID = 1L;

  private final String reason;

  /**
   * Creates the exception.
   *
   * @param message what was refused, containing {@code reason}, with {@code key=value} context
   * @param reason the handler's message
   */
  public CallRejectedException(String message, String reason) {
    this(message, reason, null);
  }

  /**
   * Creates the exception with a cause: the handler's {@link TerminalException}, when the call ran
   * in the caller's runtime (inline or as a priority call); null when the refusal was read from the
   * store.
   *
   * @param message what was refused, containing {@code reason}, with {@code key=value} context
   * @param reason the handler's message
   * @param cause the handler's exception, if at hand
   */
  public CallRejectedException(String message, String reason, @Nullable Throwable cause) {
    super(message, cause);
    this.reason = Objects.requireNonNull(reason, "reason must not be null");
  }

  /** The message of the handler's {@link TerminalException}: why the call was refused. */
  public String reason() {
    return reason;
  }
}
