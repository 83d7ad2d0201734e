package io.dgen.chaos;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.DGen;
import io.dgen.ServerRef;
import io.dgen.StartOptions;
import io.dgen.Tenant;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * The one place where the chaos workload obtains its servers: {@link #refs} for sending (the
 * workload's operations and the transfers' outboxes), {@link #host} for consuming. Switching the
 * workload to hosted servers addressed by id changes these two methods only.
 */
final class ChaosServers {

  /** How many servers the workload spreads its messages over. */
  static final int COUNT = 4;

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

  /** The tuid of server {@code index}. */
  static Tuple tuid(int index) {
    return Tuple.from("chaos-server", (long) index);
  }

  /** Publish-only processes of every server, by index, for sending. */
  static List<ServerRef<ChaosServer.Msg>> refs(DGen dgen, Tenant tenant) {
    List<ServerRef<ChaosServer.Msg>> refs = new ArrayList<>();
    ChaosServer sender = new ChaosServer(i -> refs.get(i).outbox(), (event, id) -> {});
    for (int i = 0; i < COUNT; i++) {
      refs.add(dgen.start(sender, i, options(tenant, i, false)));
    }
    return List.copyOf(refs);
  }

  /** A consuming process of every server in this runtime, running {@code behaviour}. */
  static List<ServerRef<ChaosServer.Msg>> host(DGen dgen, Tenant tenant, ChaosServer behaviour) {
    List<ServerRef<ChaosServer.Msg>> hosted = new ArrayList<>();
    for (int i = 0; i < COUNT; i++) {
      hosted.add(dgen.start(behaviour, i, options(tenant, i, true)));
    }
    return hosted;
  }

  /**
   * Server 0 takes one message per batch (so its calls may run inline, in the caller's
   * transaction); the others batch 4, 8 and 16.
   */
  private static StartOptions options(Tenant tenant, int index, boolean consume) {
    return StartOptions.builder(tenant)
        .consume(consume)
        .consumeK(index == 0 ? 1 : 4 << (index - 1))
        .deadLetterThreshold(DEAD_LETTER_THRESHOLD)
        .lockTimeout(LOCK_TIMEOUT)
        .build();
  }
}
