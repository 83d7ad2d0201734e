package io.dgen.benchmarks;

import com.apple.foundationdb.subspace.Subspace;
import com.apple.foundationdb.tuple.Tuple;
import io.dgen.Call;
import io.dgen.DGen;
import io.dgen.DGenServer;
import io.dgen.ServerRef;
import io.dgen.StartOptions;
import io.dgen.StateEncoding;
import io.dgen.Tenant;
import io.dgen.backend.Backend;
import io.dgen.benchmarks.Target.Bench;
import io.opentelemetry.api.OpenTelemetry;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.Collectors;
import org.jspecify.annotations.Nullable;

/**
 * The scenarios. Each builds its own backend and {@link DGen} (so counters and garbage do not leak
 * between scenarios), warms up, then measures, and returns one {@link Row}.
 *
 * <p>Throughput scenarios are end to end: publishers send for a fixed time, and the interval ends
 * when the last published message has been applied (its post-commit action ran). Publishers keep at
 * most a window of messages published but not yet applied, so the queue stays deep enough for full
 * batches but never grows without bound.
 */
final class Scenarios {

  private static final Duration DRAIN_TIMEOUT = Duration.ofMinutes(2);
  private static final Duration CALL_TIMEOUT = Duration.ofSeconds(10);
  private static final Duration MARKER_WAIT = Duration.ofMinutes(1);
  private static final CounterServer.Add ONE = new CounterServer.Add(1);
  private static final long WINDOW_WAIT_NANOS = TimeUnit.MILLISECONDS.toNanos(1);

  /** The watch limit of a scenario without idle servers: FoundationDB's default. */
  private static final int DEFAULT_MAX_WATCHES = 10_000;

  /** Rounds of the wide-state rows, whose CPU figure is the least round's. */
  private static final int WIDE_ROUNDS = 3;

  private final Settings settings;
  private final Target target;

  Scenarios(Settings settings, Target target) {
    this.settings = settings;
    this.target = target;
  }

  // ---------------------------------------------------------------- baselines

  /** The backend alone: one thread, one key, get + set per transaction. */
  Row rawTransactions() {
    try (Bench bench = target.open(DEFAULT_MAX_WATCHES)) {
      Backend backend = bench.backend();
      Subspace space = backend.directory(bench.root(), "raw");
      byte[] key = space.pack(Tuple.from("counter"));
      Runnable rmw =
          () ->
              backend.run(
                  tx -> {
                    byte[] v = tx.get(key);
                    long n = v == null ? 0 : ByteBuffer.wrap(v).getLong();
                    tx.set(key, ByteBuffer.allocate(Long.BYTES).putLong(n + 1).array());
                    return null;
                  });
      long warmEnd = System.nanoTime() + settings.warmup().toNanos();
      while (System.nanoTime() < warmEnd) {
        rmw.run();
      }
      Cost before = bench.cost();
      long cpu0 = processCpuNanos();
      Latencies latencies = new Latencies();
      long start = System.nanoTime();
      long end = start + settings.measure().toNanos();
      long n = 0;
      long t0;
      while ((t0 = System.nanoTime()) < end) {
        rmw.run();
        latencies.add(System.nanoTime() - t0);
        n++;
      }
      long elapsed = System.nanoTime() - start;
      Cost cost = bench.cost().minus(before);
      long cpu = processCpuNanos() - cpu0;
      return row(
          "raw-tx",
          "baseline: raw " + target.name() + " tx (get+set, 1 thread)",
          n,
          elapsed,
          n * 1e9 / elapsed,
          latencies.summarize(),
          cost,
          -1,
          cpu,
          Map.of(),
          "no DGen");
    }
  }

