package io.dgen.admin;

import static io.dgen.admin.AdminRecords.checkLimit;

import com.apple.foundationdb.subspace.Subspace;
import com.apple.foundationdb.tuple.Tuple;
import com.apple.foundationdb.tuple.Versionstamp;
import io.dgen.OperationTimeoutException;
import io.dgen.backend.Backend;
import io.dgen.backend.Futures;
import io.dgen.backend.KeyValue;
import io.dgen.backend.ReadTransaction;
import io.dgen.backend.Transaction;
import io.dgen.internal.base.OperationTimeouts;
import io.dgen.internal.codec.LockRecord;
import io.dgen.internal.codec.Serde;
import io.dgen.internal.codec.StoredState;
import io.dgen.internal.codec.StructuredStateCodec;
import io.dgen.internal.keys.ServerEntry;
import io.dgen.internal.keys.ServerKeys;
import io.dgen.internal.keys.StuckRecord;
import io.dgen.internal.keys.TenantKeys;
import io.dgen.internal.lock.DeadLetters;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import tools.jackson.databind.JsonNode;

/**
 * The admin view of one stored server: what {@code ServerRef} shows a running process (state, queue
 * length, dead letters) and more (queued items, the lock holder, pending timers, kept replies),
 * read without the server's classes, plus re-queueing, purging, cancelling timers and killing.
 * Reads are snapshots; each write is one transaction (at most {@value #BATCH} dead letters each)
 * and rings the server's doorbell like the runtime's own, so that running consumers see it at once.
 *
 * <p>Message types: a queued message's type is its name in the server's type table, or null for a
 * message of the declared type (which only the behaviour knows).
 */
public final class ServerAdmin {

  /** The most dead letters one transaction re-queues or purges. */
  static final int BATCH = DeadLetters.Moves.PAGE;

  /**
   * A queued message.
   *
   * @param id the item's versionstamp (24 hex digits)
   * @param kind {@code "call"} or {@code "cast"}
   * @param type the message's class name from the type table, or null for the declared type
   * @param failures consecutive failures so far
   * @param message the message as a tree, or null if it does not decode ({@code error} says why)
   * @param error why the item or message does not decode, or null
   */
  public record QueuedItem(
      String id,
      String kind,
      @Nullable String type,
      int failures,
      @Nullable JsonNode message,
      @Nullable String error) {}

  /**
   * The holder of the server's lock.
   *
   * @param token the holder's fencing token
   * @param acquiredAt when it took the lock (the holder's wall clock)
   * @param age how long ago, by the admin's clock (zero if the clocks disagree)
   * @param item the message that took the lock
   */
  public record LockHolder(String token, Instant acquiredAt, Duration age, QueuedItem item) {}

  /**
   * A dead letter.
   *
   * @param id its id, the one {@code ServerRef.requeueDeadLetter} takes (24 hex digits)
   * @param attempts how often it was attempted
   * @param error the last failure
   * @param at when it was moved out of the queue
   * @param item the message
   */
  public record DeadLetterEntry(
      String id, int attempts, String error, Instant at, QueuedItem item) {}

  /**
   * A pending timer.
   *
   * @param id the id {@code castAfter} (or {@code castAt}, {@code castEvery}, {@code castCron})
   *     returned, which {@code cancelTimer} takes
   * @param due when it fires (next)
   * @param item the message it will queue (kind {@code "cast"}; id empty)
   * @param schedule how a recurring timer repeats ({@code every PT1S}, {@code cron 0 3 * * *
   *     Europe/Berlin}), or null for a one-shot timer
   */
  public record PendingTimer(String id, Instant due, QueuedItem item, @Nullable String schedule) {}

  /**
   * A kept reply: the reply of a {@code submit}ted or keyed call, kept for {@code awaitReply} and
   * repeated calls until its retention ends.
   *
   * @param callId the id {@code submit} returned, which {@code awaitReply} takes
   * @param expiresAt when it is dropped (it reads as unknown from then on)
   * @param status {@code "waiting"} (not answered yet), {@code "replied"} or {@code "failed"}
   * @param type the reply value's type tag, or null
   * @param value the reply value as a tree, or null (waiting, failed, a null reply)
   * @param error the failure kind and message ({@code "failed"}), or why the reply does not decode
   */
  public record KeptReply(
      String callId,
      Instant expiresAt,
      String status,
      @Nullable String type,
      @Nullable JsonNode value,
      @Nullable String error) {}

