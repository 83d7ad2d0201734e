package io.dgen;

import java.util.concurrent.CompletableFuture;

/**
 * A process of a durable server that this runtime runs because {@link DGen#start} started it: a
 * {@link ServerRef} for its clients, plus what only a process of one's own has, stopping it and
 * watching it end. Servers addressed by id ({@link DGen#ref}) have no such process: their runtime
 * loads and drops them.
 *
 * <p>Thread-safe.
 *
 * @param <M> the server's message type
 */
public interface ProcessRef<M> extends ServerRef<M> {

  /**
   * Stops this process. The durable state and queue are kept; another process (or a later {@link
   * DGen#start}) carries on. Idempotent.
   */
  void stop();

  /** True until this process is stopped or the server killed. */
  boolean isAlive();

  /**
   * Returns a future that completes when this process stops: after {@link #stop}, a kill ({@link
   * io.dgen.admin.ServerControl#kill}), a {@code Result.stop}, or once it finds its server killed.
   * A lock holder whose lock was busted does not stop: its late commit is refused with {@link
   * LockFencedException}, which is logged and reported to the {@link DGenListener}, and the process
   * goes on consuming.
   *
   * @return the termination future
   */
  CompletableFuture<Void> termination();
}