  /**
   * A plain in-JVM actor: a single-thread executor applying the same messages to the same state.
   */
  Row plainActor() {
    ExecutorService actor =
        Executors.newSingleThreadExecutor(
            r -> {
              Thread t = new Thread(r, "bench-plain-actor");
              t.setDaemon(true);
              return t;
            });
    try {
      Progress progress = new Progress();
      PlainActor state = new PlainActor();
      Sender send =
          (thread, seq) -> {
            actor.execute(() -> state.apply(ONE, progress));
            return 1;
          };
      long window = window(64);
      publish(progress, send, settings.publishers(), window, settings.warmup(), false);
      long cpu0 = processCpuNanos();
      Published p = publishRounds(progress, send, settings.publishers(), window, false);
      long cpu = processCpuNanos() - cpu0;
      if (state.value != progress.applied()) {
        throw new IllegalStateException(
            "plain actor: state " + state.value + " != applied " + progress.applied());
      }
      return row(
          "plain-actor",
          "baseline: plain actor (1-thread executor, " + settings.publishers() + " publishers)",
          p.messages(),
          p.elapsedNanos(),
          p.medianRate(),
          null,
          null,
          -1,
          cpu,
          Map.of(),
          join("not durable", p.spread()));
    } finally {
      actor.shutdownNow();
    }
  }

  /** The state of the plain actor, touched only by its one thread. */
  private static final class PlainActor {
    private long value;

    void apply(CounterServer.Add add, Progress progress) {
      value += add.by();
      progress.add(1);
    }
  }

  // ---------------------------------------------------------------- casts to one server

  /**
   * Casts to one server at {@code consumeK}: {@code castAll} batches from several publishers, or
   * plain {@code cast} (one push transaction each, whose latency is then recorded).
   */
  Row casts(int consumeK, boolean plainCast) {
    return casts(consumeK, plainCast, false);
  }

  /**
   * Like {@link #casts(int, boolean)}; {@code keyed}: plain casts each with a fresh idempotency key
   * (one push transaction and one read of the key each).
   */
  Row casts(int consumeK, boolean plainCast, boolean keyed) {
    return casts(consumeK, plainCast, keyed, false);
  }

  /**
   * Like {@link #casts(int, boolean, boolean)}; {@code otelApi}: with the OpenTelemetry API and no
   * SDK, the runtime's default (every publish looks for a current span, every message asks the
   * tracer). Else {@code OpenTelemetry.noop()}, which runs exactly the runtime's path without the
   * API on the class path.
   */
  Row casts(int consumeK, boolean plainCast, boolean keyed, boolean otelApi) {
    String id =
        (keyed
                ? "cast-keyed-k" + consumeK
                : plainCast ? "cast-plain-k" + consumeK : "cast-k" + consumeK)
            + (otelApi ? "-otel-api" : "");
    AtomicLong keys = new AtomicLong();
    PushMeter pushes = new PushMeter();
    try (Bench bench = target.open(DEFAULT_MAX_WATCHES);
        DGen dgen =
            otelApi
                ? DGen.builder(bench.backend()).meterRegistry(pushes.registry).build()
                : DGen.builder(bench.backend())
                    .meterRegistry(pushes.registry)
                    .openTelemetry(OpenTelemetry.noop())
                    .build()) {
      Tenant tenant = dgen.tenant(bench.root(), id);
      Progress progress = new Progress();
      ServerRef<CounterServer.Msg> ref =
          dgen.start(
              new CounterServer(null, progress),
              null,
              StartOptions.builder(tenant).consumeK(consumeK).build());
      List<CounterServer.Msg> batch = Collections.nCopies(settings.castBatch(), ONE);
      Sender send =
          keyed
              ? (thread, seq) -> ref.cast(ONE, "order-" + keys.incrementAndGet()) ? 1 : 0
              : plainCast
                  ? (thread, seq) -> {
                    ref.cast(ONE);
                    return 1;
                  }
                  : (thread, seq) -> {
                    ref.castAll(batch);
                    return batch.size();
                  };
      long window = window(consumeK);
      publish(progress, send, settings.publishers(), window, settings.warmup(), false);
      Cost before = bench.cost();
      long pushed0 = pushes.transactions();
      long cpu0 = processCpuNanos();
      Published p = publishRounds(progress, send, settings.publishers(), window, plainCast);
      Cost cost = bench.cost().minus(before);
      // keyed casts push alone, outside the groups that plain casts share
      long pushTransactions = keyed ? p.pushes() : pushes.transactions() - pushed0;
      long cpu = processCpuNanos() - cpu0;
      long value = ref.priorityCall(new CounterServer.Get());
      if (value != progress.applied()) {
        throw new IllegalStateException(id + ": state " + value + " != " + progress.applied());
      }
      // after the measured interval: the hooks alone, timed in a loop (see TracingHooks)
      double hooks = otelApi ? TracingHooks.extraNanosPerMessage() : Double.NaN;
      String how =
          keyed ? "keyed cast" : plainCast ? "plain cast" : "castAll×" + settings.castBatch();
      return row(
          id,
          "cast K="
              + consumeK
              + ", "
              + settings.publishers()
              + " publishers, "
              + how
              + (otelApi ? ", OTel API, no SDK" : ""),
          p.messages(),
          p.elapsedNanos(),
          p.medianRate(),
          plainCast ? p.latencies().summarize() : null,
          cost,
          pushTransactions,
          cpu,
          otelApi ? Map.of("hooksNs", hooks) : Map.of(),
          join(
              otelApi
                  ? String.format(Locale.ROOT, "tracing hooks +%.0f ns/msg", hooks)
                  : plainCast ? "latency = one cast() (push tx)" : "",
              p.spread()));
    }
  }

