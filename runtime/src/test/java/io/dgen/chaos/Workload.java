package io.dgen.chaos;

import io.dgen.AtomicBody;
import io.dgen.CallTimeoutException;
import io.dgen.ServerRef;
import io.dgen.chaos.ChaosServer.Apply;
import io.dgen.chaos.ChaosServer.Give;
import io.dgen.chaos.ChaosServer.Msg;
import io.dgen.chaos.ChaosServer.Poison;
import io.dgen.chaos.ChaosServer.Take;
import io.dgen.chaos.ChaosServer.Transfer;
import io.dgen.chaos.ChaosServer.Work;
import io.dgen.chaos.Journal.Outcome;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * The mixed workload one client runs against the chaos servers, journaling every operation before
 * it is sent and its outcome after:
 *
 * <ul>
 *   <li>plain casts and {@code castAll}s of {@link Apply} (acknowledged: applied exactly once);
 *   <li>queued calls of {@link Apply} with 2–4 s timeouts (a reply is its id; a timeout may still
 *       execute);
 *   <li>keyed casts and keyed calls of {@link Apply}, and keyed casts of lock-mode {@link Work},
 *       retried on every error until they succeed (applied exactly once however often retried; a
 *       later generation of a killed client retries the ones it left unfinished);
 *   <li>timers ({@code castAfter} of 0.2–3 s), a quarter of them cancelled while pending;
 *   <li>{@link Transfer}s between servers, whose credits travel through the outbox;
 *   <li>atomic transfers ({@code DGen.transact}: a {@link Take} and a {@link Give} in one
 *       transaction) between the servers whose calls run inline ({@link ChaosServers#atomic}), when
 *       the hosted servers are in the run;
 *   <li>a few {@link Poison} messages, meant to be dead-lettered.
 * </ul>
 *
 * A call (plain or keyed) that has neither been answered nor failed {@link #OVERRUN} after its own
 * timeout is journaled as an {@value #OVERRAN} event: DGen promises to end it by its timeout. The
 * workload does not wait for it any longer (a keyed call is retried with its key), so a call that
 * never ends cannot hang the run.
 *
 * <p>Operations are paced by a short random pause: that is the workload's rate, not a wait for
 * anything. Thread-safe; {@link #run} blocks.
 */
final class Workload {

  private enum Op {
    CAST(18),
    CAST_ALL(8),
    CALL(14),
    KEYED_CAST(10),
    KEYED_CALL(10),
    TIMER(10),
    WORK(6),
    POISON(2),
    TRANSFER(12),
    ATOMIC(8);

    final int weight;

    Op(int weight) {
      this.weight = weight;
    }

    /** Whether this run has what the operation needs: two servers for atomic transfers. */
    boolean enabled() {
      return this != ATOMIC || ChaosServers.atomic().size() >= 2;
    }
  }

  /** The operations this run sends. */
  private static final List<Op> ENABLED =
      java.util.Arrays.stream(Op.values()).filter(Op::enabled).toList();

  /** The operation of {@link #rawProbe}: a transaction of the backend's, not a DGen operation. */
  static final String RAW = "RAW";

  /** The names of the operations, as journals record them. */
  static final List<String> OPS = ENABLED.stream().map(Op::name).toList();

  private static final int TOTAL_WEIGHT = ENABLED.stream().mapToInt(o -> o.weight).sum();
  private static final int CALLS_IN_FLIGHT = 16;
  private static final Duration KEYED_CALL_TIMEOUT = Duration.ofSeconds(3);

  /** Keyed operations give up (and journal an error) only this long after the deadline. */
  private static final Duration GIVE_UP_AFTER_DEADLINE = Duration.ofMinutes(3);

  /** ... or this long after the workload was told to stop, whichever comes first. */
  private static final Duration GIVE_UP_AFTER_STOP = Duration.ofMinutes(2);

  /** How long past its timeout a call may stay unanswered before it is reported as overrun. */
  static final Duration OVERRUN = Duration.ofSeconds(30);

  /**
   * The journal event of a call that neither ended nor failed {@link #OVERRUN} past its timeout.
   */
  static final String OVERRAN = "call-overran";

  private final List<ServerRef<Msg>> refs;
  private final @Nullable Function<AtomicBody<Long>, Long> transact;
  private final Journal journal;
  private final String prefix;
  private final long seed;
  private final AtomicLong sequence = new AtomicLong();
  private final Semaphore calls = new Semaphore(CALLS_IN_FLIGHT);
  private final ScheduledExecutorService cancels =
      Executors.newSingleThreadScheduledExecutor(
          r -> {
            Thread t = new Thread(r, "chaos-cancels");
            t.setDaemon(true);
            return t;
          });
  // each keyed call waits on a thread of its own, so that one that overruns can be left behind
  private final ExecutorService keyedCalls =
      Executors.newCachedThreadPool(
          r -> {
            Thread t = new Thread(r, "chaos-keyed-call");
            t.setDaemon(true);
            return t;
          });
  private volatile long giveUpAt = Long.MAX_VALUE;
  private volatile BooleanSupplier stopped = () -> false;
  private final AtomicLong stopSeenAt = new AtomicLong();

  /**
   * @param refs the servers, by index
   * @param journal where operations are recorded
   * @param prefix of every id this client makes (unique per client and generation)
   * @param seed of the choice of operations
   */
  Workload(List<ServerRef<Msg>> refs, Journal journal, String prefix, long seed) {
    this(refs, null, journal, prefix, seed);
  }

  /**
   * @param transact runs an atomic transaction in the servers' tenant ({@code DGen.transact}), for
   *     the ATOMIC operations; null for a workload that sends none (the probes)
   */
  Workload(
      List<ServerRef<Msg>> refs,
      @Nullable Function<AtomicBody<Long>, Long> transact,
      Journal journal,
      String prefix,
      long seed) {
    this.transact = transact;
    this.refs = refs;
    this.journal = journal;
    this.prefix = prefix;
    this.seed = seed;
  }

  /**
   * Retries the keyed operations that earlier generations of this client sent but never saw finish
   * (a client that crashed retries with the same keys), in parallel with the workload.
   */
  Thread retryUnfinished(List<Journal.Line> earlier) {
    Set<String> finished = new HashSet<>();
    earlier.stream().filter(l -> l.kind().equals("R")).forEach(l -> finished.add(l.id()));
    Map<String, Journal.Line> unfinished = new java.util.LinkedHashMap<>();
    for (Journal.Line l : earlier) {
      if (l.kind().equals("S") && !finished.contains(l.id()) && isKeyed(l.field(0))) {
        unfinished.put(l.id(), l);
      }
    }
    Thread t =
        new Thread(
            () ->
                unfinished
                    .values()
                    .forEach(
                        l ->
                            keyed(
                                Op.valueOf(l.field(0)),
                                l.id(),
                                Integer.parseInt(l.field(1)),
                                l.field(2))),
            "chaos-retry-unfinished");
    t.start();
    return t;
  }

  /**
   * Runs {@code threads} clients until {@code deadlineMillis} (epoch) or until {@code stop} says
   * so, then waits for the calls and cancels in flight.
   */
  void run(int threads, long deadlineMillis, BooleanSupplier stop) throws InterruptedException {
    giveUpAt = deadlineMillis + GIVE_UP_AFTER_DEADLINE.toMillis();
    stopped = stop;
    List<Thread> workers = new ArrayList<>();
    for (int i = 0; i < threads; i++) {
      Random random = new Random(seed * 31 + i);
      Thread t =
          new Thread(
              () -> {
                // every kind of operation first, once, then a random mix by weight
                for (int n = 0;
                    System.currentTimeMillis() < deadlineMillis && !stop.getAsBoolean();
                    n++) {
                  step(random, n < ENABLED.size() ? ENABLED.get(n) : pick(random));
                  pace(random);
                }
              },
              "chaos-worker-" + i);
      t.start();
      workers.add(t);
    }
    for (Thread t : workers) {
      t.join();
    }
    // calls in flight end by their timeouts; cancels scheduled run before the executor ends
    calls.tryAcquire(CALLS_IN_FLIGHT, 1, TimeUnit.MINUTES);
    cancels.shutdown();
    cancels.awaitTermination(1, TimeUnit.MINUTES);
  }

  private static Op pick(Random random) {
    int pick = random.nextInt(TOTAL_WEIGHT);
    for (Op o : ENABLED) {
      if (pick < o.weight) {
        return o;
      }
      pick -= o.weight;
    }
    throw new AssertionError("weights add up to " + TOTAL_WEIGHT);
  }

  private void step(Random random, Op op) {
    int server = random.nextInt(refs.size());
    String id = prefix + "-" + sequence.incrementAndGet();
    switch (op) {
      case CAST -> plain(op, id, server, () -> refs.get(server).cast(new Apply(id)));
      case CAST_ALL -> castAll(id, server, 2 + random.nextInt(3));
      case CALL -> call(id, server, Duration.ofMillis(2_000 + random.nextInt(2_000)));
      case KEYED_CAST, KEYED_CALL -> keyed(op, id, server, "");
      case WORK -> keyed(op, id, server, Long.toString(200 + random.nextInt(200)));
      case TIMER -> timer(id, server, random);
      case POISON -> plain(op, id, server, () -> refs.get(server).cast(new Poison(id)));
      case TRANSFER -> {
        int to = (server + 1 + random.nextInt(refs.size() - 1)) % refs.size();
        long amount = 1 + random.nextInt(5_000);
        plain(
            op,
            id,
            server,
            to + ":" + amount,
            () -> refs.get(server).cast(new Transfer(id, to, amount)));
      }
      case ATOMIC -> atomic(id, random);
    }
  }

  /**
   * An atomic transfer between two of {@link ChaosServers#atomic}: both calls commit or neither.
   * Acknowledged once it committed; a refusal, a busy server or a fault is an error.
   */
  private void atomic(String id, Random random) {
    List<Integer> servers = ChaosServers.atomic();
    int from = servers.get(random.nextInt(servers.size()));
    int to =
        servers.get(
            (servers.indexOf(from) + 1 + random.nextInt(servers.size() - 1)) % servers.size());
    long amount = 1 + random.nextInt(5_000);
    plain(
        Op.ATOMIC,
        id,
        from,
        to + ":" + amount,
        () ->
            Objects.requireNonNull(transact, "a workload without transact sends no ATOMIC")
                .apply(
                    tx -> {
                      tx.prefetch(refs.get(from), refs.get(to)); // one round of reads for both
                      tx.call(refs.get(from), new Take(id, amount));
                      return tx.call(refs.get(to), new Give(id, amount));
                    }));
  }

  private void plain(Op op, String id, int server, Runnable send) {
    plain(op.name(), id, server, "", send);
  }

  private void plain(Op op, String id, int server, String detail, Runnable send) {
    plain(op.name(), id, server, detail, send);
  }

  private void plain(String op, String id, int server, String detail, Runnable send) {
    journal.sent(op, id, server, detail);
    try {
      send.run();
      journal.result(id, Outcome.OK, "");
    } catch (RuntimeException e) {
      journal.result(id, Outcome.ERROR, Journal.describe(e));
    }
  }

  private void castAll(String id, int server, int size) {
    List<String> ids = new ArrayList<>();
    for (int i = 0; i < size; i++) {
      ids.add(id + "." + i);
    }
    plain(
        Op.CAST_ALL,
        id,
        server,
        String.join(",", ids),
        () -> refs.get(server).castAll(ids.stream().map(Apply::new).toList()));
  }

  private void call(String id, int server, Duration timeout) {
    try {
      calls.acquire();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return;
    }
    journal.sent(Op.CALL.name(), id, server, Long.toString(timeout.toMillis()));
    AtomicBoolean released = new AtomicBoolean();
    Runnable release =
        () -> {
          if (released.compareAndSet(false, true)) {
            calls.release();
          }
        };
    try {
      CompletableFuture<String> pending =
          refs.get(server).callAsync(new ChaosServer.Ask(id), timeout);
      cancels.schedule(
          () -> {
            if (!pending.isDone()) {
              journal.event(id, OVERRAN);
              release.run(); // the workload goes on; its outcome is journaled if it ever comes
            }
          },
          timeout.plus(OVERRUN).toMillis(),
          TimeUnit.MILLISECONDS);
      pending.whenComplete(
          (reply, error) -> {
            release.run();
            if (error == null) {
              journal.result(id, id.equals(reply) ? Outcome.OK : Outcome.WRONG, "" + reply);
            } else {
              Throwable cause = unwrap(error);
              journal.result(
                  id,
                  cause instanceof CallTimeoutException ? Outcome.TIMEOUT : Outcome.ERROR,
                  Journal.describe(cause));
            }
          });
    } catch (RuntimeException e) {
      release.run();
      journal.result(id, Outcome.ERROR, Journal.describe(e));
    }
  }

  /** A keyed cast, keyed call or keyed lock-mode cast, retried on every error until it succeeds. */
  private void keyed(Op op, String id, int server, String detail) {
    journal.sent(op.name(), id, server, detail);
    ServerRef<Msg> ref = refs.get(server);
    int attempts = 0;
    long backoff = 50;
    while (true) {
      attempts++;
      try {
        String result =
            switch (op) {
              case KEYED_CAST -> "queued=" + ref.cast(new Apply(id), id);
              case WORK -> "queued=" + ref.cast(new Work(id, Long.parseLong(detail)), id);
              default -> keyedCall(ref, id, KEYED_CALL_TIMEOUT);
            };
        boolean right = op != Op.KEYED_CALL || id.equals(result);
        journal.result(id, right ? Outcome.OK : Outcome.WRONG, result + ",attempts=" + attempts);
        return;
      } catch (RuntimeException e) {
        if (givingUp()) {
          journal.result(id, Outcome.ERROR, Journal.describe(e) + ",attempts=" + attempts);
          return;
        }
        sleep(backoff); // the client's retry backoff
        backoff = Math.min(1_000, backoff * 2);
      }
    }
  }

  /**
   * A keyed call, waited for at most {@link #OVERRUN} past its timeout: one that has not ended by
   * then is journaled as {@value #OVERRAN} and fails here (the caller retries it with its key),
   * while its thread is left waiting.
   */
  private String keyedCall(ServerRef<Msg> ref, String id, Duration timeout) {
    Future<String> call = keyedCalls.submit(() -> ref.call(new ChaosServer.Ask(id), id, timeout));
    try {
      return call.get(timeout.plus(OVERRUN).toMillis(), TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      journal.event(id, OVERRAN);
      throw new IllegalStateException("keyed call " + id + " overran its " + timeout, e);
    } catch (ExecutionException e) {
      throw e.getCause() instanceof RuntimeException r ? r : new IllegalStateException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    }
  }

  /**
   * Whether a keyed operation stops retrying: long after the deadline, or a while after the
   * workload was told to stop.
   */
  private boolean givingUp() {
    long now = System.currentTimeMillis();
    if (stopped.getAsBoolean()) {
      stopSeenAt.compareAndSet(0, now);
      if (now > stopSeenAt.get() + GIVE_UP_AFTER_STOP.toMillis()) {
        return true;
      }
    }
    return now > giveUpAt;
  }

  private void timer(String id, int server, Random random) {
    long delay = 200 + random.nextInt(2_800);
    boolean cancel = random.nextInt(4) == 0;
    long cancelAfter = random.nextInt(1_500);
    journal.sent(Op.TIMER.name(), id, server, delay + ":" + (cancel ? cancelAfter : -1));
    String timerId;
    try {
      timerId = refs.get(server).castAfter(new Apply(id), Duration.ofMillis(delay));
      journal.result(id, Outcome.OK, timerId);
    } catch (RuntimeException e) {
      journal.result(id, Outcome.ERROR, Journal.describe(e));
      return;
    }
    if (cancel) {
      cancels.schedule(
          () -> {
            try {
              journal.cancelled(id, Boolean.toString(refs.get(server).cancelTimer(timerId)));
            } catch (RuntimeException e) {
              journal.cancelled(id, "error:" + Journal.describe(e));
            }
          },
          cancelAfter,
          TimeUnit.MILLISECONDS);
    }
  }

  static boolean isKeyed(String op) {
    return op.equals(Op.KEYED_CAST.name())
        || op.equals(Op.KEYED_CALL.name())
        || op.equals(Op.WORK.name());
  }

  private static Throwable unwrap(Throwable t) {
    Throwable e = t;
    while (e instanceof java.util.concurrent.CompletionException && e.getCause() != null) {
      e = e.getCause();
    }
    return e;
  }

  private static void pace(Random random) {
    sleep(5 + random.nextInt(20));
  }

  private static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /**
   * Runs one small read-write transaction after the other on {@code key}, straight through the
   * backend (no DGen), until {@code stop} says so: what the cluster itself accepts, to compare
   * DGen's gaps with. Journaled as operation {@code RAW}.
   */
  void rawProbe(io.dgen.backend.Backend backend, byte[] key, BooleanSupplier stop) {
    while (!stop.getAsBoolean()) {
      String id = prefix + "-" + sequence.incrementAndGet();
      byte[] value = id.getBytes(java.nio.charset.StandardCharsets.UTF_8);
      plain(
          RAW,
          id,
          0,
          "",
          () ->
              backend.run(
                  tx -> {
                    tx.get(key);
                    tx.set(key, value);
                    return null;
                  }));
      sleep(10);
    }
  }

  /**
   * Sends plain casts one after the other to server after server until {@code stop} says so: a
   * steady stream of commits, whose gaps measure how long the cluster accepted none.
   */
  void probe(BooleanSupplier stop) {
    int server = 0;
    while (!stop.getAsBoolean()) {
      String id = prefix + "-" + sequence.incrementAndGet();
      ServerRef<Msg> ref = refs.get(server);
      plain("PROBE", id, server, "", () -> ref.cast(new Apply(id)));
      server = (server + 1) % refs.size();
      sleep(10);
    }
  }
}