  /**
   * Why a hosted server is not running although it has work: its stored state did not decode when
   * its holder last loaded it. The holder loads it again after a backoff (up to five minutes), and
   * at once once {@link #replaceState} repaired it.
   *
   * @param since when the holder found the state undecodable (its wall clock)
   * @param member the placement member id of the runtime that found it
   * @param reason the decoding error
   */
  public record Stuck(Instant since, String member, String reason) {}

  private final Backend backend;
  private final ServerKeys keys;
  private final TenantKeys tenant;
  private final @Nullable String behaviour;
  private final Serde serde;
  private final Clock clock;
  private final OperationTimeouts operations;
  private final String context;
  private final AdminRecords records;

  ServerAdmin(
      Backend backend,
      ServerKeys keys,
      TenantKeys tenant,
      @Nullable String behaviour,
      Serde serde,
      Clock clock,
      OperationTimeouts operations,
      String tenantContext) {
    this.operations = operations;
    this.context = tenantContext + " tuid=" + keys.tuid();
    this.backend = backend;
    this.keys = keys;
    this.tenant = tenant;
    this.behaviour = behaviour;
    this.serde = serde;
    this.clock = clock;
    this.records = new AdminRecords(serde);
  }

  /** The server's identity. */
  public Tuple tuid() {
    return keys.tuid();
  }

  /** The class name of the behaviour that last started it, if the server is indexed. */
  public Optional<String> behaviour() {
    return Optional.ofNullable(behaviour);
  }

  /**
   * The stored state as a tree, whatever its encoding (structured or term); empty if none is
   * stored.
   *
   * @throws io.dgen.UndecodableDataException if the stored rows are not a state
   */
  public Optional<JsonNode> state() {
    Subspace space = keys.state();
    List<KeyValue> rows = run("state", tx -> stateRows(tx.snapshot()));
    StoredState stored = new StructuredStateCodec(serde).decode(space, rows);
    return stored == null ? Optional.empty() : Optional.of(stored.tree());
  }

  /** The rows of the stored state, without its version key. */
  private List<KeyValue> stateRows(ReadTransaction tx) {
    Subspace space = keys.state();
    List<KeyValue> rows = new ArrayList<>();
    for (KeyValue kv : tx.getRange(space.range().begin, space.range().end)) {
      if (!Arrays.equals(kv.key(), keys.versionKey())) {
        rows.add(kv);
      }
    }
    return rows;
  }

  /**
   * The type tag the state is stored under ({@code name} or {@code name#version}, see {@code
   * docs/evolving-data.md}); empty if the state type is not annotated with {@code @TypeName} (its
   * data is at version 1) or no state is stored.
   */
  public Optional<String> stateType() {
    byte[] tag = run("stateType", tx -> tx.snapshot().get(keys.stateTagKey()));
    return tag == null ? Optional.empty() : Optional.of(new String(tag, StandardCharsets.UTF_8));
  }

  /**
   * Replaces the stored state with {@code tree}, for a state that no longer decodes (see {@code
   * DGenListener.stateUndecodable}): the confirmation is {@code expected}, the tree the caller
   * inspected ({@link #state()}); nothing is written unless the stored state still equals it, so a
   * state that changed meanwhile is never overwritten blindly. The new state is written in the
   * structured layout (every runtime reads either layout) under {@code type} (the tag the tree is
   * at, e.g. {@code account#2}; null to store none: version 1). Processes that cache the state see
   * the new version key and reload it. A hosted server is loaded again by its holder at once (the
   * same transaction activates it, and clears its {@link #stuck()} record); a started server's
   * process that stopped on the undecodable state must be started again.
   *
   * @param tree the new state
   * @param type the type tag to store with it, or null
   * @param expected the state as inspected before; null if none was stored
   * @return whether it was replaced; false if the stored state is not {@code expected}
   */
  public boolean replaceState(JsonNode tree, @Nullable String type, @Nullable JsonNode expected) {
    java.util.Objects.requireNonNull(tree, "tree must not be null");
    if (type != null) {
      io.dgen.internal.codec.TypeNames.checkName(
          io.dgen.internal.codec.TypeNames.parse(type).name(), "state type");
    }
    StructuredStateCodec codec = new StructuredStateCodec(serde);
    Subspace space = keys.state();
    return run(
        "replaceState",
        tx -> {
          StoredState stored = codec.decode(space, stateRows(tx));
          JsonNode now = stored == null ? null : stored.tree();
          if (!java.util.Objects.equals(now, expected)) {
            return false;
          }
          codec.write(tx, space, null, tree);
          if (type == null) {
            tx.clear(keys.stateTagKey());
          } else {
            tx.set(keys.stateTagKey(), type.getBytes(StandardCharsets.UTF_8));
          }
          tx.setVersionstampedValue(keys.versionKey(), new byte[0]);
          tx.clear(keys.stuckKey());
          Futures.join(ServerEntry.reload(tx, tenant, keys));
          return true;
        });
  }