  // ---------------------------------------------------------------- calls

  /**
   * Sequential calls to one server at {@code consumeK}, with their latency, split at the moment
   * {@code handleCall} ran: before it (push and wake-up of the consumer, or the inline
   * transaction's reads) and after it (commit, reply delivery).
   */
  <Q extends CounterServer.Msg & Call<Long>> Row calls(
      String id, String label, int consumeK, Q request, String note) {
    try (Bench bench = target.open(DEFAULT_MAX_WATCHES);
        DGen dgen = DGen.builder(bench.backend()).build()) {
      Tenant tenant = dgen.tenant(bench.root(), id);
      CounterServer server = new CounterServer(null, new Progress());
      ServerRef<CounterServer.Msg> ref =
          dgen.start(server, null, StartOptions.builder(tenant).consumeK(consumeK).build());
      long warmEnd = System.nanoTime() + settings.warmup().toNanos();
      while (System.nanoTime() < warmEnd) {
        ref.call(request, CALL_TIMEOUT);
      }
      Cost before = bench.cost();
      long cpu0 = processCpuNanos();
      Latencies latencies = new Latencies();
      Latencies toCallback = new Latencies();
      Latencies afterCallback = new Latencies();
      long start = System.nanoTime();
      long end = start + settings.measure().toNanos();
      long n = 0;
      long t0;
      while ((t0 = System.nanoTime()) < end) {
        ref.call(request, CALL_TIMEOUT);
        long t1 = System.nanoTime();
        long ran = server.lastCallNanos();
        latencies.add(t1 - t0);
        toCallback.add(ran - t0);
        afterCallback.add(t1 - ran);
        n++;
      }
      long elapsed = System.nanoTime() - start;
      Cost cost = bench.cost().minus(before);
      long cpu = processCpuNanos() - cpu0;
      // Caller-side writing transactions: an inline call that changes the state commits one; a
      // queued call commits its push (its reply is read without a commit; the read slots are
      // cleared a few milliseconds later, many to a transaction, counted with the consumers').
      long client;
      if (consumeK > 1) {
        client = n;
      } else {
        client = request instanceof CounterServer.Get ? 0 : n;
      }
      double before50 = toCallback.summarize().p50Micros();
      double after50 = afterCallback.summarize().p50Micros();
      Map<String, Double> metrics = new LinkedHashMap<>();
      metrics.put("toCallbackP50", before50);
      metrics.put("afterCallbackP50", after50);
      return row(
          id,
          label,
          n,
          elapsed,
          n * 1e9 / elapsed,
          latencies.summarize(),
          cost,
          client,
          cpu,
          metrics,
          String.format(
              Locale.ROOT, "%s; p50 %.0f µs to handleCall + %.0f after", note, before50, after50));
    }
  }

  // ---------------------------------------------------------------- many servers

