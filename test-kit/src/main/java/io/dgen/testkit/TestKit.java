package io.dgen.testkit;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.Call;
import io.dgen.DGen;
import io.dgen.DGenServer;
import io.dgen.DeadLetter;
import io.dgen.HostOptions;
import io.dgen.Kind;
import io.dgen.ProcessRef;
import io.dgen.ServerRef;
import io.dgen.StartOptions;
import io.dgen.Tenant;
import io.dgen.admin.ServerControl;
import io.dgen.backend.memory.MemoryBackend;
import io.dgen.internal.process.ServerProcess;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * A {@link DGen} over a fresh memory backend and a {@link ManualClock}, whose processes consume
 * only when a test {@linkplain #drain drains} them, in the test's thread. {@link DGenExtension}
 * makes one per test and closes it after; {@link #create()} makes one by hand, in any test
 * framework (only {@link DGenExtension} needs JUnit).
 *
 * <p>Determinism: no process consumes in the background ({@code
 * DGen.Builder.backgroundConsumers(false)}), so a queue holds exactly what the test pushed until
 * the test drains it, and time moves only by {@link #advance}. A call on a server whose queue is
 * empty runs inline in the caller; one that has to queue (messages ahead of it, or {@code consumeK
 * > 1}) waits for a drain: use {@link #call}.
 *
 * <p>Hosted servers work the same way: {@link #host} a kind, address its servers with {@link
 * #ref(Kind, String)} (or the {@code long} and {@code Tuple} forms), and {@link #drain} and {@link
 * #advance} them as started ones. The kit's runtime is alone in its backend, so it holds every
 * bucket once {@code host} returns; a server is loaded in the test's thread by its first drain or
 * call, and its {@code init} runs there, with its id.
 *
 * <pre>{@code
 * kit.host(ACCOUNT, Account::new);
 * ServerRef<Account.Msg> alice = kit.ref(ACCOUNT, "alice");
 * alice.cast(new Account.Deposit(5));
 * kit.drain(alice);
 * }</pre>
 */
public final class TestKit implements AutoCloseable {

  /**
   * How many buckets the kit's tenants hash into: few, since the kit's runtime is alone and holds
   * every bucket of a hosted kind (each costs it a lease, a watch and a timer scheduler).
   */
  static final int BUCKETS = 16;

  /** How many consecutive failures of one message {@link #drain} retries, without a threshold. */
  public static final int MAX_FAILURES = 10;

  private final MemoryBackend backend;
  private final ManualClock clock;
  private final DGen dgen;
  private final Tenant tenant;

  private TestKit() {
    this.backend = MemoryBackend.create();
    this.clock = new ManualClock(Instant.parse("2026-01-01T00:00:00Z"));
    this.dgen =
        DGen.builder(backend)
            .clock(clock)
            .ticker(clock::nanoTime)
            .backgroundConsumers(false)
            .buckets(BUCKETS)
            .build();
    this.tenant = dgen.tenant("test");
  }

  /** A kit with a fresh backend; close it after use. */
  public static TestKit create() {
    return new TestKit();
  }

  /** The runtime. */
  public DGen dgen() {
    return dgen;
  }

  /** The memory backend, fresh for this kit. */
  public MemoryBackend backend() {
    return backend;
  }

  /** The clock of the runtime. */
  public ManualClock clock() {
    return clock;
  }

  /** The default tenant, {@code "test"}. */
  public Tenant tenant() {
    return tenant;
  }

  /**
   * Starts {@code server} in the default tenant with default options.
   *
   * @return its reference
   */
  public <S, M> ProcessRef<M> start(DGenServer<S, M> server, @Nullable Object arg) {
    return dgen.start(server, arg, StartOptions.builder(tenant).build());
  }

  /**
   * Hosts {@code kind} in the default tenant with default options: see {@link #host(Kind, Supplier,
   * HostOptions)}.
   */
  public <S, M> void host(Kind<M> kind, Supplier<? extends DGenServer<S, M>> behaviour) {
    host(kind, behaviour, HostOptions.builder(tenant).build());
  }

  /**
   * Hosts {@code kind} ({@code DGen.host}); returns once this runtime holds every bucket of it, so
   * that its servers can be drained and called at once.
   *
   * @param options the kind's options, in this kit's tenants
   */
  public <S, M> void host(
      Kind<M> kind, Supplier<? extends DGenServer<S, M>> behaviour, HostOptions options) {
    dgen.host(kind, behaviour, options);
  }

  /** The server of {@code kind} with id {@code id} in the default tenant ({@code DGen.ref}). */
  public <M> ServerRef<M> ref(Kind<M> kind, String id) {
    return dgen.ref(tenant, kind, id);
  }

  /** The server of {@code kind} with id {@code id} in the default tenant ({@code DGen.ref}). */
  public <M> ServerRef<M> ref(Kind<M> kind, long id) {
    return dgen.ref(tenant, kind, id);
  }

  /** The server of {@code kind} with id {@code id} in the default tenant ({@code DGen.ref}). */
  public <M> ServerRef<M> ref(Kind<M> kind, Tuple id) {
    return dgen.ref(tenant, kind, id);
  }

  /**
   * Runs the queue of {@code ref} to empty in this thread: every batch, retry, dead letter and
   * {@code handleLocked} run happens before this returns. Stops early while the server is locked by
   * a lock that has not expired ({@link #advance} past its {@code lockTimeout}, then drain again).
   * A failing message is retried up to its dead-letter threshold (at once: no backoff). For a ref
   * of a hosted kind ({@link #ref(Kind, String)}), drains the server's process in this runtime,
   * loading it first if it is not.
   *
   * @return the number of messages processed (applied or dead-lettered)
   * @throws IllegalStateException if a message without a dead-letter threshold failed {@value
   *     #MAX_FAILURES} times in a row (its exception is the cause), or {@code ref} is a ref of a
   *     kind this kit does not host
   */
  public int drain(ServerRef<?> ref) {
    return process(ref).drainInCaller(MAX_FAILURES);
  }

  /**
   * Sends {@code request} as a call, drains the server, and returns the reply, of the type the
   * request names.
   *
   * @throws AssertionError if the call has no reply once the queue is drained
   */
  public <R> R call(ServerRef<?> ref, Call<R> request) {
    CompletableFuture<R> reply = ref.callAsync(request);
    drain(ref);
    try {
      return reply.get(0, TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      throw new AssertionError("the call has no reply after drain (is the server locked?)", e);
    } catch (ExecutionException e) {
      Throwable cause = e.getCause();
      if (cause instanceof RuntimeException re) {
        throw re;
      }
      throw new IllegalStateException(cause);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  /**
   * Moves the clock forward: lock timeouts and timers see the new time at the next drain. The
   * timers of started servers and of hosted ones are queued before this returns.
   *
   * @return the new instant
   */
  public Instant advance(Duration by) {
    Instant now = clock.advance(by);
    dgen.clockAdvanced(); // due timers are queued before this returns; drain runs them
    return now;
  }

  /**
   * Asserts that {@code ref}'s queue holds {@code expected} messages.
   *
   * @throws AssertionError if it holds another number
   */
  public void assertQueueLength(ServerRef<?> ref, long expected) {
    long actual = ServerControl.of(ref).queueLength();
    if (actual != expected) {
      throw new AssertionError(
          "queue length of " + ref + ": expected " + expected + " but was " + actual);
    }
  }

  /**
   * Asserts that {@code ref} has {@code expected} dead letters, and returns them oldest first.
   *
   * @return the dead letters
   * @throws AssertionError if it has another number
   */
  public <M> List<DeadLetter<M>> assertDeadLetters(ServerRef<M> ref, int expected) {
    List<DeadLetter<M>> dead = ServerControl.of(ref).deadLetters();
    if (dead.size() != expected) {
      throw new AssertionError(
          "dead letters of " + ref + ": expected " + expected + " but were " + dead);
    }
    return dead;
  }

  private static ServerProcess<?, ?> process(ServerRef<?> ref) {
    Objects.requireNonNull(ref, "ref must not be null");
    if (!(ref instanceof ServerProcess<?, ?> p)) {
      throw new IllegalArgumentException("not a process of a DGen runtime: " + ref);
    }
    return p;
  }

  /** Closes the runtime and the backend. */
  @Override
  public void close() {
    dgen.close();
    backend.close();
  }
}
