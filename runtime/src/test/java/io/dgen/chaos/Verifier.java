package io.dgen.chaos;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.Tenant;
import io.dgen.admin.ServerAdmin;
import io.dgen.admin.TenantAdmin;
import io.dgen.backend.Backend;
import io.dgen.backend.KeyValue;
import io.dgen.chaos.Journal.Line;
import io.dgen.chaos.Journal.Outcome;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import tools.jackson.databind.JsonNode;

/**
 * Checks the invariants of a chaos run once everything has settled, from the clients' journals and
 * what the cluster holds: the applications counted next to the servers ({@link ChaosServer}), the
 * servers' states, dead letters, locks, timers and queues.
 *
 * <p>The invariants, each reported with the ids that break it:
 *
 * <ol>
 *   <li><b>conserved</b>: the balances add up to what the servers started with, and every transfer
 *       that debited was credited exactly once (and no other);
 *   <li><b>cast exactly once</b>: an acknowledged cast (plain, {@code castAll}, transfer, probe)
 *       was applied exactly once; an unacknowledged one at most once; a {@code castAll} all or
 *       nothing;
 *   <li><b>keyed exactly once</b>: every keyed cast, keyed call and keyed lock-mode message was
 *       applied exactly once, however often the client retried it, and finished;
 *   <li><b>atomic exactly once</b>: an acknowledged atomic transfer was applied exactly once, an
 *       unacknowledged one at most once, its debit and credit together (else: not conserved);
 *   <li><b>call at most once</b>: a call answered was answered with its own id and applied once;
 *       one that timed out or failed was applied at most once;
 *   <li><b>calls end by their timeout</b>: no call (plain or keyed) was still unanswered and not
 *       failed {@link Workload#OVERRUN} after its timeout;
 *   <li><b>timer exactly once</b>: a stored timer not cancelled fired exactly once, a cancelled one
 *       never, none twice;
 *   <li><b>no lock left</b>: no server is locked at the end (a dead holder's lock was busted);
 *   <li><b>dead letters only for poison</b>: every dead letter is a poison message, each poison
 *       acknowledged is dead-lettered exactly once, and nothing else is;
 *   <li><b>settled</b>: queues empty, no timer pending;
 *   <li><b>nothing invented</b>: everything applied was sent by some client.
 * </ol>
 */
final class Verifier {

  /** The verdict: violations by invariant (empty if all hold), and counts for the report. */
  record Verdict(Map<String, List<String>> violations, Map<String, Long> counts) {
    boolean holds() {
      return violations.values().stream().allMatch(List::isEmpty);
    }
  }

  static final List<String> INVARIANTS =
      List.of(
          "conserved",
          "cast exactly once",
          "keyed exactly once",
          "atomic exactly once",
          "call at most once",
          "calls end by their timeout",
          "timer exactly once",
          "no lock left",
          "dead letters only for poison",
          "settled",
          "nothing invented");

  private static final int PAGE = 5_000;
  private static final int SHOWN = 20;

  private final Backend backend;
  private final Tenant tenant;
  private final TenantAdmin admin;
  private final Map<String, List<String>> violations = new LinkedHashMap<>();
  private final Map<String, Long> counts = new TreeMap<>();

  Verifier(Backend backend, Tenant tenant, TenantAdmin admin) {
    this.backend = backend;
    this.tenant = tenant;
    this.admin = admin;
    INVARIANTS.forEach(i -> violations.put(i, new ArrayList<>()));
  }

  /** One operation as the journals tell it: what was sent, and the last outcome seen. */
  private static final class Sent {
    final String op;
    final String id;
    final int server;
    final String detail;
    int sends;
    Outcome outcome;
    String outcomeDetail = "";
    String cancel;

    Sent(Line s) {
      this.op = s.field(0);
      this.id = s.id();
      this.server = Integer.parseInt(s.field(1));
      this.detail = s.field(2);
    }
  }