  /** Casts to many servers at once: aggregate throughput of one {@link DGen}. */
  Row manyServers() {
    int n = settings.manyServers();
    int k = 16;
    PushMeter pushes = new PushMeter();
    try (Bench bench = target.open(DEFAULT_MAX_WATCHES);
        DGen dgen = DGen.builder(bench.backend()).meterRegistry(pushes.registry).build()) {
      Tenant tenant = dgen.tenant(bench.root(), "many");
      Progress progress = new Progress();
      StartOptions options = StartOptions.builder(tenant).consumeK(k).build();
      long t0 = System.nanoTime();
      List<ServerRef<CounterServer.Msg>> refs = new ArrayList<>(n);
      for (int i = 0; i < n; i++) {
        refs.add(dgen.start(new CounterServer(Tuple.from("counter", i), progress), null, options));
      }
      long startMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
      List<CounterServer.Msg> batch = Collections.nCopies(settings.castBatch(), ONE);
      int threads = settings.publishers();
      Sender send =
          (thread, seq) -> {
            refs.get((int) ((thread + (long) threads * seq) % n)).castAll(batch);
            return batch.size();
          };
      long window = Math.max(window(k), 2L * n * settings.castBatch());
      publish(progress, send, threads, window, settings.warmup(), false);
      Cost before = bench.cost();
      long pushed0 = pushes.transactions();
      long cpu0 = processCpuNanos();
      Published p = publishRounds(progress, send, threads, window, false);
      Cost cost = bench.cost().minus(before);
      long cpu = processCpuNanos() - cpu0;
      long pushTransactions = pushes.transactions() - pushed0;
      long total = 0;
      for (ServerRef<CounterServer.Msg> ref : refs) {
        total += ref.priorityCall(new CounterServer.Get());
      }
      if (total != progress.applied()) {
        throw new IllegalStateException("many servers: sum " + total + " != " + progress.applied());
      }
      return row(
          "servers",
          String.format(
              "%,d servers, K=%d, %d publishers, castAll×%d", n, k, threads, settings.castBatch()),
          p.messages(),
          p.elapsedNanos(),
          p.medianRate(),
          null,
          cost,
          pushTransactions,
          cpu,
          Map.of("startMs", (double) startMs),
          join(String.format("%,d started in %,d ms", n, startMs), p.spread()));
    }
  }

  // ---------------------------------------------------------------- a wide state

  /**
   * Casts that each change one field of a wide state, at {@code consumeK = 1}: the immutable shape
   * ({@link WideServer}) or the mutable one ({@link MutableWideServer}).
   */
  Row wideState(StateEncoding encoding, boolean mutable) {
    return wideState(
        "wide-" + (mutable ? "mutable-" : "") + encoding.name().toLowerCase(Locale.ROOT),
        encoding,
        settings.wideFields(),
        mutable,
        false);
  }

  /**
   * Casts that each change every field of the mutable wide state: the shape where a diff cannot
   * win, so the structured encoding should cost no more than the term encoding.
   */
  Row wideStateAllChanged(StateEncoding encoding) {
    return wideState(
        "wide-all-" + encoding.name().toLowerCase(Locale.ROOT),
        encoding,
        settings.wideFields(),
        true,
        true);
  }

