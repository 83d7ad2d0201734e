package io.dgen.internal.calls;

import com.apple.foundationdb.subspace.Subspace;
import io.dgen.CallRejectedException;
import io.dgen.DGenException;
import io.dgen.DeadLetterException;
import io.dgen.From;
import io.dgen.ReplyTooLargeException;
import io.dgen.UndecodableDataException;
import io.dgen.backend.Backend;
import io.dgen.backend.Futures;
import io.dgen.backend.KeyValue;
import io.dgen.backend.ReadTransaction;
import io.dgen.backend.Transaction;
import io.dgen.internal.base.DeferredClears;
import io.dgen.internal.codec.Chunks;
import io.dgen.internal.codec.Reply;
import io.dgen.internal.codec.ReplyTypes;
import io.dgen.internal.codec.Serde;
import io.dgen.internal.codec.StateCodec;
import io.dgen.internal.codec.TypeRegistry;
import io.dgen.internal.doorbell.TenantWatcher;
import io.dgen.internal.doorbell.WakeListener;
import io.dgen.internal.keys.KeptReplies;
import io.dgen.internal.keys.ServerKeys;
import java.lang.reflect.Type;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;

/**
 * The reply slots of one server's queued calls: a caller's {@link From} and the slot it names,
 * opening a slot, writing a reply into it (only while it exists), taking it (read and clear), and
 * the encoding of replies, successful or failed.
 *
 * <p>Never pushes messages and never waits: a reply written rings the slot's wake id on the
 * doorbell of the server's bucket, and the call protocol, which waits, listens for it.
 */
public final class ReplySlots {

  private static final byte[] EMPTY = new byte[0];

  private static final String DEAD_LETTER = "dead_letter";

  private static final String CALLBACK_FAILED = "callback_failed";

  private static final String TOO_LARGE = "reply_too_large";

  private static final String REJECTED = "call_rejected";

  private static final long MAX_REPLY = ReplyTooLargeException.MAX_REPLY_BYTES;

  /** The longest a call may wait; older reply slots are swept as abandoned. */
  public static final Duration MAX_CALL_TIMEOUT = Duration.ofHours(1);

  /** A slot as taken: its rows, and whether it was left in place because no reply had come. */
  record Taken(List<KeyValue> rows, boolean waiting) {}

  /**
   * A caller in this runtime waiting for the reply in its slot: the consumer that writes the reply
   * hands it over after its commit, instead of ringing the doorbell for it to be read back.
   */
  interface LocalCaller {
    /** Whether this is the caller of {@code from}. */
    boolean waitsFor(From from);

    /** The reply was committed into the caller's slot: complete the call with it. */
    void replied(@Nullable Object reply);
  }

  /** A reply written for a caller in this runtime, to hand over once its batch committed. */
  public record LocalReply(LocalCaller caller, @Nullable Object reply) {
    public void deliver() {
      caller.replied(reply);
    }
  }

  /**
   * A reply handed over in this runtime, as it was when the callback replied: its tree, taken then,
   * for a value that later callbacks (or actions) could still change. {@link #local} decodes it as
   * a queued reply is decoded, so a caller here sees what a caller in another runtime sees.
   */
  record Snapshot(Reply reply) {}

  private final Backend backend;
  private final StateCodec codec;
  private final DeferredClears clears;
  private final TenantWatcher doorbell;
  private final ServerKeys keys;
  private final Serde serde;
  private final TypeRegistry types;
  private final LongSupplier wallMillis;
  private final String context;

  public ReplySlots(
      Backend backend,
      StateCodec codec,
      DeferredClears clears,
      TenantWatcher doorbell,
      ServerKeys keys,
      Serde serde,
      TypeRegistry types,
      LongSupplier wallMillis,
      String context) {
    this.backend = backend;
    this.codec = codec;
    this.clears = clears;
    this.doorbell = doorbell;
    this.keys = keys;
    this.serde = serde;
    this.types = types;
    this.wallMillis = wallMillis;
    this.context = context;
  }

  /** A fresh caller identity, naming a slot not yet written. */
  public From newFrom() {
    // The same clock as the sweep of abandoned slots, which compares these seconds with it.
    return new From(
        TimeUnit.MILLISECONDS.toSeconds(wallMillis.getAsLong()), UUID.randomUUID().toString());
  }

  private Subspace slotOf(From from) {
    if (KeptReplies.isKept(from)) {
      return keys.keptSlot(from.slotSeconds(), from.slotId());
    }
    return keys.slot(from.slotSeconds(), from.slotId());
  }

