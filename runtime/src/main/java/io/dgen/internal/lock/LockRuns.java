package io.dgen.internal.lock;

import io.dgen.Event;
import io.dgen.Result;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;
import org.jspecify.annotations.Nullable;

/**
 * The runs of {@code handleLocked} on a locked server: the message that took the lock, how a run
 * ended, and a run that has not ended yet. Shared by the lock's coordinator and its holder.
 */
public final class LockRuns {

  private LockRuns() {}

  /** The message that took the lock in a batch, handed to {@code handleLocked} after the commit. */
  public record Held<M>(String token, byte[] envelope, Event<M> event) {}

  /** How a run of {@code handleLocked} ended. */
  public enum Ending {
    /** Committed and released: consume on. */
    RELEASED,
    /** The callback or its commit failed; the lock was released and its message re-queued. */
    FAILED,
    /** The lock was busted and taken over meanwhile: the outcome was refused and reported. */
    FENCED,
    /** The result asked the process to stop, and it stopped. */
    STOPPED,
    /**
     * The cluster did not let the holder learn whether its commit or release applied: the lock may
     * still be held, by this process. {@link LockCoordinator#resume} the pending run after a
     * backoff.
     */
    UNKNOWN
  }

  /**
   * An {@link Ending} and, for {@code FAILED}, {@code FENCED} and {@code UNKNOWN}, why; a {@code
   * FAILED} run whose failure reached the dead-letter threshold moved its message to the dead
   * letters; an {@code UNKNOWN} one carries what is left to do.
   */
  public record Run(
      Ending ending,
      @Nullable Throwable cause,
      boolean deadLettered,
      @Nullable Pending<?, ?> pending) {
    Run(Ending ending, @Nullable Throwable cause) {
      this(ending, cause, false, null);
    }

    /** Nothing was held, so nothing ran: as a run that released its lock. */
    public static final Run NOTHING = new Run(Ending.RELEASED, null);
  }

  /**
   * A run of {@code handleLocked} that has not ended: the lock, the state it runs on (null until
   * loaded), its result once it returned or why it is being released instead, and the runs of its
   * commit or release whose outcome the holder did not learn (a later run first looks for their
   * markers, so that none applies twice). Touched by one thread at a time.
   */
  public static final class Pending<S, M> {
    // touched by the LockHolder that runs it
    final Held<M> lock;
    @Nullable S state;
    @Nullable Result<S> result;
    @Nullable Throwable failure;
    io.dgen.@Nullable TerminalException refusal; // handleLocked refused the message
    final Map<UUID, Boolean> tried = new LinkedHashMap<>(); // run -> it was the release

    Pending(Held<M> lock, @Nullable S state) {
      this.lock = lock;
      this.state = state;
    }
  }
}
