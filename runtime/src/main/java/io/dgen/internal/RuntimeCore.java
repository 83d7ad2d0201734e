package io.dgen.internal;

import io.dgen.DGenListener;
import io.dgen.LockFencedException;
import io.dgen.ServerRef;
import io.dgen.backend.Backend;
import io.dgen.internal.codec.Serde;
import io.dgen.internal.codec.StateCodec;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the processes of one {@code DGen} share: the backend, the mapper, a small worker pool that
 * runs consumer batches and call completions, a scheduler for backoff and timeouts, the clock, and
 * the registry of live processes and names.
 *
 * <p>Idle processes hold a watch, never a thread: the pool is sized by cores, not by servers.
 */
public final class RuntimeCore implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(RuntimeCore.class);

  private final Backend backend;
  private final Serde serde;
  private final StateCodec codec;
  private final LongSupplier ticker;
  private final Duration retryInitial;
  private final Duration retryMax;
  private final ExecutorService workers;
  private final ScheduledExecutorService scheduler;
  private final ExecutorService lockedWork;
  private final Clock clock;
  private final DGenListener listener;
  private final List<ServerProcess<?, ?>> processes = new CopyOnWriteArrayList<>();
  private final Map<String, ServerProcess<?, ?>> names = new ConcurrentHashMap<>();

  /**
   * Creates the shared runtime.
   *
   * @param backend the backend
   * @param serde the mapper
   * @param codec the state codec
   * @param ticker nanosecond clock
   * @param clock wall clock (lock ages)
   * @param workerThreads size of the worker pool
   * @param retryInitial first backoff after a failed batch
   * @param retryMax backoff cap
   * @param listener hears events such as a fenced lock holder
   */
  public RuntimeCore(
      Backend backend,
      Serde serde,
      StateCodec codec,
      LongSupplier ticker,
      Clock clock,
      int workerThreads,
      Duration retryInitial,
      Duration retryMax,
      DGenListener listener) {
    this.backend = backend;
    this.serde = serde;
    this.codec = codec;
    this.ticker = ticker;
    this.clock = clock;
    this.retryInitial = retryInitial;
    this.retryMax = retryMax;
    this.listener = listener;
    this.workers = Executors.newFixedThreadPool(workerThreads, daemonThreads("dgen-worker-"));
    this.scheduler = Executors.newSingleThreadScheduledExecutor(daemonThreads("dgen-scheduler-"));
    // handleLocked may run for long outside any transaction: it gets threads of its own, made on
    // demand and dropped when idle, so it never starves the consume loops.
    this.lockedWork = Executors.newCachedThreadPool(daemonThreads("dgen-locked-"));
  }

  private static ThreadFactory daemonThreads(String prefix) {
    AtomicInteger n = new AtomicInteger();
    return r -> {
      Thread t = new Thread(r, prefix + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    };
  }

  Backend backend() {
    return backend;
  }

  Serde serde() {
    return serde;
  }

  StateCodec codec() {
    return codec;
  }

  long nanoTime() {
    return ticker.getAsLong();
  }

  long wallMillis() {
    return clock.millis();
  }

  ExecutorService lockedWork() {
    return lockedWork;
  }

  ExecutorService workers() {
    return workers;
  }

  ScheduledExecutorService scheduler() {
    return scheduler;
  }

  /**
   * Tells the listener that {@code server}'s lock holder was fenced; a listener's failure is
   * logged.
   */
  void lockFenced(ServerRef<?> server, LockFencedException error) {
    try {
      listener.lockFenced(server, error);
    } catch (RuntimeException e) {
      log.error("DGenListener.lockFenced failed", e);
    }
  }

  /** The backoff before retry number {@code failures} (1-based): doubling, capped. */
  long backoffNanos(int failures) {
    long base = retryInitial.toNanos();
    int shift = Math.min(Math.max(failures - 1, 0), 30);
    long d = base << shift;
    return d <= 0 ? retryMax.toNanos() : Math.min(d, retryMax.toNanos());
  }

  void register(ServerProcess<?, ?> p) {
    String name = p.name().orElse(null);
    if (name != null && names.putIfAbsent(name, p) != null) {
      throw new IllegalStateException("a live process is already registered as name=" + name);
    }
    processes.add(p);
  }

  void unregister(ServerProcess<?, ?> p) {
    processes.remove(p);
    p.name().ifPresent(n -> names.remove(n, p));
  }

  /** Stops every local process of the server {@code root} (after a kill). */
  void stopLocal(ServerKeys keys) {
    for (ServerProcess<?, ?> p : processes) {
      if (java.util.Arrays.equals(p.keys().root().getKey(), keys.root().getKey())) {
        p.stop();
      }
    }
  }

  /**
   * The live process registered under {@code name}.
   *
   * @param name the name
   * @return the process, if any
   */
  public Optional<ServerProcess<?, ?>> whereis(String name) {
    return Optional.ofNullable(names.get(name));
  }

  /** The number of live processes. */
  public int liveProcesses() {
    return processes.size();
  }

  /** Stops every process and the pools; does not close the backend. */
  @Override
  public void close() {
    for (ServerProcess<?, ?> p : processes) {
      p.stop();
    }
    scheduler.shutdownNow();
    lockedWork.shutdownNow();
    workers.shutdown();
    try {
      if (!workers.awaitTermination(10, TimeUnit.SECONDS)) {
        workers.shutdownNow();
      }
    } catch (InterruptedException e) {
      workers.shutdownNow();
      Thread.currentThread().interrupt();
    }
  }
}
