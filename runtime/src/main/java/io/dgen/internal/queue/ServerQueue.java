package io.dgen.internal.queue;

import com.apple.foundationdb.tuple.Versionstamp;
import io.dgen.From;
import io.dgen.backend.ByteKeys;
import io.dgen.backend.Futures;
import io.dgen.backend.KeyValue;
import io.dgen.backend.Transaction;
import io.dgen.internal.codec.Envelope;
import io.dgen.internal.codec.Serde;
import io.dgen.internal.codec.TypeRegistry;
import io.dgen.internal.doorbell.TenantWatcher;
import io.dgen.internal.keys.ServerEntry;
import io.dgen.internal.keys.ServerKeys;
import io.dgen.internal.observe.Tracing;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import org.jspecify.annotations.Nullable;

/**
 * One server's durable queue: encoding messages into envelopes (and back), pushing them (blind
 * writes: a versionstamped item key, an atomic add, and a ring of the server's doorbell, so
 * producers never conflict), peeking and popping items, the push and pop counters, and the outbox's
 * cast that pushes inside a user's transaction (the {@code Outbox} itself is {@code
 * IdempotentRequests}').
 *
 * <p>Never commits (callers hand it their transaction, except the outbox, whose transaction is the
 * user's) and never runs callbacks.
 *
 * @param <M> the message type
 */
public final class ServerQueue<M> {

  /**
   * The largest queue item a push accepts: every record that will ever hold it — the item itself
   * after failures, the lock record, the dead letter — still fits in one value.
   */
  static final int MAX_ENVELOPE = Envelope.MAX_ITEM;

  private final ServerKeys keys;
  private final TenantWatcher doorbell;
  private final Serde serde;
  private final TypeRegistry types;
  private final String context;
  private final ServerEntry entry;
  private final @Nullable KindTypes kind;
  private final Class<?> messageClass;
  private final Tracing.Server traces;
  private volatile @Nullable TypeRegistry ownTable;

  /**
   * @param types the server's registry; a server addressed by id uses its kind's ({@code kind})
   * @param kind the kind's type table, for a server addressed by id (its first push creates it, and
   *     its items' type indexes are of the kind's table); null for a started server
   * @param messageClass what every message must be an instance of: the declared message type's
   *     class, or the kind's message type for a ref ({@code Object} for a ref by name of a kind
   *     this runtime gives no type)
   * @param traces captures a publisher's trace context into each item encoded
   */
  public ServerQueue(
      ServerKeys keys,
      TenantWatcher doorbell,
      Serde serde,
      TypeRegistry types,
      @Nullable KindTypes kind,
      ServerEntry entry,
      Class<?> messageClass,
      Tracing.Server traces,
      String context) {
    this.messageClass = messageClass;
    this.traces = traces;
    this.keys = keys;
    this.doorbell = doorbell;
    this.serde = serde;
    this.types = types;
    this.kind = kind;
    this.context = context;
    this.entry = entry;
  }

  /** The tracing of this server's items: captured here, restored by their consumers. */
  public Tracing.Server traces() {
    return traces;
  }

  /** The server's entry in the tenant's server index, which every publish requires. */
  public ServerEntry entry() {
    return entry;
  }

  /**
   * Encodes a message as a queue item: a small header, then the message serialized once. Every
   * publish encodes here, in the publisher's thread: the item carries the trace context current
   * there, if any.
   *
   * @param kind {@link Envelope#CALL} or {@link Envelope#CAST}
   * @param from the caller's reply slot (calls), or null
   * @throws IllegalArgumentException if the message's type is not allowed or it is too large
   */
  public byte[] encode(int kind, M message, @Nullable From from) {
    if ((kind & ~Envelope.PRIORITY) == Envelope.CAST) {
      refuseCall(message);
    }
    String tag = tag(message);
    byte[] bytes =
        Envelope.encode(
            serde,
            this.kind == null ? kind : kind | Envelope.KIND_TABLE,
            this.kind == null || tag == null ? types.messageIndex(tag) : this.kind.index(tag),
            from == null ? 0 : from.slotSeconds(),
            from == null ? null : from.slotId(),
            traces.capture(),
            message);
    if (bytes.length > MAX_ENVELOPE) {
      throw new IllegalArgumentException(
          "message encodes to "
              + bytes.length
              + " bytes; a queued message must fit in "
              + MAX_ENVELOPE
              + " bytes, so that it fits in one value with whatever holds it later (a dead"
              + " letter, the lock record); store large data under your own keys and send a"
              + " reference: "
              + context);
    }
    return bytes;
  }

  /**
   * Refuses a message that is not of the server's message type, whatever the generic types said (a
   * raw {@code ServerRef}, an unchecked cast): before any transaction, so nothing is written.
   *
   * @throws NullPointerException if it is null
   * @throws IllegalArgumentException if it is not an instance of the message type
   */
  public void checkType(Object message) {
    Objects.requireNonNull(message, "message must not be null");
    if (!messageClass.isInstance(message)) {
      throw new IllegalArgumentException(
          "message "
              + message.getClass().getName()
              + " is not a "
              + messageClass.getName()
              + ", the message type of this server; nothing was sent: "
              + context);
    }
  }