  /**
   * Casts that each change one field of a state of {@code fields} fields, at {@code consumeK = 1}:
   * with one field, the baseline of what a wide state adds. Measured in three rounds; the row's
   * {@code cpuLeastMicros} is the least round's CPU per message and {@code callbackMicros} the CPU
   * per message of the same callbacks run alone in this JVM just before, so that {@link
   * Row#netCpuMicrosPerMessage} is the runtime's share.
   */
  Row wideState(String id, StateEncoding encoding, int fields, boolean mutable, boolean all) {
    Progress progress = new Progress();
    DGenServer<?, WideServer.Msg> server =
        mutable ? new MutableWideServer(fields, progress) : new WideServer(fields, progress);
    double callbackMicros = callbackAlone(server, fields, all);
    try (Bench bench = target.open(DEFAULT_MAX_WATCHES);
        DGen dgen = DGen.builder(bench.backend()).stateEncoding(encoding).build()) {
      Tenant tenant = dgen.tenant(bench.root(), id);
      Cost c0 = bench.cost();
      ServerRef<WideServer.Msg> ref =
          dgen.start(server, null, StartOptions.builder(tenant).build());
      long stateBytes = bench.cost().minus(c0).bytesWritten();
      // One sequence across warm-up and measurement, so that no cast rewrites a field with the
      // value it already has (an unchanged state writes nothing). Values are as long as the
      // initial ones, so that the state keeps its size.
      AtomicLong next = new AtomicLong();
      Sender send =
          (thread, seq) -> {
            ref.cast(change(next.getAndIncrement(), fields, all));
            return 1;
          };
      publish(progress, send, 1, 64, settings.warmup(), false);
      Cost before = bench.cost();
      long cpu0 = processCpuNanos();
      Published p = publishRounds(progress, send, 1, 64, false, WIDE_ROUNDS);
      Cost cost = bench.cost().minus(before);
      long cpu = processCpuNanos() - cpu0;
      String last = ref.priorityCall(new WideServer.Get(WideServer.field(0)));
      if (!last.startsWith("changed")) {
        throw new IllegalStateException(id + ": field0000 was never changed: " + last);
      }
      return row(
          id,
          String.format(
              "%s of %,d field%s changed, %s%s, K=1, plain cast",
              all ? "all" : "1",
              fields,
              fields == 1 ? "" : "s",
              mutable ? "HashMap copy, " : "",
              encoding.name()),
          p.messages(),
          p.elapsedNanos(),
          p.medianRate(),
          null,
          cost,
          p.pushes(),
          cpu,
          Map.of(
              "stateBytes",
              (double) stateBytes,
              "cpuLeastMicros",
              p.leastCpuMicros(),
              "callbackMicros",
              callbackMicros),
          join(
              String.format(
                  Locale.ROOT,
                  "whole state written at start: %,d B; callback alone %.1f µs",
                  stateBytes,
                  callbackMicros),
              p.spread()));
    }
  }

  /** The cast of the {@code n}th change: a field's value as long as its initial one. */
  private static WideServer.Msg change(long n, int fields, boolean all) {
    String value = String.format("changed %09d", n);
    return all
        ? new WideServer.PutAll(value)
        : new WideServer.Put(WideServer.field((int) (n % fields)), value);
  }

  /**
   * The CPU microseconds per message of the wide server's callback alone, without any runtime:
   * making the cast's message and applying it to the state, the least of {@link #WIDE_ROUNDS}
   * rounds (process CPU, as the rows count it, so garbage collection is included).
   */
  private <S> double callbackAlone(DGenServer<S, WideServer.Msg> server, int fields, boolean all) {
    try {
      return callbackAloneOrThrow(server, fields, all);
    } catch (Exception e) {
      throw new IllegalStateException("the wide server's callback failed", e);
    }
  }

  private <S> double callbackAloneOrThrow(
      DGenServer<S, WideServer.Msg> server, int fields, boolean all) throws Exception {
    S state = server.init(null).state();
    Duration each = settings.measure().dividedBy(WIDE_ROUNDS);
    long n = 0;
    double least = Double.POSITIVE_INFINITY;
    for (int round = -1; round < WIDE_ROUNDS; round++) {
      // round -1 warms the callback up, as the runtime's rows are warmed up
      long deadline = System.nanoTime() + (round < 0 ? settings.warmup() : each).toNanos();
      long cpu0 = processCpuNanos();
      long n0 = n;
      while (System.nanoTime() < deadline) {
        for (int i = 0; i < 64; i++) {
          state = server.handleCast(change(n++, fields, all), state).state();
        }
      }
      if (round >= 0) {
        least = Math.min(least, (processCpuNanos() - cpu0) / 1e3 / (n - n0));
      }
    }
    return least;
  }

  // ---------------------------------------------------------------- commit markers

