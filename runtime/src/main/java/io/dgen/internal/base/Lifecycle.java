package io.dgen.internal.base;

import io.dgen.ServerStoppedException;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Whether one process is alive, and its end: stopping it exactly once, running the stop hooks the
 * other components registered, and completing its termination future.
 *
 * <p>Never touches the backend: stopping a process leaves its durable state as it is.
 */
public final class Lifecycle {

  private static final Logger log = LoggerFactory.getLogger(Lifecycle.class);

  private final AtomicBoolean alive = new AtomicBoolean(true);
  private final CompletableFuture<Void> termination = new CompletableFuture<>();
  private final List<Runnable> onStop = new CopyOnWriteArrayList<>();
  private final String context;

  public Lifecycle(String context) {
    this.context = context;
  }

  /**
   * Whether {@code t} leaves the JVM in a state where nothing more should run in the process that
   * met it: a {@link VirtualMachineError} other than {@link StackOverflowError} (whose stack has
   * unwound by the time it is caught), such as {@link OutOfMemoryError} or {@link InternalError}.
   * Any other throwable from user code, {@link Error}s included, is that code's failure.
   */
  public static boolean isFatal(Throwable t) {
    return t instanceof VirtualMachineError && !(t instanceof StackOverflowError);
  }

  /**
   * Stops the process if {@code t} is {@linkplain #isFatal fatal}, logging it; its termination
   * future then fails with {@code t}. Returns whether it was.
   */
  public boolean terminateIfFatal(Throwable t) {
    if (!isFatal(t)) {
      return false;
    }
    log.error(
        "stopping the process: a fatal error, after which nothing more may run in it: {}",
        context,
        t);
    terminate(t);
    return true;
  }

  /** Runs {@code hook} when the process stops, after the hooks registered before it. */
  public void onStop(Runnable hook) {
    onStop.add(hook);
  }

  public boolean isAlive() {
    return alive.get();
  }

  /**
   * Fails fast on a stopped process.
   *
   * @throws ServerStoppedException if it was stopped
   */
  public void ensureAlive() {
    if (!alive.get()) {
      throw new ServerStoppedException("process was stopped: " + context);
    }
  }

  /** Stops the process if a callback's result asked to ({@code reason} is not null). */
  public void stopIfAsked(@Nullable Object reason) {
    if (reason != null) {
      log.info("server stopped itself: {} reason={}", context, reason);
      terminate(null);
    }
  }

  /**
   * Stops the process once: runs the stop hooks, then completes the termination future, normally
   * or, with a {@code reason}, exceptionally. Later calls do nothing.
   */
  public void terminate(@Nullable Throwable reason) {
    if (alive.compareAndSet(true, false)) {
      for (Runnable hook : onStop) {
        hook.run();
      }
      if (reason == null) {
        termination.complete(null);
      } else {
        termination.completeExceptionally(reason);
      }
    }
  }

  /** A copy of the termination future, so that callers cannot complete it. */
  public CompletableFuture<Void> termination() {
    return termination.copy();
  }
}