  /**
   * Refuses to cast a {@link io.dgen.Call}: its caller expects a reply, which a cast drops.
   *
   * @throws IllegalArgumentException if {@code message} is a call
   */
  public static void refuseCall(Object message) {
    if (message instanceof io.dgen.Call<?>) {
      throw new IllegalArgumentException(
          message.getClass().getName()
              + " is a Call, which expects a reply: send it with call or callAsync, not as a"
              + " cast (nothing was written)");
    }
  }

  /**
   * The tag to store with {@code message} ({@link TypeRegistry#messageTag}), once it passed {@link
   * #checkType}.
   *
   * @throws IllegalArgumentException if the message's type is not allowed
   */
  public @Nullable String tag(Object message) {
    checkType(message);
    return types.messageTag(message);
  }

  /**
   * Reads a queue item's envelope (of either format).
   *
   * @throws io.dgen.UndecodableDataException if it is not one
   */
  public Envelope envelope(byte[] item) {
    return Envelope.decode(item, serde);
  }

  /**
   * The message an envelope carries, decoded as one of the declared message types, first reading
   * the type table entry the item names if this process has not learned it (another process added
   * it since this one started): the kind's table for an item pushed through a ref, else the
   * server's own.
   *
   * @throws io.dgen.UndecodableDataException if it is not one of them
   */
  public @SuppressWarnings("unchecked") M message(Transaction tx, Envelope env) {
    if (env.kindTable()) {
      if (kind == null) {
        throw new io.dgen.UndecodableDataException(
            "the item was pushed through a ref (its type is of its kind's type table), but this"
                + " server was started, not hosted: host its kind to consume it; it is kept: "
                + context,
            null);
      }
      kind.learn(tx, env.typeIndex());
      return (M) types.decodeMessage(env);
    }
    TypeRegistry own = kind == null ? types : ownTable();
    if (!own.knows(env.typeIndex())) {
      byte[] name = tx.snapshot().get(keys.typeKey(env.typeIndex()));
      if (name != null) {
        own.learn(Map.of(env.typeIndex(), new String(name, StandardCharsets.UTF_8)));
      }
    }
    return (M) own.decodeMessage(env);
  }

  /**
   * The message an envelope carries, decoded with the tables as this process learned them (no read:
   * for a dead letter, which a batch of this process decoded before).
   *
   * @throws io.dgen.UndecodableDataException if it does not decode
   */
  public @SuppressWarnings("unchecked") M message(Envelope env) {
    return (M) (env.kindTable() || kind == null ? types : ownTable()).decodeMessage(env);
  }

  /**
   * The info object of a priority info a ref sent: of any class the server allows (not only its
   * message types), from the kind's table.
   *
   * @throws io.dgen.UndecodableDataException if it is not allowed or does not decode
   */
  public Object info(Transaction tx, Envelope env) {
    if (kind == null || !env.kindTable()) {
      throw new io.dgen.UndecodableDataException(
          "an info item outside a hosted server's queue: " + context, null);
    }
    kind.learn(tx, env.typeIndex());
    return types.decodeInfo(env);
  }

  /** The server's own table, for items a started process of a hosted server pushed. */
  private TypeRegistry ownTable() {
    TypeRegistry t = ownTable;
    if (t == null) {
      t = types.forServer();
      ownTable = t;
    }
    return t;
  }

  /**
   * The item {@code env} came from, with {@code count} failures, the last one {@code id} (null with
   * no failures).
   */
  public byte[] withFailure(Envelope env, int count, @Nullable String id) {
    int index = env.typeName() == null ? env.typeIndex() : types.messageIndex(env.typeName());
    return env.withFailure(count, id, index);
  }

  /**
   * Starts reading the server's type table, so that the read overlaps the caller's others; null if
   * the declared message type determines every message's class (no table is needed).
   */
  public @Nullable CompletableFuture<List<KeyValue>> readTypes(Transaction tx) {
    return types.messagesTagged()
        ? tx.getRangeAsync(
            keys.types().range().begin, keys.types().range().end, Transaction.UNLIMITED, false)
        : null;
  }

  /**
   * Adds to the type table read by {@link #readTypes} the message classes this process allows that
   * it lacks (at the next free indexes: entries are never renumbered). Returns the whole table, for
   * {@link TypeRegistry#learn} once the transaction has committed.
   */
  public Map<Integer, String> completeTypes(
      Transaction tx, @Nullable CompletableFuture<List<KeyValue>> read) {
    if (read == null) {
      return Map.of();
    }
    Map<Integer, String> table = new HashMap<>();
    for (KeyValue kv : Futures.join(read)) {
      int index = (int) keys.types().unpack(kv.key()).getLong(0);
      table.put(index, new String(kv.value(), StandardCharsets.UTF_8));
    }
    int next = table.keySet().stream().mapToInt(i -> i + 1).max().orElse(0);
    Set<String> present = new HashSet<>(table.values());
    for (String name : types.messageTagNames()) {
      if (!present.contains(name)) {
        tx.set(keys.typeKey(next), name.getBytes(StandardCharsets.UTF_8));
        table.put(next++, name);
      }
    }
    return table;
  }

