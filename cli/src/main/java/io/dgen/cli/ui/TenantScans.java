package io.dgen.cli.ui;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.admin.DGenAdmin;
import io.dgen.admin.TenantAdmin;
import io.dgen.admin.TenantAdmin.ServerSummary;
import io.dgen.admin.Tuids;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * Background scans of whole tenants: what no single request may do. A tenant's totals (servers,
 * queue depth), its ranking by queue depth and by the age of the oldest queued item, and the points
 * of its live chart all need every server's counters; a scan reads them in pages of {@value #CHUNK}
 * servers, one snapshot transaction each, on one thread for the whole dashboard, and stops at
 * {@code cap} servers.
 *
 * <p>A scan is requested by a page that shows its results: it starts if the tenant's last scan is
 * older than {@code freshness} and none is queued or running. A tenant someone watches live (its
 * data polled within the last {@value #WATCH_SECONDS} seconds) is scanned again and again, each
 * scan starting at least {@code interval}, and at least as long as the previous scan took, after it
 * ended, so scanning takes at most half of the scan thread's time. Results are kept per tenant: the
 * last finished scan (its top {@code top} servers by depth and by the age of the oldest item), the
 * progress of the running one, and the points of the last {@value #HISTORY_MINUTES} minutes.
 *
 * <p>A scan is not a snapshot of the tenant: each page is read at its own read version, so totals
 * of a busy tenant are approximate. Only reads: the scans never write.
 *
 * <p>Thread-safe; {@link #close} stops the scan thread.
 */
final class TenantScans implements AutoCloseable {

  /** Servers per scan transaction. */
  static final int CHUNK = 500;

  static final int WATCH_SECONDS = 30;

  static final int HISTORY_MINUTES = 15;

  /**
   * One point of a tenant's history: a finished scan.
   *
   * @param at when it finished
   * @param depth the total queue depth
   * @param pushed the total of the push counters
   * @param popped the total of the pop counters
   */
  record Point(Instant at, long depth, long pushed, long popped) {}

  /**
   * A finished scan.
   *
   * @param started when it started
   * @param took how long it took
   * @param servers how many servers it read
   * @param capped whether it stopped at the cap (more servers exist)
   * @param depth the total queue depth of the servers it read
   * @param pushed the total of their push counters
   * @param popped the total of their pop counters
   * @param byDepth the deepest queues, deepest first (at most {@code top})
   * @param byAge the servers whose oldest items are oldest, oldest first (at most {@code top})
   */
  record Result(
      Instant started,
      Duration took,
      long servers,
      boolean capped,
      long depth,
      long pushed,
      long popped,
      List<ServerSummary> byDepth,
      List<ServerSummary> byAge) {

    Instant finished() {
      return started.plus(took);
    }
  }

  /**
   * What is known of a tenant: the last result, the running scan's progress, the history.
   *
   * @param last the last finished scan, or null
   * @param running servers read so far by the running scan, or -1 if none runs
   * @param queued whether a scan waits for the scan thread
   * @param history the points of the last minutes, oldest first
   * @param error the last scan's failure, or null
   */
  record View(
      @Nullable Result last,
      long running,
      boolean queued,
      List<Point> history,
      @Nullable String error) {

    boolean busy() {
      return running >= 0 || queued;
    }
  }

  private static final Comparator<ServerSummary> DEEPEST =
      Comparator.comparingLong(ServerSummary::queueLength).reversed();

  private static final Comparator<ServerSummary> OLDEST_ITEM =
      Comparator.comparingLong(s -> s.oldestVersion().orElse(Long.MAX_VALUE));

  /** One tenant's state; guarded by itself. */
  private static final class Tenant {
    @Nullable Result last;
    long running = -1;
    boolean queued;
    final Deque<Point> history = new ArrayDeque<>();
    @Nullable String error;
    Instant watchedAt = Instant.EPOCH;
  }

  private final DGenAdmin admin;
  private final VersionClock versions;
  private final Clock clock;
  private final int cap;
  private final int top;
  private final Duration freshness;
  private final Duration interval;
  private final Map<List<String>, Tenant> tenants = new ConcurrentHashMap<>();
  private final ScheduledExecutorService thread =
      Executors.newSingleThreadScheduledExecutor(
          r -> {
            Thread t = new Thread(r, "dgen-ui-scan");
            t.setDaemon(true);
            return t;
          });

  /**
   * @param cap the most servers one scan reads
   * @param top how many servers each ranking keeps
   * @param freshness how old a result may be before a page showing it asks for a new one
   * @param interval the least time between two scans of a watched tenant
   */
  TenantScans(
      DGenAdmin admin,
      VersionClock versions,
      Clock clock,
      int cap,
      int top,
      Duration freshness,
      Duration interval) {
    this.admin = admin;
    this.versions = versions;
    this.clock = clock;
    this.cap = cap;
    this.top = top;
    this.freshness = freshness;
    this.interval = interval;
  }

  int cap() {
    return cap;
  }

  int top() {
    return top;
  }

  /** What is known of {@code tenant}; asks for a scan if the last result is stale. */
  View view(List<String> tenant) {
    Tenant t = tenants.computeIfAbsent(List.copyOf(tenant), k -> new Tenant());
    synchronized (t) {
      Instant now = clock.instant();
      boolean stale = t.last == null || t.last.finished().plus(freshness).isBefore(now);
      if (stale && t.running < 0 && !t.queued) {
        schedule(tenant, t, Duration.ZERO);
      }
      return new View(t.last, t.running, t.queued, List.copyOf(t.history), t.error);
    }
  }

  /** Marks {@code tenant} as watched live: it is scanned repeatedly while this is called. */
  View watch(List<String> tenant) {
    Tenant t = tenants.computeIfAbsent(List.copyOf(tenant), k -> new Tenant());
    synchronized (t) {
      t.watchedAt = clock.instant();
    }
    return view(tenant);
  }

  private void schedule(List<String> path, Tenant t, Duration delay) {
    t.queued = true;
    thread.schedule(() -> scan(path, t), delay.toMillis(), TimeUnit.MILLISECONDS);
  }

  private void scan(List<String> path, Tenant t) {
    Instant started = clock.instant();
    synchronized (t) {
      t.queued = false;
      t.running = 0;
    }
    try {
      Result r = run(path, t, started);
      Instant end = r.finished();
      synchronized (t) {
        t.last = r;
        t.error = null;
        t.history.addLast(new Point(end, r.depth(), r.pushed(), r.popped()));
        while (!t.history.isEmpty()
            && t.history
                .peekFirst()
                .at()
                .isBefore(end.minus(Duration.ofMinutes(HISTORY_MINUTES)))) {
          t.history.removeFirst();
        }
      }
    } catch (RuntimeException e) {
      synchronized (t) {
        t.error = String.valueOf(e.getMessage());
      }
    } finally {
      synchronized (t) {
        t.running = -1;
        Instant now = clock.instant();
        boolean watched = t.watchedAt.plusSeconds(WATCH_SECONDS).isAfter(now);
        if (watched && !t.queued && !thread.isShutdown()) {
          Duration took = Duration.between(started, now);
          schedule(path, t, took.compareTo(interval) > 0 ? took : interval);
        }
      }
    }
  }

  private Result run(List<String> path, Tenant t, Instant started) {
    TenantAdmin tenant = admin.tenant(path.toArray(String[]::new)).orElse(null);
    PriorityQueue<ServerSummary> deepest = new PriorityQueue<>(DEEPEST.reversed());
    PriorityQueue<ServerSummary> oldest = new PriorityQueue<>(OLDEST_ITEM.reversed());
    long servers = 0;
    long depth = 0;
    long pushed = 0;
    long popped = 0;
    boolean capped = false;
    Tuple after = null;
    while (tenant != null) {
      if (Thread.currentThread().isInterrupted()) {
        throw new IllegalStateException("the dashboard is closing");
      }
      int limit = (int) Math.min(CHUNK, cap - servers);
      Instant before = clock.instant();
      TenantAdmin.SummaryPage page = tenant.summaries(Tuids.Prefix.ALL, after, limit);
      Instant read = clock.instant();
      for (ServerSummary s : page.servers()) {
        versions.record(s.readVersion(), before, read);
        servers++;
        depth += s.queueLength();
        pushed += s.pushed();
        popped += s.popped();
        keep(deepest, s);
        if (s.oldestVersion().isPresent()) {
          keep(oldest, s);
        }
      }
      synchronized (t) {
        t.running = servers;
      }
      after = page.next();
      if (after == null) {
        break;
      }
      if (servers >= cap) {
        capped = true;
        break;
      }
    }
    List<ServerSummary> byDepth = new ArrayList<>(deepest);
    byDepth.sort(DEEPEST);
    List<ServerSummary> byAge = new ArrayList<>(oldest);
    byAge.sort(OLDEST_ITEM);
    return new Result(
        started,
        Duration.between(started, clock.instant()),
        servers,
        capped,
        depth,
        pushed,
        popped,
        byDepth,
        byAge);
  }

  /**
   * Adds {@code s} to a ranking heap (whose head is its worst entry), keeping the best {@code top}.
   */
  private void keep(PriorityQueue<ServerSummary> heap, ServerSummary s) {
    heap.add(s);
    if (heap.size() > top) {
      heap.poll();
    }
  }

  @Override
  public void close() {
    thread.shutdownNow();
  }
}