  /**
   * {@link Settings#markerCasts} casts to one server at {@code consumeK = 1}, one consumer
   * transaction each: what its commit markers hold afterwards, in the store (keys and bytes under
   * the server's marker prefix) and in the heap (after GC, against before the casts: an upper bound
   * that includes whatever else the run left, such as the memory backend's recent versions).
   */
  Row markers() {
    int n = settings.markerCasts();
    try (Bench bench = target.open(DEFAULT_MAX_WATCHES);
        DGen dgen = DGen.builder(bench.backend()).openTelemetry(OpenTelemetry.noop()).build()) {
      Tenant tenant = dgen.tenant(bench.root(), "markers");
      Progress progress = new Progress();
      ServerRef<CounterServer.Msg> ref =
          dgen.start(
              new CounterServer(null, progress),
              null,
              StartOptions.builder(tenant).consumeK(1).build());
      double heapBefore = heapMbAfterGc();
      Cost before = bench.cost();
      long cpu0 = processCpuNanos();
      long t0 = System.nanoTime();
      List<CounterServer.Msg> batch = Collections.nCopies(settings.castBatch(), ONE);
      long window = 64L * settings.castBatch();
      long sent = 0;
      while (sent < n) {
        ref.castAll(batch);
        sent += batch.size();
        if (sent - progress.applied() > window) {
          progress.awaitAtLeast(sent - window, MARKER_WAIT);
        }
      }
      progress.awaitAtLeast(sent, MARKER_WAIT);
      long elapsed = System.nanoTime() - t0;
      long cpu = processCpuNanos() - cpu0;
      Cost cost = bench.cost().minus(before);
      double heapAfter = heapMbAfterGc();
      Subspace markers = tenant.subspace().subspace(ref.tuid()).subspace(Tuple.from("o"));
      long[] stored =
          bench
              .backend()
              .run(
                  tx -> {
                    long keys = 0;
                    long bytes = 0;
                    for (var kv : tx.getRange(markers.range().begin, markers.range().end)) {
                      keys++;
                      bytes += kv.key().length + kv.value().length;
                    }
                    return new long[] {keys, bytes};
                  });
      return row(
          "markers",
          String.format("%,d casts to one server, K=1: its commit markers after", sent),
          sent,
          elapsed,
          sent / (elapsed / 1e9),
          null,
          cost,
          sent / settings.castBatch(),
          cpu,
          Map.of(
              "markerKeys",
              (double) stored[0],
              "markerBytes",
              (double) stored[1],
              "heapAddedMb",
              heapAfter - heapBefore),
          String.format(
              Locale.ROOT,
              "%,d marker keys, %,d B stored; heap after GC %+.1f MB over before the casts",
              stored[0],
              stored[1],
              heapAfter - heapBefore));
    }
  }

  // ---------------------------------------------------------------- idle servers

  /**
   * Starts many servers and lets them go idle: live threads, heap after GC, and the time for an
   * idle server to wake up and apply a cast.
   */
  Row idleServers() {
    int n = settings.idleServers();
    long threadsBefore = liveThreads();
    double heapBefore = heapMbAfterGc();
    // The backend's default watch limit (10,000, like FoundationDB's): idle consumers hold no
    // watch of their own, only their tenant's doorbell does.
    try (Bench bench = target.open(DEFAULT_MAX_WATCHES);
        DGen dgen = DGen.builder(bench.backend()).build()) {
      Tenant tenant = dgen.tenant(bench.root(), "idle");
      Progress progress = new Progress();
      StartOptions options = StartOptions.builder(tenant).build();
      Cost before = bench.cost();
      long cpu0 = processCpuNanos();
      long t0 = System.nanoTime();
      List<ServerRef<CounterServer.Msg>> refs = new ArrayList<>(n);
      for (int i = 0; i < n; i++) {
        refs.add(dgen.start(new CounterServer(Tuple.from("idle", i), progress), null, options));
      }
      awaitIdle(bench, before, n);
      long elapsed = System.nanoTime() - t0;
      Cost cost = bench.cost().minus(before);
      long cpu = processCpuNanos() - cpu0;
      long threads = liveThreads();
      double heap = heapMbAfterGc();

      // The wake-up path is not part of the JIT warm-up: as many unrecorded wake-ups as recorded
      // ones come first.
      Latencies wake = new Latencies();
      SplittableRandom random = new SplittableRandom(7);
      for (int i = 0; i < 2 * settings.wakeSamples(); i++) {
        ServerRef<CounterServer.Msg> ref = refs.get(random.nextInt(n));
        long target = progress.applied() + 1;
        long sent = System.nanoTime();
        ref.cast(ONE);
        long woken = progress.awaitAtLeast(target, CALL_TIMEOUT) - sent;
        if (i >= settings.wakeSamples()) {
          wake.add(woken);
        }
      }
      Map<String, Double> metrics = new LinkedHashMap<>();
      metrics.put("threads", (double) threads);
      metrics.put("threadsAdded", (double) (threads - threadsBefore));
      metrics.put("heapMb", heap);
      metrics.put("heapAddedMb", heap - heapBefore);
      return row(
          "idle",
          String.format("%,d idle servers: start until all idle; wake-up = cast→applied", n),
          n,
          elapsed,
          n * 1e9 / elapsed,
          wake.summarize(),
          cost,
          n,
          cpu,
          metrics,
          String.format(
              "%d live threads (+%d), heap after GC %.0f MB (%+.0f)",
              threads, threads - threadsBefore, heap, heap - heapBefore));
    }
  }