  /**
   * Whether the server is stuck on a state that does not decode, as its holder last recorded (a
   * hosted server only); empty if not. Cleared by {@link #replaceState}, by the server's eviction
   * and by a kill.
   */
  public Optional<Stuck> stuck() {
    byte[] raw = run("stuck", tx -> tx.snapshot().get(keys.stuckKey()));
    if (raw == null) {
      return Optional.empty();
    }
    StuckRecord r = StuckRecord.decode(raw);
    return Optional.of(new Stuck(r.since(), r.member(), r.reason()));
  }

  /**
   * What a listing shows of this server (counters, head item, dead-letter presence, lock), read in
   * one snapshot transaction.
   */
  public TenantAdmin.ServerSummary summary() {
    return run("summary", tx -> new SummaryReads(tx.snapshot(), keys, serde).summary(behaviour));
  }

  /** Pushes minus pops: the messages waiting, as {@code ServerRef.queueLength} counts them. */
  public long queueLength() {
    return run(
        "queueLength",
        tx -> {
          var snap = tx.snapshot();
          return ServerKeys.decodeCounter(snap.get(keys.pushCounter()))
              - ServerKeys.decodeCounter(snap.get(keys.popCounter()));
        });
  }

  /** The first {@code limit} queued messages, in the order they will be consumed. */
  public List<QueuedItem> peek(int limit) {
    checkLimit(limit, 1);
    Subspace items = keys.items();
    List<KeyValue> rows =
        run(
            "peek",
            tx -> tx.snapshot().getRange(items.range().begin, items.range().end, limit, false));
    Map<Integer, String> types = types();
    List<QueuedItem> out = new ArrayList<>(rows.size());
    for (KeyValue kv : rows) {
      if (!keys.isPauseMarker(kv.key())) {
        out.add(
            item(ServerKeys.stampId(items.unpack(kv.key()).getVersionstamp(1)), kv.value(), types));
      }
    }
    return out;
  }

  /**
   * Removes the queued message {@code id} (an id {@link #peek} lists) from the queue: it will not
   * be applied. One transaction that reads the item serializably, so a cancel and a consumer that
   * pops the item conflict and one of them wins. A cancelled call's caller is not told: it waits
   * until its call timeout.
   *
   * @return false if there is no such queued message (it was consumed, is being handled under the
   *     server's lock, was cancelled, or never was)
   * @throws IllegalArgumentException if {@code id} is not a queue item id (24 hex digits)
   */
  public boolean cancelQueued(String id) {
    Versionstamp stamp = ServerKeys.parseStampId(id, "a queued message");
    byte[] head = keys.items().pack(Tuple.from(ServerKeys.LANE_HEAD, stamp));
    byte[] normal = keys.items().pack(Tuple.from(ServerKeys.LANE_NORMAL, stamp));
    return run(
        "cancelQueued",
        tx -> {
          var inHead = tx.getAsync(head);
          var inNormal = tx.getAsync(normal);
          byte[] key =
              Futures.join(inHead) != null ? head : Futures.join(inNormal) != null ? normal : null;
          if (key == null) {
            return false;
          }
          tx.clear(key);
          tx.add(keys.popCounter(), 1); // the queue's length counts it out, as a pop does
          return true;
        });
  }

