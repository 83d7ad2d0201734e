package io.dgen.admin;

import com.apple.foundationdb.subspace.Subspace;
import com.apple.foundationdb.tuple.ByteArrayUtil;
import com.apple.foundationdb.tuple.Tuple;
import io.dgen.backend.Backend;
import io.dgen.backend.KeyValue;
import io.dgen.backend.ReadTransaction;
import io.dgen.backend.Transaction;
import io.dgen.internal.base.OperationTimeouts;
import io.dgen.internal.codec.PlacementRecords;
import io.dgen.internal.codec.Serde;
import io.dgen.internal.keys.Buckets;
import io.dgen.internal.keys.ServerKeys;
import io.dgen.internal.keys.TenantKeys;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.UUID;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * The admin view of one tenant: its servers, listed from the tenant's server index {@code 0xFF (2,
 * tuid..)} (one short range read, no scan of the servers' keys).
 *
 * <p>A server is indexed by its start transaction; a server last started by a runtime older than
 * the index is not listed until it is started again, but {@link #server} still finds it by tuid.
 *
 * <p>A large tenant is read a page at a time: {@link #servers(Tuids.Prefix, Tuple, int)} and {@link
 * #summaries} read at most {@code limit} index entries from a cursor (the last tuid of the previous
 * page), within the tuids that start with a prefix; each page is one snapshot transaction, so a
 * tenant of any size costs one page's reads per call.
 */
public final class TenantAdmin {

  /**
   * A server in the index.
   *
   * @param tuid its identity
   * @param behaviour the class name of the behaviour that last started it
   */
  public record ServerEntry(Tuple tuid, String behaviour) {}

  /** The most index entries one page reads. */
  public static final int MAX_PAGE = 1000;

  /**
   * A page of the server index.
   *
   * @param servers the entries, in key order of their tuids
   * @param next the cursor of the next page (the last tuid of this one), or null if this page was
   *     the last
   */
  public record ServerPage(List<ServerEntry> servers, @Nullable Tuple next) {}

  /**
   * What a listing shows of a server, read in the page's transaction without decoding its state or
   * messages.
   *
   * @param tuid its identity
   * @param behaviour the class name of the behaviour that last started it, or null if the server is
   *     not indexed
   * @param pushed messages ever pushed (the push counter)
   * @param popped messages ever consumed (the pop counter)
   * @param oldestVersion the commit version of the transaction that queued the oldest item still
   *     queued (the first of each lane, whichever is older; an item re-queued counts from its
   *     re-queueing), if any: the lower, the longer it has waited; versions order pushes across all
   *     runtimes, but map to time only where the backend's versions follow the clock (FoundationDB:
   *     about a million a second)
   * @param hasDeadLetters whether it has at least one dead letter
   * @param lockedSince when its lock holder took the lock (the holder's clock), if locked ({@link
   *     Instant#EPOCH} if the lock record does not decode)
   * @param readVersion the read version of the transaction that read all this
   */
  public record ServerSummary(
      Tuple tuid,
      @Nullable String behaviour,
      long pushed,
      long popped,
      OptionalLong oldestVersion,
      boolean hasDeadLetters,
      Optional<Instant> lockedSince,
      long readVersion) {

    /** Pushes minus pops: the messages waiting. */
    public long queueLength() {
      return pushed - popped;
    }
  }

  /**
   * A page of server summaries.
   *
   * @param servers the summaries, in key order of their tuids
   * @param next the cursor of the next page, or null if this page was the last
   */
  public record SummaryPage(List<ServerSummary> servers, @Nullable Tuple next) {}

  private final Backend backend;
  private final List<String> path;
  private final Subspace subspace;
  private final TenantKeys keys;
  private final Serde serde;
  private final Clock clock;
  private final OperationTimeouts operations;
  private final String context;

  TenantAdmin(
      Backend backend,
      List<String> path,
      Subspace subspace,
      Serde serde,
      Clock clock,
      OperationTimeouts operations) {
    this.operations = operations;
    this.context = "tenant=" + path;
    this.backend = backend;
    this.path = path;
    this.subspace = subspace;
    // The stored bucket count, or the default for a tenant no runtime of this version opened yet
    // (nothing watches its buckets then); an admin tool never writes it.
    this.keys =
        new TenantKeys(
            subspace,
            operations.run(
                backend,
                tx -> Buckets.read(tx, subspace).orElse(Buckets.of(Buckets.DEFAULT_COUNT)),
                "TenantAdmin.open",
                context));
    this.serde = serde;
    this.clock = clock;
  }

  /**
   * A runtime that hosts kinds in this tenant, as its member record says.
   *
   * @param id its member id
   * @param host the host it runs on
   * @param pid its process id
   * @param startedAt when it started hosting here
   * @param lease how long its leases outlive its last heartbeat
   * @param kinds the kinds it hosts
   * @param heartbeat its heartbeat counter (changing while it lives)
   */
  public record Member(
      UUID id,
      String host,
      long pid,
      Instant startedAt,
      Duration lease,
      List<String> kinds,
      long heartbeat) {}

  /**
   * The lease of one bucket of one kind.
   *
   * @param kind the kind
   * @param bucket the bucket
   * @param holder the member holding it, or null if released
   * @param epoch its epoch: it changes with every holder
   */
  public record Lease(String kind, int bucket, @Nullable UUID holder, long epoch) {}

  /** How many buckets the tenant's servers hash into. */
  public int bucketCount() {
    return keys.buckets().count();
  }

  /** The runtimes hosting kinds in this tenant, by their member records (live or not). */
  public List<Member> members() {
    Subspace members = keys.members();
    List<KeyValue> rows =
        run("members", tx -> tx.snapshot().getRange(members.range().begin, members.range().end));
    List<Member> out = new ArrayList<>(rows.size());
    for (KeyValue kv : rows) {
      UUID id = members.unpack(kv.key()).getUUID(0);
      PlacementRecords.Member m = PlacementRecords.Member.decode(id, kv.value());
      out.add(
          new Member(
              id,
              m.host(),
              m.pid(),
              Instant.ofEpochMilli(m.startedAtMillis()),
              Duration.ofMillis(m.leaseMillis()),
              m.kinds(),
              m.heartbeat()));
    }
    return out;
  }

  /** Every lease of the tenant, by kind and bucket. */
  public List<Lease> leases() {
    Subspace leases = keys.leases();
    List<KeyValue> rows =
        run("leases", tx -> tx.snapshot().getRange(leases.range().begin, leases.range().end));
    List<Lease> out = new ArrayList<>(rows.size());
    for (KeyValue kv : rows) {
      Tuple t = leases.unpack(kv.key());
      PlacementRecords.Lease l =
          java.util.Objects.requireNonNull(PlacementRecords.Lease.decode(kv.value()));
      out.add(new Lease(t.getString(0), (int) t.getLong(1), l.owner(), l.epoch()));
    }
    return out;
  }

  /** The tenant's directory path. */
  public List<String> path() {
    return path;
  }

  /** Every indexed server, in key order of its tuid. */
  public List<ServerEntry> servers() {
    Subspace index = keys.servers();
    List<KeyValue> rows =
        run("servers", tx -> tx.snapshot().getRange(index.range().begin, index.range().end));
    List<ServerEntry> out = new ArrayList<>(rows.size());
    for (KeyValue kv : rows) {
      out.add(
          new ServerEntry(
              index.unpack(kv.key()), io.dgen.internal.keys.ServerEntry.describe(kv.value())));
    }
    return out;
  }

  /**
   * A page of the server index: at most {@code limit} entries whose tuids start with {@code
   * prefix}, after the tuid {@code after} (exclusive; null: from the first). One snapshot range
   * read.
   *
   * @throws IllegalArgumentException if {@code limit} is not within 1 and {@value #MAX_PAGE}
   * @throws io.dgen.OperationTimeoutException if the cluster does not answer in time
   */
  public ServerPage servers(Tuids.Prefix prefix, @Nullable Tuple after, int limit) {
    byte[][] range = range(prefix, after, limit);
    return run(
        "servers",
        tx -> {
          List<ServerEntry> out = entries(tx.snapshot(), range, limit);
          return new ServerPage(out, next(out, limit));
        });
  }

  /**
   * A page of the server index with each server's counters, oldest item, dead-letter presence and
   * lock, all read in one snapshot transaction: the index range, then six reads per server, issued
   * together. Nothing is decoded but the lock records.
   *
   * @see #servers(Tuids.Prefix, Tuple, int)
   * @throws IllegalArgumentException if {@code limit} is not within 1 and {@value #MAX_PAGE}
   * @throws io.dgen.OperationTimeoutException if the cluster does not answer in time
   */
  public SummaryPage summaries(Tuids.Prefix prefix, @Nullable Tuple after, int limit) {
    byte[][] range = range(prefix, after, limit);
    return run(
        "summaries",
        tx -> {
          ReadTransaction snap = tx.snapshot();
          List<ServerEntry> entries = entries(snap, range, limit);
          List<SummaryReads> reads = new ArrayList<>(entries.size());
          for (ServerEntry e : entries) {
            reads.add(
                new SummaryReads(snap, new ServerKeys(subspace, keys.buckets(), e.tuid()), serde));
          }
          List<ServerSummary> out = new ArrayList<>(entries.size());
          for (int i = 0; i < entries.size(); i++) {
            out.add(reads.get(i).summary(entries.get(i).behaviour()));
          }
          return new SummaryPage(out, next(entries, limit));
        });
  }

  /** {begin, end} of a page's index range. */
  private byte[][] range(Tuids.Prefix prefix, @Nullable Tuple after, int limit) {
    Objects.requireNonNull(prefix, "prefix must not be null");
    if (limit < 1 || limit > MAX_PAGE) {
      throw new IllegalArgumentException("limit must be within 1 and " + MAX_PAGE + ": " + limit);
    }
    Subspace index = keys.servers();
    byte[] begin = index.range().begin;
    byte[] end = index.range().end;
    if (!prefix.isAll()) {
      byte[] p = ByteArrayUtil.join(index.getKey(), prefix.packed());
      begin = p;
      end = ByteArrayUtil.strinc(p);
    }
    if (after != null) {
      byte[] past = ByteArrayUtil.join(index.pack(after), new byte[] {0});
      if (Arrays.compareUnsigned(past, begin) > 0) {
        begin = past;
      }
    }
    return new byte[][] {begin, end};
  }

  private List<ServerEntry> entries(ReadTransaction snap, byte[][] range, int limit) {
    Subspace index = keys.servers();
    List<KeyValue> rows = snap.getRange(range[0], range[1], limit, false);
    List<ServerEntry> out = new ArrayList<>(rows.size());
    for (KeyValue kv : rows) {
      out.add(
          new ServerEntry(
              index.unpack(kv.key()), io.dgen.internal.keys.ServerEntry.describe(kv.value())));
    }
    return out;
  }

  private static @Nullable Tuple next(List<ServerEntry> page, int limit) {
    return page.size() < limit ? null : page.get(page.size() - 1).tuid();
  }

  /**
   * The server {@code tuid}, if it is indexed or has any key (state, queue, dead letters...).
   * Nothing is created.
   */
  public Optional<ServerAdmin> server(Tuple tuid) {
    Objects.requireNonNull(tuid, "tuid must not be null");
    ServerKeys server = new ServerKeys(subspace, keys.buckets(), tuid);
    byte[] indexed =
        run(
            "server",
            tx -> {
              byte[] entry = tx.snapshot().get(keys.serverKey(tuid));
              if (entry != null) {
                return entry;
              }
              Subspace root = server.root();
              return tx.snapshot()
                      .getRange(root.range().begin, root.range().end, 1, false)
                      .isEmpty()
                  ? null
                  : new byte[0];
            });
    if (indexed == null) {
      return Optional.empty();
    }
    String behaviour =
        indexed.length == 0 ? null : io.dgen.internal.keys.ServerEntry.describe(indexed);
    return Optional.of(
        new ServerAdmin(backend, server, keys, behaviour, serde, clock, operations, context));
  }

  /**
   * Runs an admin transaction within the operation timeout.
   *
   * @throws io.dgen.OperationTimeoutException if the cluster does not answer in time
   */
  private <T> T run(String operation, Function<? super Transaction, ? extends T> body) {
    return operations.run(backend, body, "TenantAdmin." + operation, context);
  }
}