  /** The bucket whose doorbell rings when a reply lands: the server's. */
  int bucket() {
    return keys.bucket();
  }

  /** The wake id the doorbell rings when a reply lands in {@code from}'s slot. */
  long wakeId(From from) {
    return keys.slotWakeId(from.slotSeconds(), from.slotId());
  }

  /** Writes {@code from}'s empty slot: the caller is waiting. */
  public void open(Transaction tx, From from) {
    tx.set(ServerKeys.slotChunk(slotOf(from), 0), EMPTY);
  }

  /** Starts the read {@link #write} needs: whether the caller's slot still exists. */
  public CompletableFuture<byte @Nullable []> prefetch(Transaction tx, From from) {
    return tx.getAsync(ServerKeys.slotChunk(slotOf(from), 0));
  }

  /**
   * Writes {@code reply} into the caller's slot if the caller is still waiting, and rings the
   * slot's wake id.
   *
   * @param prefetched the slot's {@link #prefetch}, or null to read it now
   */
  public void write(
      Transaction tx,
      From from,
      Reply reply,
      @Nullable CompletableFuture<byte @Nullable []> prefetched) {
    if (writeSlot(tx, from, reply, prefetched)) {
      doorbell.ring(tx, keys.bucket(), wakeId(from));
    }
  }

  /**
   * Writes the reply {@code value} into the caller's slot if the caller is still waiting. A caller
   * in this runtime gets it handed over after the commit (the returned {@link LocalReply}): no
   * ring, no read back. Any other caller is rung.
   */
  public @Nullable LocalReply writeOk(
      Transaction tx,
      From from,
      @Nullable Object value,
      @Nullable CompletableFuture<byte @Nullable []> prefetched) {
    Reply reply = ok(value);
    // The next callbacks of the batch may change what the reply shares with the state.
    return writeFor(
        tx, from, reply, codec.isDeeplyImmutable(value) ? value : new Snapshot(reply), prefetched);
  }

  /**
   * Writes that the server refused the call ({@code TerminalException}) into the caller's slot if
   * the caller is still waiting; handed over after the commit to a caller in this runtime, as
   * {@link #writeOk} does.
   */
  public @Nullable LocalReply writeRejected(
      Transaction tx,
      From from,
      String reason,
      @Nullable CompletableFuture<byte @Nullable []> prefetched) {
    Reply reply = rejected(reason);
    return writeFor(tx, from, reply, new Snapshot(reply), prefetched);
  }

  private @Nullable LocalReply writeFor(
      Transaction tx,
      From from,
      Reply reply,
      @Nullable Object local,
      @Nullable CompletableFuture<byte @Nullable []> prefetched) {
    if (!writeSlot(tx, from, reply, prefetched)) {
      return null;
    }
    long id = wakeId(from);
    if (KeptReplies.isKept(from)) {
      doorbell.ring(
          tx, keys.bucket(), id); // a kept reply may have many readers, here and elsewhere
      return null;
    }
    for (WakeListener l : doorbell.listeners(keys.bucket(), id)) {
      if (l instanceof LocalCaller caller && caller.waitsFor(from)) {
        return new LocalReply(caller, local);
      }
    }
    doorbell.ring(tx, keys.bucket(), id);
    return null;
  }

  /** Writes the reply into the slot if it still exists; false if it does not. */
  private boolean writeSlot(
      Transaction tx,
      From from,
      Reply reply,
      @Nullable CompletableFuture<byte @Nullable []> prefetched) {
    Subspace slot = slotOf(from);
    byte[] chunk0 = ServerKeys.slotChunk(slot, 0);
    byte[] current = prefetched != null ? Futures.join(prefetched) : tx.get(chunk0);
    if (current == null) {
      // The caller gave up (timeout) or the call was inline-failed: drop the reply. A reply too
      // large fails the call all the same: whether it applies must not depend on a caller.
      if (reply.e() == null) {
        checkSize(reply, "queued");
      }
      return false;
    }
    byte[] bytes = serde.toBytes(reply);
    checkSize(bytes.length, "queued");
    List<byte[]> parts = Chunks.split(bytes, Chunks.MAX_VALUE);
    for (int i = 0; i < parts.size(); i++) {
      tx.set(ServerKeys.slotChunk(slot, i), parts.get(i));
    }
    return true;
  }