  /**
   * An operator's pause of the server's consumption.
   *
   * @param since when it was paused (the admin's clock)
   * @param reason what the operator said
   */
  public record Pause(Instant since, String reason) {}

  /** The server's pause, if it is paused. */
  public Optional<Pause> paused() {
    byte[] raw = run("paused", tx -> tx.snapshot().get(keys.pauseKey()));
    if (raw == null) {
      return Optional.empty();
    }
    Tuple t = Tuple.fromBytes(raw);
    return Optional.of(new Pause(Instant.ofEpochMilli(t.getLong(0)), t.getString(1)));
  }

  /**
   * Pauses the server's consumption, durably and for every runtime: from the commit of this call
   * on, no consumer applies a queued message (a consumer batch or an inline call that read the
   * queue before it conflicts and finds the pause when it retries). Casts, calls and timers still
   * queue; queued calls wait, and fail with {@code CallTimeoutException} at their timeout (they
   * still execute after the resume). Priority messages and infos bypass the queue and still run. A
   * message being handled under the server's lock ({@code Result.lock}) finishes; then nothing more
   * is consumed. The pause survives restarts of every runtime, until {@link #resume}.
   *
   * @param reason why, shown by the admin tools (may be empty)
   * @return true if this call paused it; false if it was paused already (the earlier pause stays)
   * @throws IllegalStateException if the server does not exist (killed, or a hosted server that
   *     never received a message)
   */
  public boolean pause(String reason) {
    java.util.Objects.requireNonNull(reason, "reason must not be null");
    byte[] record = Tuple.from(clock.millis(), reason).pack();
    return run(
        "pause",
        tx -> {
          var entry = tx.getAsync(tenant.serverKey(keys.tuid()));
          var marker = tx.getAsync(keys.pauseKey());
          if (Futures.join(entry) == null) {
            throw new IllegalStateException(
                "no server "
                    + io.dgen.admin.Tuids.format(keys.tuid())
                    + ": it was killed or never created; nothing to pause");
          }
          if (Futures.join(marker) != null) {
            return false;
          }
          tx.set(keys.pauseKey(), record);
          // every consumer batch and inline call reads the lock key serializably: one that read
          // the queue before this pause conflicts with it and retries, meeting the pause
          tx.addWriteConflictKey(keys.lockKey());
          return true;
        });
  }

  /**
   * Resumes a paused server: clears the pause and rings the server (activating a hosted one) so
   * that its consumers apply what queued meanwhile, in order.
   *
   * @return false if it was not paused
   */
  public boolean resume() {
    return run(
        "resume",
        tx -> {
          if (tx.get(keys.pauseKey()) == null) {
            return false;
          }
          tx.clear(keys.pauseKey());
          Futures.join(ServerEntry.publishFor(tx, tenant, keys));
          return true;
        });
  }

  /** The lock's holder, if the server is locked. */
  public Optional<LockHolder> lock() {
    byte[] raw = run("lock", tx -> tx.snapshot().get(keys.lockKey()));
    if (raw == null) {
      return Optional.empty();
    }
    LockRecord lock = LockRecord.decode(raw, serde);
    Instant at = Instant.ofEpochMilli(lock.acquiredAt());
    Duration age = Duration.between(at, clock.instant());
    return Optional.of(
        new LockHolder(
            lock.token(),
            at,
            age.isNegative() ? Duration.ZERO : age,
            item("", lock.envelope(), types())));
  }

  /** Every dead letter, oldest first. */
  public List<DeadLetterEntry> deadLetters() {
    return deadLetters(ReadTransaction.UNLIMITED);
  }

  /**
   * The first {@code limit} dead letters, oldest first (one range read of at most {@code limit}
   * rows).
   *
   * @param limit how many at most; {@code 0} for all
   * @throws IllegalArgumentException if {@code limit} is negative
   */
  public List<DeadLetterEntry> deadLetters(int limit) {
    checkLimit(limit, 0);
    Subspace dead = keys.dead();
    List<KeyValue> rows =
        run(
            "deadLetters",
            tx -> tx.snapshot().getRange(dead.range().begin, dead.range().end, limit, false));
    Map<Integer, String> types = types();
    List<DeadLetterEntry> out = new ArrayList<>(rows.size());
    for (KeyValue kv : rows) {
      out.add(records.deadLetter(dead, kv, types));
    }
    return out;
  }