  /**
   * Pushes {@code envelope} at the tail of {@code lane}: blind writes only. The transaction rings
   * the server through {@link #publishing} (a publish) or {@link #wakeConsumers} (a consumer's own
   * re-queue).
   */
  public void push(Transaction tx, long lane, byte[] envelope) {
    keys.push(tx, lane, envelope);
  }

  /**
   * Starts the publish step every transaction that pushes to the server from outside makes ({@link
   * ServerEntry#publish}): the serializable read of the server's entry, then the ring of its bucket
   * (an activation if a hosted server becomes ready). The caller issues it with its other work and
   * waits for it before its transaction commits.
   */
  public CompletableFuture<@Nullable Void> publishing(Transaction tx) {
    return entry.publish(tx);
  }

  /**
   * Starts the read that makes sure the server exists before something other than a push is written
   * for it (a timer): a started server's entry must exist; a hosted server's absent entry is
   * written idle.
   */
  public CompletableFuture<@Nullable Void> requireServer(Transaction tx) {
    return entry.require(tx);
  }

  /**
   * Publishes casts ({@code cast}, {@code castAll}): pushes them and returns the existence read
   * issued first, which overlaps the pushes; no thread waits for it. The transaction must not
   * commit unless it completes normally.
   *
   * @return completes when the server is known to exist; fails with {@link
   *     io.dgen.ServerStoppedException} if it was killed (nothing may then commit)
   */
  CompletableFuture<@Nullable Void> publish(Transaction tx, List<byte[]> envelopes) {
    CompletableFuture<@Nullable Void> live = entry.publish(tx);
    pushCasts(tx, envelopes);
    return live;
  }

  /** Pushes cast envelopes in order, without the publish step ({@link #publish} adds it). */
  void pushCasts(Transaction tx, List<byte[]> envelopes) {
    for (byte[] env : envelopes) {
      push(tx, ServerKeys.LANE_NORMAL, env);
    }
  }

  /**
   * Rings the server's bucket without the publish step: its consumers look again. For a consumer's
   * own transactions (a re-queue at the head, the release of the lock), which need no activation:
   * the server is running.
   */
  public void wakeConsumers(Transaction tx) {
    doorbell.ring(tx, keys.bucket(), keys.wakeId());
  }

  /** Pushes at the head or tail from a consumer's own transaction, and rings its consumers. */
  public void requeue(Transaction tx, long lane, byte[] envelope) {
    push(tx, lane, envelope);
    wakeConsumers(tx);
  }

  /**
   * Starts a snapshot read of the first {@code limit} items: concurrent pushes must not abort the
   * reader (DESIGN §8); whoever pops an item adds its read conflict with {@link #pop}.
   */
  public CompletableFuture<List<KeyValue>> peek(Transaction tx, int limit) {
    return tx.snapshot()
        .getRangeAsync(keys.items().range().begin, keys.items().range().end, limit, false);
  }

  /**
   * Removes a run of peeked items, {@code first} to {@code last} inclusive, conflicting with
   * whoever else pops any of them: one read-conflict range and one range clear, not one of each per
   * item. The run is the head of the queue as of the batch's read, so no other item lies between
   * them then; an item that a concurrent commit puts in between (only a re-queue at the head lane
   * can) makes the batch conflict and run again, never lost. Items pushed later sort after {@code
   * last}: their stamps are newer.
   */
  public static void pop(Transaction tx, byte[] first, byte[] last) {
    byte[] end = ByteKeys.keyAfter(last);
    tx.addReadConflictRange(first, end);
    tx.clearRange(first, end);
  }

  /** Counts {@code n} items as popped (by a batch, or moved out of the queue). */
  public void popped(Transaction tx, long n) {
    tx.add(keys.popCounter(), n);
  }

  /** Pushes minus pops, read as snapshots: never conflicts. */
  public CompletableFuture<Long> length(Transaction tx) {
    var snap = tx.snapshot();
    return snap.getAsync(keys.pushCounter())
        .thenCombine(
            snap.getAsync(keys.popCounter()),
            (n, p) -> ServerKeys.decodeCounter(n) - ServerKeys.decodeCounter(p));
  }

  /** The versionstamp of a queue item, which names it (e.g. as a dead letter). */
  public Versionstamp stampOf(KeyValue item) {
    return keys.items().unpack(item.key()).getVersionstamp(1);
  }

  /**
   * Casts {@code message} inside a transaction the user owns (the outbox): pushes it unless an
   * earlier attempt of the same run committed the pushes to this server.
   */
  public void castInto(Transaction tx, M message) {
    Objects.requireNonNull(tx, "transaction must not be null");
    byte[] env = encode(Envelope.CAST, message, null);
    // The user's run re-executes its body after commit_unknown_result even if it applied: a
    // marker keyed by the run's id keeps the pushes of a committed attempt from repeating.
    if (!entry.alreadyCommitted(tx, keys)) {
      push(tx, ServerKeys.LANE_NORMAL, env);
      Futures.join(entry.publish(tx)); // the user's transaction: its body waits anyway
    }
  }
}
