package io.dgen.internal.hosting;

import io.dgen.backend.Backend;
import io.dgen.backend.Futures;
import io.dgen.internal.codec.PlacementRecords.Member;
import io.dgen.internal.keys.TenantKeys;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * This runtime's membership in one tenant's placement ({@code Placement}): its heartbeat, which
 * rewrites its member record, and what it observes of the other members — which are live, and which
 * are dead long enough for their records to be deleted.
 *
 * <ul>
 *   <li><b>Heartbeat</b> ({@link #beat}): a blind rewrite of the member record {@code FF (9,
 *       memberId)} with the next counter value.
 *   <li><b>Liveness</b> ({@link #observe}): another member is live while its counter changed within
 *       its lease duration on this runtime's own monotonic clock (a first sighting counts as a
 *       change). No two clocks are compared.
 * </ul>
 *
 * <p>Never reads or writes leases. Threading: {@link #observe} and {@link #forgetDead} run on the
 * placement's thread only; {@link #beat} and {@link #isLive} from any thread.
 */
final class Membership {

  private static final Logger log = LoggerFactory.getLogger(Membership.class);

  /** What this runtime saw of a member: its counter, and when that last changed here. */
  private record Seen(long heartbeat, long changedAtNanos) {}

  private final Backend backend;
  private final TenantKeys keys;
  private final UUID me;
  private final long leaseNanos;
  private final long startedAtMillis;
  private final Set<String> kinds;
  private final BooleanSupplier closed;
  private final String context;

  // touched on the placement's thread only
  private final Map<UUID, Seen> seen = new HashMap<>();

  /** The members the last round found live (this one included), for any thread to ask. */
  private volatile Set<UUID> liveMembers = Set.of();

  private final AtomicLong heartbeat = new AtomicLong();
  private final AtomicBoolean beating = new AtomicBoolean();
  private final AtomicBoolean beatAgain = new AtomicBoolean();
  private volatile boolean warnedBeat;

  /**
   * @param kinds the kinds this member hosts, as they change: each heartbeat writes them
   * @param closed whether the placement was left: no heartbeat is written then
   */
  Membership(
      Backend backend,
      TenantKeys keys,
      UUID me,
      Duration lease,
      long startedAtMillis,
      Set<String> kinds,
      BooleanSupplier closed,
      String context) {
    this.backend = backend;
    this.keys = keys;
    this.me = me;
    this.leaseNanos = lease.toNanos();
    this.startedAtMillis = startedAtMillis;
    this.kinds = kinds;
    this.closed = closed;
    this.context = context;
  }

  /**
   * Whether the last round found {@code member} live: its record exists and its heartbeat changed
   * within its lease on this runtime's clock, the test by which its buckets are taken. Any thread.
   */
  boolean isLive(UUID member) {
    return liveMembers.contains(member);
  }

  /**
   * Rewrites this member's record with the next counter: a blind write, nothing else renewed, and
   * no thread waits for it. Skipped while the previous one is still under way, so that a slow
   * cluster cannot pile them up, nor commit an older counter after a newer one.
   *
   * @return a future that completes (never exceptionally) once the write committed or failed
   */
  CompletableFuture<Void> beat() {
    if (closed.getAsBoolean()) {
      return CompletableFuture.completedFuture(null);
    }
    if (!beating.compareAndSet(false, true)) {
      beatAgain.set(true); // the one in flight may have read the kinds before a change
      return CompletableFuture.completedFuture(null);
    }
    beatAgain.set(false);
    Member record =
        new Member(
            me,
            heartbeat.incrementAndGet(),
            TimeUnit.NANOSECONDS.toMillis(leaseNanos),
            startedAtMillis,
            host(),
            ProcessHandle.current().pid(),
            List.copyOf(new TreeSet<>(kinds)));
    CompletableFuture<Void> write;
    try {
      write =
          backend.runAsync(
              tx -> {
                tx.set(keys.member(me), record.encode());
                return CompletableFuture.completedFuture(null);
              });
    } catch (RuntimeException e) {
      write = CompletableFuture.failedFuture(e);
    }
    return write.handle(
        (done, e) -> {
          beating.set(false);
          if (beatAgain.get()) {
            beat(); // asked for while this one was in flight: the record it wrote may be stale
          }
          if (e == null) {
            warnedBeat = false;
          } else if (!warnedBeat) {
            warnedBeat = true;
            log.warn(
                "heartbeat failed; others may take this runtime's leases: {}",
                context,
                Futures.unwrap(e));
          }
          return null;
        });
  }

  private static String host() {
    try {
      return java.net.InetAddress.getLocalHost().getHostName();
    } catch (java.io.IOException | SecurityException e) {
      return "unknown";
    }
  }

  /** Records what changed since the last round; returns the live members, this one included. */
  Map<UUID, Member> observe(Map<UUID, Member> members, long now) {
    Map<UUID, Member> live = new HashMap<>();
    for (Member m : members.values()) {
      Seen s = seen.get(m.id());
      if (s == null || s.heartbeat() != m.heartbeat()) {
        s = new Seen(m.heartbeat(), now);
        seen.put(m.id(), s);
      }
      if (m.id().equals(me)
          || now - s.changedAtNanos() < TimeUnit.MILLISECONDS.toNanos(m.leaseMillis())) {
        live.put(m.id(), m);
      }
    }
    seen.keySet().retainAll(members.keySet());
    live.putIfAbsent(
        me, new Member(me, heartbeat.get(), 0, startedAtMillis, "", 0, List.copyOf(kinds)));
    liveMembers = Set.copyOf(live.keySet());
    return live;
  }

  /**
   * Deletes the records of members dead for twice their lease, if they have not beaten since (a
   * serializable read of the record: a late beat makes the delete conflict).
   */
  void forgetDead(Map<UUID, Member> members, long now) {
    for (Member m : members.values()) {
      Seen s = seen.get(m.id());
      if (m.id().equals(me)
          || s == null
          || now - s.changedAtNanos() < 2 * TimeUnit.MILLISECONDS.toNanos(m.leaseMillis())) {
        continue;
      }
      try {
        backend.run(
            tx -> {
              byte[] v = tx.get(keys.member(m.id()));
              if (v != null && Member.decode(m.id(), v).heartbeat() == m.heartbeat()) {
                tx.clear(keys.member(m.id()));
              }
              return null;
            });
        log.info("removed the record of member {}, dead for twice its lease: {}", m.id(), context);
      } catch (RuntimeException e) {
        log.debug("removing a dead member's record failed: {}", context, e);
      }
    }
  }
}