  /**
   * Waits until {@code n} servers started since {@code before} have gone idle: each one's first
   * batch found its queue empty, a read-only commit.
   */
  static void awaitIdle(Bench bench, Cost before, int n) {
    long deadline = System.nanoTime() + DRAIN_TIMEOUT.toNanos();
    while (bench.cost().minus(before).readOnlyCommits() < n) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException(
            "idle servers: only "
                + bench.cost().minus(before).readOnlyCommits()
                + " of "
                + n
                + " went idle");
      }
      LockSupport.parkNanos(WINDOW_WAIT_NANOS);
    }
  }

  /**
   * CPU time of the whole process (every thread: the runtime's, the publishers', the JIT's and the
   * garbage collector's), or -1 if the JVM does not report it. In a VM whose host is busy this
   * grows too (the guest cannot tell time stolen from it), so it is no steadier than wall time; it
   * shows how many cores' worth of work a message costs. In nanoseconds, not the JDK's 10 ms ticks:
   * see {@link ProcessCpu}.
   */
  static long processCpuNanos() {
    return ProcessCpu.nanos();
  }

  static long liveThreads() {
    return ManagementFactory.getThreadMXBean().getThreadCount();
  }

  static double heapMbAfterGc() {
    System.gc();
    System.gc();
    return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed() / (1024.0 * 1024.0);
  }

  // ---------------------------------------------------------------- the publishing loop

  /** Sends one unit (a {@code castAll}, a {@code cast}, a task) and returns its message count. */
  @FunctionalInterface
  interface Sender {
    int send(int thread, long seq);
  }

  /**
   * What publishers sent and how long until it was applied; {@code rates} has each round's messages
   * per second, {@code cpuMicros} each round's process CPU microseconds per message.
   */
  private record Published(
      long messages,
      long pushes,
      long elapsedNanos,
      Latencies latencies,
      List<Double> rates,
      List<Double> cpuMicros) {

    /** The least CPU per message of the rounds: the round the shared machine disturbed least. */
    double leastCpuMicros() {
      return cpuMicros.stream().mapToDouble(Double::doubleValue).min().orElse(Double.NaN);
    }

    double medianRate() {
      List<Double> sorted = new ArrayList<>(rates);
      Collections.sort(sorted);
      int n = sorted.size();
      return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
    }

    /** The rounds' rates, for the table's note, when there were several. */
    String spread() {
      if (rates.size() < 2) {
        return "";
      }
      return rates.stream()
          .map(
              r ->
                  r >= 10_000
                      ? String.format(Locale.ROOT, "%.0fk", r / 1e3)
                      : String.format(Locale.ROOT, "%,.0f", r))
          .collect(Collectors.joining(" / ", "rounds ", "/s"));
    }
  }

  /**
   * Measures in {@link Settings#rounds} rounds of {@code measure / rounds} each: the counts and
   * latencies of all rounds together, and each round's rate.
   */
  private Published publishRounds(
      Progress progress, Sender sender, int threads, long window, boolean timeEach) {
    return publishRounds(progress, sender, threads, window, timeEach, settings.rounds());
  }

  private Published publishRounds(
      Progress progress, Sender sender, int threads, long window, boolean timeEach, int rounds) {
    Duration each = settings.measure().dividedBy(rounds);
    long messages = 0;
    long pushes = 0;
    long elapsed = 0;
    Latencies latencies = new Latencies();
    List<Double> rates = new ArrayList<>();
    List<Double> cpuMicros = new ArrayList<>();
    for (int r = 0; r < rounds; r++) {
      Published p = publish(progress, sender, threads, window, each, timeEach);
      messages += p.messages();
      pushes += p.pushes();
      elapsed += p.elapsedNanos();
      latencies.addAll(p.latencies());
      rates.addAll(p.rates());
      cpuMicros.addAll(p.cpuMicros());
    }
    return new Published(messages, pushes, elapsed, latencies, rates, cpuMicros);
  }

  /**
   * Enough queued messages for several full batches (at least 1,024), yet few enough that draining
   * them at the end adds little to a run.
   */
  private static long window(int consumeK) {
    return Math.max(1_024, 8L * consumeK);
  }

  /**
   * Runs {@code threads} publishers for {@code duration}, then waits until everything they sent is
   * applied. The interval runs from the publishers' start to the last message applied.
   */
  private static Published publish(
      Progress progress,
      Sender sender,
      int threads,
      long window,
      Duration duration,
      boolean timeEach) {
    long base = progress.applied();
    AtomicLong published = new AtomicLong();
    AtomicLong pushes = new AtomicLong();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    Latencies[] latencies = new Latencies[threads];
    Thread[] workers = new Thread[threads];
    long cpu0 = processCpuNanos();
    long start = System.nanoTime();
    long deadline = start + duration.toNanos();
    for (int t = 0; t < threads; t++) {
      int thread = t;
      latencies[t] = new Latencies();
      workers[t] =
          new Thread(
              () -> {
                try {
                  long seq = 0;
                  while (System.nanoTime() < deadline) {
                    if (published.get() - (progress.applied() - base) > window) {
                      LockSupport.parkNanos(WINDOW_WAIT_NANOS);
                      continue;
                    }
                    long t0 = timeEach ? System.nanoTime() : 0;
                    int sent = sender.send(thread, seq++);
                    if (timeEach) {
                      latencies[thread].add(System.nanoTime() - t0);
                    }
                    published.addAndGet(sent);
                    pushes.incrementAndGet();
                  }
                } catch (Throwable e) {
                  failure.compareAndSet(null, e);
                }
              },
              "bench-publisher-" + t);
      workers[t].setDaemon(true);
      workers[t].start();
    }
    for (Thread w : workers) {
      try {
        w.join();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted", e);
      }
    }
    if (failure.get() != null) {
      throw new IllegalStateException("a publisher failed", failure.get());
    }
    long end = progress.awaitAtLeast(base + published.get(), DRAIN_TIMEOUT);
    long cpu = processCpuNanos() - cpu0;
    Latencies all = new Latencies();
    for (Latencies l : latencies) {
      all.addAll(l);
    }
    long elapsed = end - start;
    return new Published(
        published.get(),
        pushes.get(),
        elapsed,
        all,
        List.of(published.get() * 1e9 / elapsed),
        List.of(cpu / 1e3 / published.get()));
  }

  private static String join(String a, String b) {
    return a.isEmpty() ? b : b.isEmpty() ? a : a + "; " + b;
  }

  static Row row(
      String id,
      String label,
      long messages,
      long elapsedNanos,
      double opsPerSecond,
      Latencies.@Nullable Summary latency,
      @Nullable Cost cost,
      long clientTransactions,
      long cpuNanos,
      Map<String, Double> metrics,
      String note) {
    return new Row(
        id,
        label,
        messages,
        elapsedNanos / 1e9,
        opsPerSecond,
        latency == null ? Double.NaN : latency.p50Micros(),
        latency == null ? Double.NaN : latency.p99Micros(),
        cost,
        clientTransactions,
        cpuNanos,
        metrics,
        note);
  }
}