  Verdict verify(List<Line> journal) {
    Map<String, Sent> sent = new LinkedHashMap<>();
    for (Line l : journal) {
      switch (l.kind()) {
        case "S" -> sent.computeIfAbsent(l.id(), id -> new Sent(l)).sends++;
        case "R" -> {
          Sent s = sent.get(l.id());
          if (s != null) {
            s.outcome = Outcome.valueOf(l.field(0));
            s.outcomeDetail = l.field(1);
          }
        }
        case "C" -> {
          Sent s = sent.get(l.id());
          if (s != null) {
            s.cancel = l.field(0);
          }
        }
        case "E" -> {
          counts.merge("event " + l.field(0), 1L, Long::sum);
          if (l.field(0).equals(Workload.OVERRAN)) {
            fail(
                "calls end by their timeout",
                l.id() + " unanswered " + Workload.OVERRUN.toSeconds() + " s past its timeout");
          }
        }
        case "M" -> {
          // the clients' meters, for the report
        }
        default -> throw new IllegalStateException("unknown journal line " + l);
      }
    }
    Map<String, Long> applied = counters(ChaosServer.APPLIED);
    Map<String, Long> debited = counters(ChaosServer.DEBITED);
    Map<String, Long> lockedRuns = counters(ChaosServer.LOCKED_RUNS);
    Map<String, String> deadLetters = new HashMap<>();
    long balance = 0;
    for (int i = 0; i < ChaosServers.COUNT; i++) {
      Optional<ServerAdmin> found = server(admin, i);
      if (found.isEmpty()) {
        balance += ChaosServer.INITIAL_BALANCE;
        continue;
      }
      ServerAdmin server = found.get();
      JsonNode state = server.state().orElseThrow();
      balance += state.path("balance").asLong();
      for (JsonNode id : state.path("worked")) {
        applied.merge(id.asString(), 1L, Long::sum); // committed work not yet moved to a counter
      }
      server.lock().ifPresent(l -> fail("no lock left", server.tuid() + " locked by " + l));
      if (server.queueLength() != 0) {
        fail("settled", server.tuid() + " queue length " + server.queueLength());
      }
      server.timers().forEach(t -> fail("settled", server.tuid() + " timer pending " + t));
      for (ServerAdmin.DeadLetterEntry d : server.deadLetters()) {
        JsonNode message = d.item().message();
        String id = message == null ? "?" : message.path("id").asString();
        // by what the client sent: a hosted kind's items name their type by its index in the
        // kind's type table ("#2"), not by class
        String type = String.valueOf(d.item().type());
        Sent s = sent.get(id);
        if (s == null || !s.op.equals("POISON")) {
          fail(
              "dead letters only for poison",
              id
                  + " ("
                  + (s == null ? "never sent" : s.op)
                  + ", type "
                  + type
                  + ": "
                  + d.error()
                  + ")");
        }
        if (deadLetters.put(id, type) != null) {
          fail("dead letters only for poison", id + " dead-lettered twice");
        }
      }
    }
    counts.put("dead letters", (long) deadLetters.size());
    long expected = ChaosServers.COUNT * ChaosServer.INITIAL_BALANCE;
    if (balance != expected) {
      fail("conserved", "balances add up to " + balance + ", not " + expected);
    }

    for (Sent s : sent.values()) {
      counts.merge("op " + s.op + " " + s.outcome, 1L, Long::sum);
      long n = applied.getOrDefault(s.id, 0L);
      boolean acked = s.outcome == Outcome.OK;
      switch (s.op) {
        case "CAST", "PROBE" -> exactlyOnceIfAcked("cast exactly once", s, n);
        case "CAST_ALL" -> {
          List<Long> each =
              Arrays.stream(s.detail.split(",")).map(id -> applied.getOrDefault(id, 0L)).toList();
          if (each.stream().distinct().count() > 1) {
            fail("cast exactly once", s.id + " castAll applied partly: " + each);
          }
          exactlyOnceIfAcked("cast exactly once", s, each.get(0));
        }
        case "TRANSFER" -> {
          exactlyOnceIfAcked("cast exactly once", s, n);
          long credited = applied.getOrDefault(s.id + "/credit", 0L);
          long wasDebited = debited.getOrDefault(s.id, 0L);
          if (credited != wasDebited) {
            fail("conserved", s.id + " debited " + wasDebited + " credited " + credited);
          }
        }
        case "ATOMIC" -> {
          long given = applied.getOrDefault(s.id + "/credit", 0L);
          if (given != n) {
            fail("conserved", s.id + " atomic transfer took " + n + " and gave " + given);
          }
          if (acked ? n != 1 : n > 1) {
            fail("atomic exactly once", s.id + " " + s.outcome + " applied " + n);
          }
        }
        case "KEYED_CAST", "KEYED_CALL", "WORK" -> {
          if (n != 1 || !acked) {
            fail(
                "keyed exactly once",
                s.id
                    + " "
                    + s.op
                    + " applied "
                    + n
                    + ", outcome "
                    + s.outcome
                    + " "
                    + s.outcomeDetail);
          }
          if (s.op.equals("WORK") && lockedRuns.getOrDefault(s.id, 0L) < 1) {
            fail("keyed exactly once", s.id + " WORK applied without handleLocked running");
          }
          if (s.outcomeDetail.contains("attempts=") && !s.outcomeDetail.endsWith("attempts=1")) {
            counts.merge("keyed retried", 1L, Long::sum);
          }
          if (s.sends > 1) {
            counts.merge("keyed resumed by a later generation", 1L, Long::sum);
          }
        }
        case "CALL" -> {
          if (s.outcome == Outcome.WRONG) {
            fail("call at most once", s.id + " answered " + s.outcomeDetail);
          } else if (acked ? n != 1 : n > 1) {
            fail("call at most once", s.id + " " + s.outcome + " applied " + n);
          }
        }
        case "TIMER" -> timer(s, n);
        case Workload.RAW -> {
          // the backend's own transactions, for the recovery measurement
        }
        case "POISON" -> {
          boolean dead = deadLetters.containsKey(s.id);
          if (n != 0 || (acked && !dead)) {
            fail("dead letters only for poison", s.id + " poison applied " + n + ", dead " + dead);
          }
        }
        default -> throw new IllegalStateException("unknown op " + s.op);
      }
    }
    lockedRuns.values().stream()
        .filter(v -> v > 1)
        .forEach(v -> counts.merge("handleLocked ran again (busted lock)", 1L, Long::sum));
    Set<String> known = new java.util.HashSet<>(sent.keySet());
    sent.values().stream()
        .filter(s -> s.op.equals("CAST_ALL"))
        .forEach(s -> known.addAll(Arrays.asList(s.detail.split(","))));
    for (String id : applied.keySet()) {
      String base = id.endsWith("/credit") ? id.substring(0, id.length() - 7) : id;
      if (!known.contains(base)) {
        fail("nothing invented", id + " applied " + applied.get(id) + " times, never sent");
      }
    }
    deadLetters.keySet().stream()
        .filter(id -> !known.contains(id))
        .forEach(id -> fail("nothing invented", id + " dead-lettered, never sent"));
    counts.put("applications counted", applied.values().stream().mapToLong(Long::longValue).sum());
    Map<String, List<String>> shown = new LinkedHashMap<>();
    violations.forEach(
        (k, v) ->
            shown.put(
                k,
                v.size() <= SHOWN
                    ? List.copyOf(v)
                    : concat(v.subList(0, SHOWN), "... and " + (v.size() - SHOWN) + " more")));
    return new Verdict(shown, Map.copyOf(counts));
  }