  /**
   * A page of pending timers.
   *
   * @param timers the page's timers, soonest first
   * @param next the id to pass as {@code after} for the next page, or null if this was the last
   */
  public record TimerPage(List<PendingTimer> timers, @Nullable String next) {}

  /** The most timers one page lists. */
  public static final int MAX_TIMER_PAGE = 1_000;

  /** The pending timers, soonest first. */
  public List<PendingTimer> timers() {
    return timers(ReadTransaction.UNLIMITED);
  }

  /**
   * A page of the pending timers: at most {@code limit}, in the order of their ids, after the timer
   * {@code after} (exclusive; null: from the first), listed soonest first within the page. One
   * snapshot transaction: a range read of the server's own timer keys and a read of each one's
   * index entry. Pages follow ids, not due times, so that a cursor stays valid while timers fire
   * and recurring ones move: a server with at most {@code limit} timers gets them all, soonest
   * first, in one page.
   *
   * @param after the {@link TimerPage#next} of the previous page, or null for the first
   * @param limit how many at most, within 1 and {@value #MAX_TIMER_PAGE}
   * @throws IllegalArgumentException if {@code limit} is out of range or {@code after} is not a
   *     timer id
   */
  public TimerPage timers(@Nullable String after, int limit) {
    if (limit < 1 || limit > MAX_TIMER_PAGE) {
      throw new IllegalArgumentException(
          "limit must be within 1 and " + MAX_TIMER_PAGE + ": " + limit);
    }
    if (after != null) {
      ServerKeys.checkTimerId(after);
    }
    // one more than asked: whether there is a next page, without an empty last page
    return AdminRecords.page(read(after, limit + 1), limit);
  }

  /**
   * At most {@code limit} pending timers, soonest first among those read. The server's own timer
   * keys are ordered by id, not due time: with more than {@code limit} timers, the ones returned
   * are the first {@code limit} by id, so not necessarily the soonest.
   *
   * @param limit how many at most; {@code 0} for all
   * @throws IllegalArgumentException if {@code limit} is negative
   */
  public List<PendingTimer> timers(int limit) {
    checkLimit(limit, 0);
    return read(null, limit);
  }

  private List<PendingTimer> read(@Nullable String after, int limit) {
    List<ServerKeys.PendingTimer> stored =
        run("timers", tx -> keys.pendingTimers(tx.snapshot(), tenant, after, limit));
    Map<Integer, String> types = stored.isEmpty() ? Map.of() : types();
    List<PendingTimer> out = new ArrayList<>(stored.size());
    for (ServerKeys.PendingTimer t : stored) {
      out.add(records.timer(t, types));
    }
    return out;
  }

  /** How many dead letters there are. */
  public int deadLetterCount() {
    Subspace dead = keys.dead();
    return run(
        "deadLetterCount",
        tx -> tx.snapshot().getRange(dead.range().begin, dead.range().end).size());
  }

  /**
   * Moves every dead letter back to the tail of the queue with its failure count cleared, {@value
   * #BATCH} per transaction, and rings the server's doorbell.
   *
   * @return how many were re-queued
   */
  public int requeueDeadLetters() {
    return requeueDeadLetters(false);
  }

  /**
   * Moves every dead letter back into the queue, at its head (consumed next, oldest first) or at
   * its tail, with its failure count cleared, {@value #BATCH} per transaction, and rings the
   * server's doorbell.
   *
   * @param head true for the head of the queue
   * @return how many were re-queued
   */
  public int requeueDeadLetters(boolean head) {
    return inBatches(true, head);
  }

  /** Deletes every dead letter, {@value #BATCH} per transaction; returns how many there were. */
  public int purgeDeadLetters() {
    return inBatches(false, false);
  }

  private int inBatches(boolean requeue, boolean head) {
    Subspace dead = keys.dead();
    DeadLetters.Moves moves = deadLetterMoves();
    int total = 0;
    while (true) {
      int n =
          run(
              requeue ? "requeueDeadLetters" : "purgeDeadLetters",
              tx -> {
                List<KeyValue> rows =
                    tx.getRange(dead.range().begin, dead.range().end, BATCH, false);
                return Futures.join(moves.movePage(tx, rows, requeue, head));
              });
      total += n;
      if (n < BATCH) {
        return total;
      }
    }
  }

