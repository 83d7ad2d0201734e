package io.dgen.spring;

import io.dgen.DGen;
import io.dgen.DGenServer;
import io.dgen.Kind;
import io.dgen.Tenant;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.context.SmartLifecycle;
import org.springframework.core.env.PropertyResolver;

/**
 * The application's {@link DGen} as a {@link SmartLifecycle}: when the context starts, it hosts the
 * kinds of the {@link DGenHosted} beans; when the context closes, it closes the runtime, waiting at
 * most the shutdown timeout ({@code dgen.shutdown-timeout}) for the consumer batches in flight.
 *
 * <h2>Order</h2>
 *
 * Its phase, {@link #PHASE}, is below the web server's: the kinds are hosted before the server
 * accepts requests, and the runtime closes after the server has stopped and its graceful shutdown
 * has let the requests in progress finish (they may still call servers). The {@code Backend} bean
 * closes after it, since the {@code DGen} depends on it.
 *
 * <h2>Shutdown</h2>
 *
 * Closing the runtime stops its processes from starting batches and waits for the batches in flight
 * to commit. If that takes longer than the timeout, the shutdown goes on without them: the backend
 * is closed next, so they can no longer commit, and the messages they had taken stay in their
 * queues for the next runtime on the same store (a batch is one transaction: it commits whole or
 * not at all). Nothing queued is lost either way. The timeout should not exceed Spring's {@code
 * spring.lifecycle.timeout-per-shutdown-phase} (30 s by default), after which Spring stops waiting.
 *
 * <p>A {@code DGen} cannot be restarted: once stopped, {@link #start()} does nothing. Thread-safe.
 */
public class DGenLifecycle implements SmartLifecycle, DisposableBean {

  /**
   * The lifecycle phase: {@code SmartLifecycle.DEFAULT_PHASE - 4096}, below the web server's (which
   * stops at {@code DEFAULT_PHASE - 1024} and {@code - 2048}).
   */
  public static final int PHASE = SmartLifecycle.DEFAULT_PHASE - 4096;

  /**
   * A kind this lifecycle hosted.
   *
   * @param beanName the {@link DGenHosted} bean
   * @param tenant the tenant's path
   * @param kind the kind
   */
  public record HostedKind(String beanName, List<String> tenant, String kind) {}

  private static final Logger log = LoggerFactory.getLogger(DGenLifecycle.class);

  private final DGen dgen;
  private final ListableBeanFactory beans;
  private final PropertyResolver resolver;
  private final Duration shutdownTimeout;
  private final Object lock = new Object();
  private volatile boolean running;
  private volatile List<HostedKind> hosted = List.of();
  private volatile long startedAtNanos;
  private @Nullable CompletableFuture<Void> closing;
  private long closeDeadlineNanos;
  private boolean reported;

  /**
   * Creates the lifecycle of {@code dgen}.
   *
   * @param dgen the runtime it hosts kinds in and closes
   * @param beans where it finds the {@link DGenHosted} beans
   * @param resolver resolves placeholders in their attributes
   * @param shutdownTimeout how long closing may wait for the batches in flight; zero or positive
   * @throws
   *     org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException
   *     naming {@code dgen.shutdown-timeout} if the timeout is negative
   */
  public DGenLifecycle(
      DGen dgen, ListableBeanFactory beans, PropertyResolver resolver, Duration shutdownTimeout) {
    this.dgen = Objects.requireNonNull(dgen, "dgen");
    this.beans = Objects.requireNonNull(beans, "beans");
    this.resolver = Objects.requireNonNull(resolver, "resolver");
    Objects.requireNonNull(shutdownTimeout, "shutdownTimeout");
    if (shutdownTimeout.isNegative()) {
      throw Settings.invalid(
          "dgen.shutdown-timeout", shutdownTimeout, "the shutdown timeout must not be negative");
    }
    this.shutdownTimeout = shutdownTimeout;
  }

  /**
   * Hosts the kind of every {@link DGenHosted} bean, opening each tenant once.
   *
   * @throws IllegalStateException if an annotated bean is no {@link DGenServer}, an attribute is
   *     refused, or the runtime refuses a kind (e.g. two beans host the same kind in one tenant);
   *     the message names the bean
   */
  @Override
  public void start() {
    synchronized (lock) {
      if (running || closing != null) {
        return;
      }
      List<HostedKind> done = new ArrayList<>();
      Map<List<String>, Tenant> tenants = new HashMap<>();
      for (String name : beans.getBeanNamesForAnnotation(DGenHosted.class)) {
        DGenHosted annotation =
            Objects.requireNonNull(beans.findAnnotationOnBean(name, DGenHosted.class));
        if (!beans.isTypeMatch(name, DGenServer.class)) {
          throw new IllegalStateException(
              "bean '"
                  + name
                  + "' is annotated @DGenHosted but is not a DGenServer (its type: "
                  + beans.getType(name)
                  + ")");
        }
        HostedBean bean = HostedBean.resolve(name, annotation, resolver);
        Tenant tenant =
            tenants.computeIfAbsent(bean.tenant(), path -> dgen.tenant(bean.tenantPath()));
        Kind<?> typed = bean.declaredKind(beans.getType(name));
        try {
          if (typed != null) {
            dgen.host(asObjects(typed), behaviour(name), bean.options(tenant));
          } else {
            dgen.host(bean.kind(), behaviour(name), bean.options(tenant));
          }
        } catch (IllegalArgumentException | IllegalStateException e) {
          throw new IllegalStateException("cannot host " + bean + ": " + e.getMessage(), e);
        }
        done.add(new HostedKind(name, bean.tenant(), bean.kind()));
        log.info(
            "hosting kind {} in tenant {} with bean '{}'{}",
            bean.kind(),
            bean.tenant(),
            name,
            typed == null ? "" : " by its " + typed);
      }
      hosted = List.copyOf(done);
      startedAtNanos = System.nanoTime();
      running = true;
    }
  }

