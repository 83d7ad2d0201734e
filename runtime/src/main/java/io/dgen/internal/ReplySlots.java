package io.dgen.internal;

import com.apple.foundationdb.subspace.Subspace;
import io.dgen.DGenException;
import io.dgen.DeadLetterException;
import io.dgen.From;
import io.dgen.UndecodableDataException;
import io.dgen.backend.Backend;
import io.dgen.backend.KeyValue;
import io.dgen.backend.Transaction;
import io.dgen.internal.codec.Chunks;
import io.dgen.internal.codec.Reply;
import io.dgen.internal.codec.Serde;
import io.dgen.internal.codec.TypeRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The reply slots of one server's queued calls: a caller's {@link From} and the slot it names,
 * opening a slot, writing a reply into it (only while it exists), taking it (read and clear), and
 * the encoding of replies, successful or failed.
 *
 * <p>Never pushes messages and never waits: it hands out watches; the call protocol waits on them.
 */
final class ReplySlots {

  private static final Logger log = LoggerFactory.getLogger(ReplySlots.class);

  private static final byte[] EMPTY = new byte[0];

  private static final String DEAD_LETTER = "dead_letter";

  /** The longest a call may wait; older reply slots are swept as abandoned. */
  static final Duration MAX_CALL_TIMEOUT = Duration.ofHours(1);

  /** A slot as taken: its rows, or, if no reply has come yet, a watch to wait again on. */
  record Taken(List<KeyValue> rows, @Nullable CompletableFuture<Void> again) {}

  private final Backend backend;
  private final ServerKeys keys;
  private final Serde serde;
  private final TypeRegistry types;
  private final LongSupplier wallMillis;
  private final String context;

  ReplySlots(
      Backend backend,
      ServerKeys keys,
      Serde serde,
      TypeRegistry types,
      LongSupplier wallMillis,
      String context) {
    this.backend = backend;
    this.keys = keys;
    this.serde = serde;
    this.types = types;
    this.wallMillis = wallMillis;
    this.context = context;
  }

  /** A fresh caller identity, naming a slot not yet written. */
  From newFrom() {
    // The same clock as the sweep of abandoned slots, which compares these seconds with it.
    return new From(
        TimeUnit.MILLISECONDS.toSeconds(wallMillis.getAsLong()), UUID.randomUUID().toString());
  }

  private Subspace slotOf(From from) {
    return keys.slot(from.slotSeconds(), from.slotId());
  }

  /** Writes {@code from}'s empty slot and returns the watch that fires when a reply lands. */
  CompletableFuture<Void> open(Transaction tx, From from) {
    byte[] chunk0 = ServerKeys.slotChunk(slotOf(from), 0);
    tx.set(chunk0, EMPTY);
    return tx.watch(chunk0);
  }

  /**
   * A watch on a slot opened in an earlier attempt that committed (its watch died with that
   * attempt): a slot that is no longer empty (replied, or removed by a kill) is ready at once.
   */
  CompletableFuture<Void> reopen(Transaction tx, From from) {
    byte[] chunk0 = ServerKeys.slotChunk(slotOf(from), 0);
    byte[] v = tx.get(chunk0);
    return v != null && v.length == 0 ? tx.watch(chunk0) : CompletableFuture.completedFuture(null);
  }

  /** Writes {@code reply} into the caller's slot if the caller is still waiting. */
  void write(Transaction tx, From from, Reply reply) {
    Subspace slot = slotOf(from);
    byte[] chunk0 = ServerKeys.slotChunk(slot, 0);
    if (tx.get(chunk0) == null) {
      return; // the caller gave up (timeout) or the call was inline-failed: drop the reply
    }
    List<byte[]> parts = Chunks.split(serde.toBytes(reply), Chunks.MAX_VALUE);
    for (int i = 0; i < parts.size(); i++) {
      tx.set(ServerKeys.slotChunk(slot, i), parts.get(i));
    }
  }

  /** A successful reply. */
  Reply ok(@Nullable Object value) {
    return new Reply(types.replyTag(value), serde.toTree(value), null, null, 0);
  }

  /** The reply of a call that was dead-lettered after {@code attempts}. */
  static Reply deadLettered(int attempts, String error) {
    return new Reply(
        null,
        null,
        DEAD_LETTER,
        "call was dead-lettered after " + attempts + " attempts: " + error,
        attempts);
  }

  /**
   * Reads the slot and clears it in one transaction, unless it is still empty and the caller has
   * not timed out (then it returns a watch to wait again on).
   */
  Taken take(From from, boolean timedOut) {
    Subspace slot = slotOf(from);
    byte[] chunk0 = ServerKeys.slotChunk(slot, 0);
    // Idempotent without a commit marker (a marker would outlive the slot): if an earlier attempt
    // read the reply and its clear applied before commit_unknown_result, the rows it read are the
    // reply.
    List<KeyValue> earlier = new ArrayList<>();
    return backend.run(
        tx -> {
          List<KeyValue> rows = tx.getRange(slot.range().begin, slot.range().end);
          if (rows.isEmpty() && !earlier.isEmpty()) {
            return new Taken(List.copyOf(earlier), null);
          }
          earlier.clear();
          earlier.addAll(rows);
          boolean empty = !rows.isEmpty() && rows.get(0).value().length == 0;
          if (empty && !timedOut) {
            return new Taken(rows, tx.watch(chunk0)); // no reply yet: wait again
          }
          tx.clearRange(slot.range().begin, slot.range().end);
          return new Taken(rows, null);
        });
  }

  /** Clears a slot whose caller stopped waiting; on failure the sweep removes it later. */
  void clearQuietly(From from) {
    try {
      Subspace slot = slotOf(from);
      backend.run(
          tx -> {
            tx.clearRange(slot.range().begin, slot.range().end);
            return null;
          });
    } catch (RuntimeException e) {
      log.warn(
          "could not clear a reply slot (it will be swept by age): {} from={}", context, from, e);
    }
  }

  /**
   * Decodes a slot's rows into the reply value.
   *
   * @throws DeadLetterException if the call was dead-lettered
   * @throws UndecodableDataException if the reply is not valid or not of an allowed type
   */
  <R> R decode(List<KeyValue> rows, @Nullable Class<R> replyType) {
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
    if (reply.e() != null) {
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

  /** An inline or priority reply, checked as a queued reply would be decoded. */
  <R> R local(@Nullable Object reply, @Nullable Class<R> replyType) {
    if (replyType == null) {
      types.checkReply(reply);
    }
    return as(reply, replyType);
  }

  @SuppressWarnings("unchecked")
  private <R> R as(@Nullable Object reply, @Nullable Class<R> replyType) {
    if (replyType == null || reply == null || replyType.isInstance(reply)) {
      return (R) reply;
    }
    return serde.fromTree(serde.toTree(reply), serde.type(replyType));
  }
}