  /** The dead-letter writes, as a running server's own re-queues and purges make them. */
  private DeadLetters.Moves deadLetterMoves() {
    return DeadLetters.Moves.stored(tenant, keys, serde);
  }

  /**
   * Moves the dead letter {@code id} back to the tail of the queue with its failure count cleared.
   *
   * @return false if there is no such dead letter
   * @throws IllegalArgumentException if {@code id} is not a dead letter id
   */
  public boolean requeueDeadLetter(String id) {
    return requeueDeadLetter(id, false);
  }

  /**
   * Moves the dead letter {@code id} back into the queue, at its head (consumed next) or at its
   * tail, with its failure count cleared, as {@code ServerRef.requeueDeadLetter} does.
   *
   * @param head true for the head of the queue
   * @return false if there is no such dead letter
   * @throws IllegalArgumentException if {@code id} is not a dead letter id
   */
  public boolean requeueDeadLetter(String id, boolean head) {
    byte[] key = deadKey(id);
    return run(
        "requeueDeadLetter",
        tx -> {
          byte[] raw = tx.get(key);
          if (raw == null) {
            return false;
          }
          Futures.join(deadLetterMoves().requeue(tx, key, raw, head));
          return true;
        });
  }

  /**
   * Deletes the dead letter {@code id}.
   *
   * @return false if there is no such dead letter
   * @throws IllegalArgumentException if {@code id} is not a dead letter id
   */
  public boolean purgeDeadLetter(String id) {
    byte[] key = deadKey(id);
    return run("purgeDeadLetter", tx -> deadLetterMoves().purge(tx, key, tx.get(key)));
  }

  /**
   * Cancels the pending timer {@code id}, as {@code ServerRef.cancelTimer} does: it will not fire.
   * A cancel and the timer's firing conflict; one of them wins.
   *
   * @return false if there is no such pending timer (it fired, was cancelled, or never was)
   * @throws IllegalArgumentException if {@code id} is not a timer id
   */
  public boolean cancelTimer(String id) {
    ServerKeys.checkTimerId(id);
    return run("cancelTimer", tx -> keys.cancelTimer(tx, tenant, id));
  }

  /**
   * The first {@code limit} kept replies, by expiry (soonest first), with their values decoded as
   * trees. A kept reply past its expiry that no consumer has trimmed yet is listed with its expiry
   * in the past.
   *
   * @param limit how many at most, at least 1
   * @throws IllegalArgumentException if {@code limit} is below 1
   */
  public List<KeptReply> keptReplies(int limit) {
    checkLimit(limit, 1);
    Subspace kept = keys.kept();
    List<KeyValue> rows =
        run("keptReplies", tx -> AdminRecords.keptRows(tx.snapshot(), kept, limit));
    return records.keptReplies(kept, rows, limit);
  }

  /**
   * Kills the server, as {@code ServerRef.kill} does: clears all its keys and its index entry, and
   * rings its doorbell and its waiting callers' reply slots (those callers fail at once). Processes
   * of the server running elsewhere are not stopped by this; they find no state.
   */
  public void kill() {
    ServerKeys.KillTarget target = new ServerKeys.KillTarget();
    run("kill", tx -> keys.kill(tx, tenant, target));
  }

  /**
   * Runs an admin transaction within the operation timeout.
   *
   * @throws OperationTimeoutException if the cluster does not answer in time
   */
  private <T> T run(String operation, Function<? super Transaction, ? extends T> body) {
    return operations.run(backend, body, "ServerAdmin." + operation, context);
  }

  private Map<Integer, String> types() {
    Subspace table = keys.types();
    return AdminRecords.types(
        table, run("types", tx -> tx.snapshot().getRange(table.range().begin, table.range().end)));
  }

  private QueuedItem item(String id, byte[] raw, Map<Integer, String> types) {
    return records.item(id, raw, types);
  }

  private byte[] deadKey(String id) {
    return keys.dead().pack(Tuple.from(ServerKeys.parseStampId(id, "a dead letter")));
  }
}