  /** Whether every server's queue is empty, its lock free and no timer of it pending. */
  static boolean settled(TenantAdmin admin) {
    for (int i = 0; i < ChaosServers.COUNT; i++) {
      Optional<ServerAdmin> found = server(admin, i);
      if (found.isEmpty()) {
        continue;
      }
      ServerAdmin s = found.get();
      if (s.queueLength() != 0 || s.lock().isPresent() || !s.timers().isEmpty()) {
        return false;
      }
    }
    return true;
  }

  /**
   * Server {@code index}, or empty for a hosted server that no message created (its balance is the
   * initial one, it has nothing to settle).
   *
   * @throws java.util.NoSuchElementException if a started server is missing
   */
  private static Optional<ServerAdmin> server(TenantAdmin admin, int index) {
    Optional<ServerAdmin> found = admin.server(ChaosServers.tuid(index));
    if (found.isEmpty() && !ChaosServers.hosted(index)) {
      throw new java.util.NoSuchElementException(
          "started server " + ChaosServers.tuid(index) + " is missing");
    }
    return found;
  }

  private void exactlyOnceIfAcked(String invariant, Sent s, long n) {
    if (s.outcome == Outcome.OK ? n != 1 : n > 1) {
      fail(invariant, s.id + " " + s.op + " " + s.outcome + " applied " + n);
    }
  }

  private void timer(Sent s, long n) {
    if (s.outcome != Outcome.OK) {
      if (n > 1) {
        fail("timer exactly once", s.id + " " + s.outcome + " fired " + n);
      }
      return;
    }
    boolean cancelPlanned = !s.detail.endsWith(":-1");
    if ("true".equals(s.cancel) ? n != 0 : "false".equals(s.cancel) ? n != 1 : n > 1) {
      fail("timer exactly once", s.id + " cancel=" + s.cancel + " fired " + n);
    } else if (s.cancel == null && !cancelPlanned && n != 1) {
      fail("timer exactly once", s.id + " never cancelled, fired " + n);
    }
    counts.merge("timers cancelled " + s.cancel, 1L, Long::sum);
  }

  private void fail(String invariant, String what) {
    violations.get(invariant).add(what);
  }

  /** Every counter {@code (kind, id)} in the tenant, by id, paged. */
  private Map<String, Long> counters(String kind) {
    Map<String, Long> out = new HashMap<>();
    byte[] begin = tenant.subspace().range(Tuple.from(kind)).begin;
    byte[] end = tenant.subspace().range(Tuple.from(kind)).end;
    while (true) {
      byte[] from = begin;
      List<KeyValue> page = backend.run(tx -> tx.getRange(from, end, PAGE, false));
      for (KeyValue kv : page) {
        String id = tenant.subspace().unpack(kv.key()).getString(1);
        out.put(id, ByteBuffer.wrap(kv.value()).order(ByteOrder.LITTLE_ENDIAN).getLong());
      }
      if (page.size() < PAGE) {
        return out;
      }
      byte[] last = page.get(page.size() - 1).key();
      begin = Arrays.copyOf(last, last.length + 1);
    }
  }

  private static List<String> concat(List<String> list, String more) {
    List<String> out = new ArrayList<>(list);
    out.add(more);
    return out;
  }
}