  /** Clears {@code from}'s slot soon, with others: its reply was handed over (unless kept). */
  void clearLater(From from) {
    if (KeptReplies.isKept(from)) {
      return; // read any number of times until it expires
    }
    Subspace slot = slotOf(from);
    clears.clear(slot.range().begin, slot.range().end);
  }

  /**
   * Refuses a reply over {@link ReplyTooLargeException#MAX_REPLY_BYTES} encoded bytes, as a queued
   * call's would be refused: inline and priority calls, whose replies are not stored, keep the same
   * limit. A scalar or a short string is not measured.
   *
   * @param how "inline", "priority" or "queued", for the message
   * @throws ReplyTooLargeException if it is over
   */
  void checkSize(@Nullable Object value, String how) {
    if (value == null
        || value instanceof Number
        || value instanceof Boolean
        || (value instanceof String s && 3L * s.length() + 64 <= MAX_REPLY)) {
      return; // cannot be over: UTF-8 takes at most three bytes per char
    }
    checkSize(serde.sizeOf(value instanceof Reply ? value : ok(value)), how);
  }

  private void checkSize(long bytes, String how) {
    if (bytes > MAX_REPLY) {
      throw new ReplyTooLargeException(
          how
              + " call's reply of "
              + bytes
              + " bytes exceeds the "
              + MAX_REPLY
              + "-byte limit of a reply (FoundationDB allows 10000000 bytes in one transaction,"
              + " for the reply, the state change and the rest of the batch); the call failed"
              + (how.equals("queued")
                  ? " and was not applied: it stays queued, is retried and is dead-lettered at the"
                      + " server's deadLetterThreshold"
                  : ", nothing was committed")
              + ". Store large results under keys of your own and reply with where they are: "
              + context,
          bytes,
          MAX_REPLY);
    }
  }

  /** The reply of a call that failed because its reply was too large. */
  public static Reply tooLarge(ReplyTooLargeException e) {
    return new Reply(
        null, null, TOO_LARGE, e.getMessage(), (int) Math.min(Integer.MAX_VALUE, e.replyBytes()));
  }

  /** A successful reply. */
  public Reply ok(@Nullable Object value) {
    return new Reply(types.replyTag(value), serde.toTree(value), null, null, 0);
  }

  /** The reply of a priority message whose callback failed at the holder: not retried. */
  public static Reply callbackFailed(String error) {
    return new Reply(null, null, CALLBACK_FAILED, error, 0);
  }

  /** The reply of a call its server refused: {@code reason} is the handler's message. */
  public static Reply rejected(String reason) {
    return new Reply(null, null, REJECTED, reason, 0);
  }

  /** The reply of a call that was dead-lettered after {@code attempts}. */
  public static Reply deadLettered(int attempts, String error) {
    return new Reply(
        null,
        null,
        DEAD_LETTER,
        "call was dead-lettered after " + attempts + " attempts: " + error,
        attempts);
  }

  /**
   * Takes the reply from the slot. Before the deadline it only reads: a slot that holds a reply is
   * never written again, so its reply is returned without waiting for a commit, and the slot is
   * cleared a little later with others ({@link DeferredClears}); a slot still empty is left for the
   * reply to come. At the deadline ({@code timedOut}) it reads and clears the slot in one
   * transaction, so that a reply either is in what it read or is never written. A kept reply
   * ({@link KeptReplies}) is only ever read, at the deadline too, and reads as gone once expired.
   * Holds no thread while it waits.
   */
  CompletableFuture<Taken> take(From from, boolean timedOut) {
    Subspace slot = slotOf(from);
    boolean kept = KeptReplies.isKept(from);
    if (kept && KeptReplies.expired(from.slotSeconds(), wallMillis.getAsLong())) {
      return CompletableFuture.completedFuture(new Taken(List.of(), false));
    }
    if (!timedOut || kept) { // a kept reply is never cleared by its readers: a read is enough
      return backend.runAsync(
          tx ->
              tx.snapshot()
                  .getRangeAsync(
                      slot.range().begin, slot.range().end, ReadTransaction.UNLIMITED, false)
                  .thenApply(
                      rows -> {
                        boolean replied = !rows.isEmpty() && rows.get(0).value().length > 0;
                        if (replied) {
                          clearLater(from);
                        }
                        return new Taken(rows, !timedOut && !rows.isEmpty() && !replied);
                      }));
    }
    // Idempotent without a commit marker (a marker would outlive the slot): if an earlier attempt
    // read the reply and its clear applied before commit_unknown_result, the rows it read are the
    // reply.
    AtomicReference<List<KeyValue>> earlier = new AtomicReference<>(List.of());
    return backend.runAsync(
        tx ->
            tx.getRangeAsync(slot.range().begin, slot.range().end, ReadTransaction.UNLIMITED, false)
                .thenApply(
                    rows -> {
                      if (rows.isEmpty() && !earlier.get().isEmpty()) {
                        return new Taken(earlier.get(), false);
                      }
                      earlier.set(List.copyOf(rows));
                      tx.clearRange(slot.range().begin, slot.range().end);
                      return new Taken(rows, false);
                    }));
  }

