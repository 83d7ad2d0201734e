package io.dgen.chaos;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.DGen;
import io.dgen.HostOptions;
import io.dgen.ServerOptions;
import io.dgen.ServerRef;
import io.dgen.StartOptions;
import io.dgen.Tenant;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.BiConsumer;

/**
 * The one place where the chaos workload obtains its servers: {@link #refs} for sending (the
 * workload's operations and the transfers' outboxes), {@link #host} for consuming.
 *
 * <p>Servers {@code 0 .. STARTED-1} are started servers: every client JVM starts a consuming
 * process of each, and the processes race through transactions. The others are hosted servers
 * addressed by id ({@link DGen#host}, {@link DGen#ref}): each runs in the one client JVM that holds
 * its bucket's lease, and moves to the other when that one is killed (after the lease expires) and
 * partly back when its next generation joins. Transfers cross between the two families, so the
 * conserved total covers both.
 */
final class ChaosServers {

  /** Started servers ({@link DGen#start}), indexes {@code 0 .. STARTED-1}. */
  static final int STARTED = 4;

  /**
   * The system property that leaves the hosted servers out ({@code -Dchaos.hosted=false}): the
   * workload then runs on started servers only, as before scale-out. Passed on to the client JVMs.
   */
  static final String HOSTED_PROPERTY = "chaos.hosted";

  /** How many servers the workload spreads its messages over: the started, then the hosted. */
  static final int COUNT =
      STARTED + (Boolean.parseBoolean(System.getProperty(HOSTED_PROPERTY, "true")) ? 4 : 0);

  /** The hosted kind that takes one message per batch (calls run inline at the holder). */
  static final String INLINE_KIND = "chaos-inline";

  /** The hosted kind that batches up to 16 messages. */
  static final String BATCHED_KIND = "chaos-batched";

  /**
   * Failures of one message before it is dead-lettered: only {@link ChaosServer.Poison} gets there.
   */
  static final int DEAD_LETTER_THRESHOLD = 3;

  /**
   * How old a lock must be before another consumer busts it: well above {@code handleLocked}'s few
   * hundred milliseconds, so that only a dead (or stalled by a recovery) holder loses its lock.
   */
  static final Duration LOCK_TIMEOUT = Duration.ofSeconds(3);

  private ChaosServers() {}

  /** Whether server {@code index} is hosted (addressed by id) rather than started. */
  static boolean hosted(int index) {
    return index >= STARTED;
  }

  /**
   * The servers atomic transfers ({@code DGen.transact}) run between: the hosted ones of the kind
   * that takes one message per batch, whose calls run inline in any runtime that hosts it (the
   * started servers' handles are publish-only processes, and batches over one never run inline).
   */
  static List<Integer> atomic() {
    List<Integer> atomic = new ArrayList<>();
    for (int i = STARTED; i < COUNT; i++) {
      if (kind(i).equals(INLINE_KIND)) {
        atomic.add(i);
      }
    }
    return atomic;
  }

  /** The tuid server {@code index} is stored under. */
  static Tuple tuid(int index) {
    return hosted(index)
        ? Tuple.from(kind(index)).addAll(hostedId(index))
        : Tuple.from("chaos-server", (long) index);
  }

  /**
   * Handles on every server, by index, for sending: publish-only processes of the started ones,
   * refs of the hosted ones.
   */
  static List<ServerRef<ChaosServer.Msg>> refs(DGen dgen, Tenant tenant) {
    List<ServerRef<ChaosServer.Msg>> refs = new ArrayList<>();
    ChaosServer sender = new ChaosServer(i -> refs.get(i).outbox(), (event, id) -> {});
    for (int i = 0; i < COUNT; i++) {
      refs.add(
          hosted(i)
              ? dgen.ref(tenant, kind(i), hostedId(i))
              : dgen.start(
                  sender, i, options(StartOptions.builder(tenant), i).consume(false).build()));
    }
    return List.copyOf(refs);
  }

  /**
   * Consumes every server in this runtime, telling {@code events} what {@link ChaosServer} tells: a
   * consuming process of each started server, and the hosted kinds. Returns the handles for sending
   * ({@link #refs}), made once the kinds are hosted, so that they are a hosting runtime's refs; the
   * servers' outboxes wait for them (a transfer consumed at once waits milliseconds).
   */
  static List<ServerRef<ChaosServer.Msg>> host(
      DGen dgen, Tenant tenant, BiConsumer<String, String> events) {
    CompletableFuture<List<ServerRef<ChaosServer.Msg>>> refs = new CompletableFuture<>();
    ChaosServer behaviour = new ChaosServer(i -> refs.join().get(i).outbox(), events);
    try {
      for (int i = 0; i < STARTED; i++) {
        dgen.start(behaviour, i, options(StartOptions.builder(tenant), i).build());
      }
      if (COUNT > STARTED) {
        dgen.host(INLINE_KIND, () -> behaviour, options(HostOptions.builder(tenant), 0).build());
        dgen.host(BATCHED_KIND, () -> behaviour, options(HostOptions.builder(tenant), 3).build());
      }
      refs.complete(refs(dgen, tenant));
    } catch (RuntimeException e) {
      refs.completeExceptionally(e);
      throw e;
    }
    return refs.join();
  }

  private static String kind(int index) {
    return index % 2 == 0 ? INLINE_KIND : BATCHED_KIND;
  }

  /** A hosted server's id within its kind: what {@code init} receives. */
  private static Tuple hostedId(int index) {
    return Tuple.from((long) index);
  }

  /**
   * Server 0 (and the inline hosted kind) takes one message per batch, so its calls may run inline,
   * in the caller's transaction; servers 1–3 batch 4, 8 and 16 (the batched hosted kind 16).
   */
  private static <B extends ServerOptions.Builder<B, ?>> B options(B builder, int index) {
    return builder
        .consumeK(index == 0 ? 1 : 4 << (index - 1))
        .deadLetterThreshold(DEAD_LETTER_THRESHOLD)
        .lockTimeout(LOCK_TIMEOUT);
  }
}
