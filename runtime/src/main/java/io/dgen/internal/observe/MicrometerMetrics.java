package io.dgen.internal.observe;

import io.dgen.ServerRef;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntSupplier;

/**
 * The runtime's meters in a Micrometer {@link MeterRegistry}: the only class of the runtime that
 * touches Micrometer, loaded only when {@code DGen.Builder.meterRegistry} was called, so that the
 * runtime runs without Micrometer on the class path. Meters are tagged by {@code tenant} (the path)
 * and {@code server} (the behaviour's class), never by tuid. See {@code docs/operations.md}.
 *
 * <p>Queue length is sampled, not counted: at most {@link #QUEUE_SAMPLE_CAP} processes of this
 * runtime (the first to start) are read, one snapshot read each, whenever the registry reads the
 * gauge; {@code dgen.queue.length} sums them per tenant and behaviour, and {@code
 * dgen.queue.sampled} says how many were read.
 *
 * <p>Threading: thread-safe.
 */
public final class MicrometerMetrics implements Metrics {

  /** The most processes of one runtime whose queues the gauges read. */
  public static final int QUEUE_SAMPLE_CAP = 64;

  private final MeterRegistry registry;
  private final Map<List<Object>, Server> servers = new ConcurrentHashMap<>();
  private final Map<Integer, Counter> retries = new ConcurrentHashMap<>();
  private final AtomicInteger sampled = new AtomicInteger();
  private final Counter pushTransactions;
  private final Counter pushedCasts;
  private final Counter groupTransactions;
  private final Counter groupBatches;

  /**
   * Records into {@code registry}.
   *
   * @param registry the registry
   */
  public MicrometerMetrics(MeterRegistry registry) {
    this.registry = Objects.requireNonNull(registry, "registry must not be null");
    this.pushTransactions =
        Counter.builder("dgen.push.transactions")
            .description("push transactions of plain casts committed (group commit shares them)")
            .register(registry);
    this.pushedCasts =
        Counter.builder("dgen.push.casts")
            .description("cast and castAll calls the push transactions carried")
            .register(registry);
    this.groupTransactions =
        Counter.builder("dgen.consume.group.transactions")
            .description("transactions that carried several servers' one-message batches")
            .register(registry);
    this.groupBatches =
        Counter.builder("dgen.consume.group.batches")
            .description("one-message batches those transactions carried")
            .register(registry);
  }

  @Override
  public Metrics.Server server(String tenant, Class<?> behaviour) {
    return servers.computeIfAbsent(
        List.of(tenant, behaviour),
        k -> new Server(Tags.of("tenant", tenant, "server", behaviour.getName())));
  }

  @Override
  public void pushed(int casts) {
    pushTransactions.increment();
    pushedCasts.increment(casts);
  }

  @Override
  public void consumedTogether(int servers) {
    groupTransactions.increment();
    groupBatches.increment(servers);
  }

  @Override
  public void transactionRetried(int code) {
    retries
        .computeIfAbsent(
            code,
            c ->
                Counter.builder("dgen.transaction.retries")
                    .description(
                        "transactions of the runtime retried, by the error that ended the attempt")
                    .tag("code", Integer.toString(c))
                    .register(registry))
        .increment();
  }

  @Override
  public void runtime(IntSupplier processes, IntSupplier watches) {
    Gauge.builder("dgen.processes", processes::getAsInt)
        .description("processes running in this runtime")
        .register(registry);
    Gauge.builder("dgen.watches", watches::getAsInt)
        .description("watches this runtime holds (at most one per bucket it uses in a tenant)")
        .register(registry);
  }

  @Override
  public void hosted(String tenant, String kind, IntSupplier buckets, IntSupplier loaded) {
    Tags tags = Tags.of("tenant", tenant, "kind", kind);
    Gauge.builder("dgen.hosted.buckets", buckets::getAsInt)
        .tags(tags)
        .description("buckets of the kind whose lease this runtime holds")
        .register(registry);
    Gauge.builder("dgen.hosted.loaded", loaded::getAsInt)
        .tags(tags)
        .description("servers of the kind this runtime has loaded")
        .register(registry);
  }

  @Override
  public void expired(String tenant, String kind) {
    Counter.builder("dgen.servers.expired")
        .tags(Tags.of("tenant", tenant, "kind", kind))
        .description("hosted servers deleted after their kind's expireAfter without a message")
        .register(registry)
        .increment();
  }

