package io.dgen.admin;

import com.apple.foundationdb.subspace.Subspace;
import com.apple.foundationdb.tuple.ByteArrayUtil;
import com.apple.foundationdb.tuple.Tuple;
import io.dgen.admin.ServerAdmin.DeadLetterEntry;
import io.dgen.admin.ServerAdmin.KeptReply;
import io.dgen.admin.ServerAdmin.PendingTimer;
import io.dgen.admin.ServerAdmin.QueuedItem;
import io.dgen.admin.ServerAdmin.TimerPage;
import io.dgen.backend.KeyValue;
import io.dgen.backend.ReadTransaction;
import io.dgen.internal.codec.Chunks;
import io.dgen.internal.codec.DeadRecord;
import io.dgen.internal.codec.Envelope;
import io.dgen.internal.codec.Reply;
import io.dgen.internal.codec.Serde;
import io.dgen.internal.keys.ServerKeys;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import tools.jackson.databind.JsonNode;

/**
 * Turns the rows {@link ServerAdmin} reads into its records, without the server's classes: queued
 * items and dead letters decoded as trees, timers, kept replies from their chunks, a page of
 * timers, and the ids (hex versionstamps) the admin lists and takes. Reads nothing itself.
 */
final class AdminRecords {

  private final Serde serde;

  AdminRecords(Serde serde) {
    this.serde = serde;
  }

  /** The server's type table (index to class name), from its rows. */
  static Map<Integer, String> types(Subspace table, List<KeyValue> rows) {
    Map<Integer, String> out = new HashMap<>();
    for (KeyValue kv : rows) {
      out.put(
          (int) table.unpack(kv.key()).getLong(0), new String(kv.value(), StandardCharsets.UTF_8));
    }
    return out;
  }

  /** A queued message (an envelope) as a record; one that does not decode says why. */
  QueuedItem item(String id, byte[] raw, Map<Integer, String> types) {
    Envelope env;
    try {
      env = Envelope.decode(raw, serde);
    } catch (RuntimeException e) {
      return new QueuedItem(id, "?", null, 0, null, e.getMessage());
    }
    String kind = env.isCall() ? "call" : "cast";
    String type =
        env.typeName() != null
            ? env.typeName()
            : env.typeIndex() == Envelope.DECLARED
                ? null
                : types.getOrDefault(env.typeIndex(), "#" + env.typeIndex());
    try {
      JsonNode message =
          serde.mapper().readTree(env.bytes(), env.messageOffset(), env.messageLength());
      return new QueuedItem(id, kind, type, env.failures(), message, null);
    } catch (RuntimeException e) {
      return new QueuedItem(id, kind, type, env.failures(), null, e.getMessage());
    }
  }

  /** A dead letter, from its row in the server's {@code dead} subspace. */
  DeadLetterEntry deadLetter(Subspace dead, KeyValue kv, Map<Integer, String> types) {
    String id = ServerKeys.stampId(dead.unpack(kv.key()).getVersionstamp(0));
    DeadRecord d = DeadRecord.decode(kv.value(), serde);
    return new DeadLetterEntry(
        id, d.attempts(), d.error(), Instant.ofEpochMilli(d.at()), item(id, d.envelope(), types));
  }

  /** A pending timer, from its stored keys. */
  PendingTimer timer(ServerKeys.PendingTimer t, Map<Integer, String> types) {
    Instant due = Instant.EPOCH.plus(t.dueMicros(), ChronoUnit.MICROS);
    QueuedItem item =
        t.envelope() == null
            ? new QueuedItem("", "cast", null, 0, null, "the timer's index entry is missing")
            : item("", t.envelope(), types);
    return new PendingTimer(t.id(), due, item, t.schedule());
  }

  /**
   * The rows of at least the first {@code limit} kept replies: a reply of several chunks takes
   * several rows, so a little more than {@code limit} rows, and the rest of a reply the read's
   * limit cut.
   */
  static List<KeyValue> keptRows(ReadTransaction snapshot, Subspace kept, int limit) {
    int rowLimit = limit + 8;
    List<KeyValue> read = snapshot.getRange(kept.range().begin, kept.range().end, rowLimit, false);
    if (read.size() < rowLimit) {
      return read;
    }
    Tuple last = kept.unpack(read.get(read.size() - 1).key());
    Subspace slot = kept.subspace(Tuple.from(last.getLong(0), last.getString(1)));
    List<KeyValue> all = new ArrayList<>(read);
    all.addAll(
        snapshot.getRange(
            ByteArrayUtil.join(read.get(read.size() - 1).key(), new byte[] {0}), slot.range().end));
    return all;
  }

  /** The first {@code limit} kept replies of {@link #keptRows}' rows, each from its chunks. */
  List<KeptReply> keptReplies(Subspace kept, List<KeyValue> rows, int limit) {
    List<KeptReply> out = new ArrayList<>();
    int i = 0;
    while (i < rows.size() && out.size() < limit) {
      Tuple slot = kept.unpack(rows.get(i).key());
      long expiry = slot.getLong(0);
      String slotId = slot.getString(1);
      List<byte[]> chunks = new ArrayList<>();
      while (i < rows.size()) {
        Tuple t = kept.unpack(rows.get(i).key());
        if (t.getLong(0) != expiry || !t.getString(1).equals(slotId)) {
          break;
        }
        chunks.add(rows.get(i).value());
        i++;
      }
      out.add(keptReply(expiry, slotId, chunks));
    }
    return out;
  }

  private KeptReply keptReply(long expirySecond, String slotId, List<byte[]> chunks) {
    String callId = ServerKeys.keptCallId(expirySecond, slotId);
    Instant expires = Instant.ofEpochSecond(expirySecond);
    if (chunks.get(0).length == 0) {
      return new KeptReply(callId, expires, "waiting", null, null, null);
    }
    Reply reply;
    try {
      reply = serde.read(Chunks.join(chunks), Reply.class);
    } catch (RuntimeException e) {
      return new KeptReply(
          callId, expires, "replied", null, null, "the reply does not decode: " + e.getMessage());
    }
    if (reply.e() != null) {
      return new KeptReply(callId, expires, "failed", null, null, reply.e() + ": " + reply.msg());
    }
    return new KeptReply(callId, expires, "replied", reply.t(), reply.v(), null);
  }

  /**
   * A page of at most {@code limit} timers from {@code read}, which holds the first {@code limit +
   * 1} by id if there are that many: the page is the first {@code limit} ids, and its greatest id
   * is where the next page starts.
   */
  static TimerPage page(List<PendingTimer> read, int limit) {
    if (read.size() <= limit) {
      return new TimerPage(read, null);
    }
    // drop the greatest id read
    String greatest = read.get(0).id();
    for (PendingTimer t : read) {
      if (idOrder(t.id(), greatest) > 0) {
        greatest = t.id();
      }
    }
    List<PendingTimer> page = new ArrayList<>(limit);
    String last = null;
    for (PendingTimer t : read) {
      if (!t.id().equals(greatest)) {
        page.add(t);
        if (last == null || idOrder(t.id(), last) > 0) {
          last = t.id();
        }
      }
    }
    return new TimerPage(page, last);
  }

  /** Compares timer ids in the order of the server's timer keys (their uuids). */
  private static int idOrder(String a, String b) {
    return Arrays.compareUnsigned(
        Tuple.from(ServerKeys.timerUuid(a)).pack(), Tuple.from(ServerKeys.timerUuid(b)).pack());
  }

  static void checkLimit(int limit, int least) {
    if (limit < least) {
      throw new IllegalArgumentException("limit must be at least " + least + ": " + limit);
    }
  }
}