  /** A kind as the behaviours of {@link #behaviour} take it: the runtime checks the types. */
  @SuppressWarnings("unchecked")
  private static Kind<Object> asObjects(Kind<?> kind) {
    return (Kind<Object>) kind;
  }

  /**
   * One behaviour per call, from the bean factory: a new instance of a prototype bean, the same one
   * of a singleton.
   */
  @SuppressWarnings("unchecked")
  private Supplier<DGenServer<Object, Object>> behaviour(String beanName) {
    return () -> (DGenServer<Object, Object>) beans.getBean(beanName, DGenServer.class);
  }

  /**
   * Closes the runtime and returns at once; {@code callback} runs once the runtime has closed or
   * the shutdown timeout has passed, whichever comes first.
   */
  @Override
  public void stop(Runnable callback) {
    CompletableFuture<Void> closed = beginClose();
    closed
        .copy()
        .completeOnTimeout(null, remainingNanos(), TimeUnit.NANOSECONDS)
        .whenComplete(
            (ignored, error) -> {
              report(closed);
              callback.run();
            });
  }

  /** Closes the runtime, waiting at most the shutdown timeout. */
  @Override
  public void stop() {
    awaitClosed();
  }

  /**
   * Closes the runtime if the context did not stop it (e.g. its startup failed), waiting at most
   * what is left of the shutdown timeout.
   */
  @Override
  public void destroy() {
    awaitClosed();
  }

  private void awaitClosed() {
    CompletableFuture<Void> closed = beginClose();
    try {
      closed.get(remainingNanos(), TimeUnit.NANOSECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (ExecutionException | TimeoutException e) {
      // reported below
    }
    report(closed);
  }

  /** Starts closing the runtime on a thread of its own, once; the future completes when closed. */
  private CompletableFuture<Void> beginClose() {
    synchronized (lock) {
      running = false;
      CompletableFuture<Void> c = closing;
      if (c == null) {
        closeDeadlineNanos = System.nanoTime() + shutdownTimeout.toNanos();
        long begun = System.nanoTime();
        c =
            CompletableFuture.runAsync(
                () -> {
                  dgen.close();
                  log.info(
                      "DGen closed in {} ms",
                      TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - begun));
                },
                task -> {
                  Thread t = new Thread(task, "dgen-shutdown");
                  t.setDaemon(true);
                  t.start();
                });
        closing = c;
      }
      return c;
    }
  }

  private long remainingNanos() {
    synchronized (lock) {
      return Math.max(0, closeDeadlineNanos - System.nanoTime());
    }
  }

  /** Logs, once, a close that failed or has not finished by the deadline. */
  private void report(CompletableFuture<Void> closed) {
    String problem;
    Throwable cause = null;
    if (closed.isCompletedExceptionally()) {
      problem = "closing DGen failed";
      try {
        closed.join();
      } catch (CompletionException | CancellationException e) {
        cause = e.getCause() != null ? e.getCause() : e;
      }
    } else if (!closed.isDone()) {
      problem =
          "DGen did not close within dgen.shutdown-timeout ("
              + shutdownTimeout
              + "): the consumer batches still in flight are abandoned. They cannot commit once the"
              + " backend closes, so the messages they took stay queued, and the next runtime on"
              + " this store applies them.";
    } else {
      return;
    }
    synchronized (lock) {
      if (reported) {
        return;
      }
      reported = true;
    }
    log.warn(problem, cause);
  }

  /** Whether the runtime runs: started, and not stopping. */
  @Override
  public boolean isRunning() {
    return running;
  }

  /** {@link #PHASE}. */
  @Override
  public int getPhase() {
    return PHASE;
  }

  /**
   * The kinds hosted at start, in the order they were hosted; empty before.
   *
   * @return an immutable list
   */
  public List<HostedKind> hostedKinds() {
    return hosted;
  }

  /**
   * How long ago the runtime started, by {@link System#nanoTime()}; zero before it started.
   *
   * @return the time since {@link #start()}
   */
  public Duration runningFor() {
    long started = startedAtNanos;
    return started == 0 ? Duration.ZERO : Duration.ofNanos(System.nanoTime() - started);
  }
}