  @Override
  public Metrics.Limit limit(String name, String type, IntSupplier throttled) {
    Tags tags = Tags.of("limit", name, "type", type);
    Gauge.builder("dgen.limit.throttled", throttled::getAsInt)
        .tags(tags)
        .description("servers of this runtime waiting for a permit of the limit")
        .register(registry);
    Counter granted =
        Counter.builder("dgen.limit.permits")
            .tags(tags)
            .description("permits of the limit granted to this runtime's servers")
            .register(registry);
    Timer waited =
        Timer.builder("dgen.limit.wait")
            .tags(tags)
            .description("time a server waited for a permit of the limit")
            .register(registry);
    Counter transactions =
        Counter.builder("dgen.limit.transactions")
            .tags(tags)
            .description("committed transactions of the limiter (reservations, takes, releases)")
            .register(registry);
    Counter conflicts =
        Counter.builder("dgen.limit.conflicts")
            .tags(tags)
            .description("attempts of the limiter's transactions that conflicted and were retried")
            .register(registry);
    return new Metrics.Limit() {
      @Override
      public void granted(int permits) {
        granted.increment(permits);
      }

      @Override
      public void waited(long nanos) {
        waited.record(nanos, TimeUnit.NANOSECONDS);
      }

      @Override
      public void transaction(int attempts) {
        transactions.increment();
        if (attempts > 1) {
          conflicts.increment(attempts - 1.0);
        }
      }
    };
  }

  private final class Server implements Metrics.Server {
    private final Counter processed;
    private final Counter failed;
    private final Counter dead;
    private final Counter refused;
    private final Counter undecodable;
    private final Counter locks;
    private final Counter busts;
    private final DistributionSummary batchSize;
    private final Timer batchTime;
    private final Map<Route, Timer[]> calls = new ConcurrentHashMap<>();
    private final Tags tags;
    private final Set<ServerRef<?>> queues = ConcurrentHashMap.newKeySet();

    Server(Tags tags) {
      this.tags = tags;
      this.processed = counter("dgen.messages.processed", "messages applied or dead-lettered");
      this.failed = counter("dgen.messages.failed", "callback failures (each aborts its batch)");
      this.dead = counter("dgen.dead.letters", "messages moved to the dead letters");
      this.refused =
          counter("dgen.casts.refused", "casts refused by their handler (TerminalException)");
      this.undecodable =
          counter(
              "dgen.state.undecodable",
              "processes stopped because their server's stored state could not be decoded");
      this.locks = counter("dgen.lock.acquisitions", "locks taken by Result.lock");
      this.busts = counter("dgen.lock.busts", "expired locks busted");
      this.batchSize =
          DistributionSummary.builder("dgen.batch.size")
              .description("messages per committed consumer batch")
              .tags(tags)
              .register(registry);
      this.batchTime =
          Timer.builder("dgen.batch.duration")
              .description("time from a consumer batch's start to its commit")
              .tags(tags)
              .register(registry);
      Gauge.builder("dgen.queue.length", this, Server::queueLength)
          .description("queued messages of the sampled processes of this tenant and behaviour")
          .tags(tags)
          .register(registry);
      Gauge.builder("dgen.queue.sampled", queues, Set::size)
          .description("processes whose queues dgen.queue.length reads")
          .tags(tags)
          .register(registry);
    }

    private Counter counter(String name, String description) {
      return Counter.builder(name).description(description).tags(tags).register(registry);
    }

    private double queueLength() {
      long total = 0;
      for (ServerRef<?> ref : queues) {
        try {
          total += io.dgen.admin.ServerControl.of(ref).queueLength();
        } catch (RuntimeException e) {
          // stopped meanwhile, or the database is unreachable: that process adds nothing
        }
      }
      return total;
    }

    @Override
    public void batch(int count, long nanos) {
      processed.increment(count);
      batchSize.record(count);
      batchTime.record(nanos, TimeUnit.NANOSECONDS);
    }

    @Override
    public void failed() {
      failed.increment();
    }

    @Override
    public void deadLettered() {
      dead.increment();
    }

    @Override
    public void castRefused() {
      refused.increment();
    }

    @Override
    public void stateUndecodable() {
      undecodable.increment();
    }

    @Override
    public void lockAcquired() {
      locks.increment();
    }

    @Override
    public void lockBusted() {
      busts.increment();
    }

    @Override
    public void call(Route route, long nanos, boolean error) {
      Timer[] t =
          calls.computeIfAbsent(
              route, r -> new Timer[] {callTimer(r, "ok"), callTimer(r, "error")});
      t[error ? 1 : 0].record(nanos, TimeUnit.NANOSECONDS);
    }

    private Timer callTimer(Route route, String outcome) {
      return Timer.builder("dgen.calls")
          .description("calls by route, from the caller's start to its reply")
          .tags(tags)
          .tag("route", route.name().toLowerCase(java.util.Locale.ROOT))
          .tag("outcome", outcome)
          .register(registry);
    }

    @Override
    public void started(ServerRef<?> process) {
      if (sampled.incrementAndGet() <= QUEUE_SAMPLE_CAP) {
        queues.add(process);
      } else {
        sampled.decrementAndGet();
      }
    }

    @Override
    public void stopped(ServerRef<?> process) {
      if (queues.remove(process)) {
        sampled.decrementAndGet();
      }
    }
  }
}