  /**
   * Decodes a slot's rows into the reply value.
   *
   * @throws DeadLetterException if the call was dead-lettered
   * @throws UndecodableDataException if the reply is not valid or not of an allowed type
   */
  <R> R decode(List<KeyValue> rows, @Nullable Type replyType) {
    List<byte[]> parts = new ArrayList<>(rows.size());
    for (KeyValue kv : rows) {
      parts.add(kv.value());
    }
    Reply reply;
    try {
      reply = serde.read(Chunks.join(parts), Reply.class);
    } catch (RuntimeException e) {
      throw new UndecodableDataException("stored reply is not valid: " + context, e);
    }
    return valueOf(reply, replyType);
  }

  /**
   * A reply's value, or the failure it records.
   *
   * @throws CallRejectedException if the server refused the call
   * @throws DeadLetterException if the call was dead-lettered
   */
  private <R> R valueOf(Reply reply, @Nullable Type replyType) {
    if (reply.e() != null) {
      if (REJECTED.equals(reply.e())) {
        throw rejection(String.valueOf(reply.msg()), null);
      }
      if (TOO_LARGE.equals(reply.e())) {
        throw new ReplyTooLargeException(String.valueOf(reply.msg()), reply.n(), MAX_REPLY);
      }
      if (CALLBACK_FAILED.equals(reply.e())) {
        throw new io.dgen.CallbackException(
            "the callback failed where the server runs; nothing was committed: "
                + reply.msg()
                + " "
                + context,
            null);
      }
      if (DEAD_LETTER.equals(reply.e())) {
        throw new DeadLetterException(String.valueOf(reply.msg()), reply.n());
      }
      throw new DGenException("call failed: " + reply.e() + ": " + reply.msg() + " " + context);
    }
    return as(
        types.decodeReply(
            Objects.requireNonNull(reply.t(), "reply tag"),
            Objects.requireNonNull(reply.v(), "reply value"),
            replyType),
        replyType);
  }

  /**
   * What the caller of a call its server refused gets.
   *
   * @param reason the handler's message
   * @param cause the handler's exception, when the call ran in the caller's runtime
   */
  public CallRejectedException rejection(String reason, @Nullable Throwable cause) {
    return new CallRejectedException(
        "the server refused the call (TerminalException): "
            + reason
            + "; nothing of it was committed, and it is not retried: "
            + context,
        reason,
        cause);
  }

  /**
   * An inline or priority call's reply, taken when the callback replied: checked as a queued reply
   * would be ({@link #checkSize}), and the value itself if it is deeply immutable (the common case
   * costs nothing more), else a {@link Snapshot} of it, so that actions run before the caller gets
   * it cannot change what it gets.
   *
   * @param how "inline" or "priority", for the message
   * @throws ReplyTooLargeException if it is over the limit
   */
  @Nullable Object snapshot(@Nullable Object value, String how) {
    if (codec.isDeeplyImmutable(value)) {
      checkSize(value, how);
      return value;
    }
    Reply reply = ok(value);
    checkSize(serde.sizeOf(reply), how);
    return new Snapshot(reply);
  }

  /**
   * A reply handed over in this runtime (an inline or priority call's, or a queued one a consumer
   * here wrote), checked as a queued reply would be decoded; a {@link Snapshot} is decoded.
   */
  public <R> R local(@Nullable Object reply, @Nullable Type replyType) {
    if (reply instanceof Snapshot s) {
      return valueOf(s.reply(), replyType);
    }
    if (replyType == null) {
      types.checkReply(reply);
    }
    return as(reply, replyType);
  }

  @SuppressWarnings("unchecked")
  private <R> R as(@Nullable Object reply, @Nullable Type replyType) {
    if (replyType == null || reply == null || ReplyTypes.raw(replyType).isInstance(reply)) {
      return (R) reply;
    }
    return serde.fromTree(serde.toTree(reply), serde.type(replyType));
  }
}
