package io.dgen;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.internal.codec.PlacementRecords;
import io.dgen.internal.keys.Buckets;
import io.dgen.internal.keys.TenantKeys;
import java.util.List;
import java.util.Objects;
import java.util.UUID;
import java.util.function.Consumer;

/**
 * A hosted server for the multi-JVM scale-out tests ({@link ScaleOutJvmsTest}): a total and a count
 * of the credits applied (exactly-once sums), and, recorded in the same transaction that applies
 * each credit, what placement looked like to it:
 *
 * <ul>
 *   <li><b>strays</b>: credits committed while the bucket's lease, read in the applying transaction
 *       itself, named another member. A runtime fenced by its lease commits none; a deposed one
 *       that ignored the lease would commit them here, so this is the exact check of fencing.
 *   <li><b>moves</b>: how often the applying runtime changed from one credit to the next, and when
 *       it last did (wall clock): across a failover, when the new holder first applied one.
 *   <li><b>maxStallMillis</b>: the longest time the server had a credit queued and applied none:
 *       for credit {@code i}, {@code applied(i) - max(applied(i-1), sent(i))} on the wall clock,
 *       which every JVM of one machine shares. Across a failover this is the gap the killed holder
 *       left.
 * </ul>
 *
 * <p>Every runtime gives it its own member id; the holder's post-commit actions report each
 * committed credit to the runtime's observer. Thread-safe: the callbacks keep no state of their
 * own.
 */
final class Ledger implements DGenServer<Ledger.State, Ledger.Msg> {

  /** The kind the tests host. */
  static final String KIND = "ledger";

  /**
   * The state.
   *
   * @param total the credits' amounts added up
   * @param count credits applied
   * @param strays credits committed while the lease named another member (must stay 0)
   * @param lastBy the member that applied the last credit
   * @param moves how often the applying member changed
   * @param lastAtMillis when the last credit was applied (wall clock)
   * @param maxStallMillis the longest time a queued credit waited with none applied
   * @param movedAtMillis when a credit was last applied by another runtime than the one before
   */
  record State(
      long total,
      long count,
      long strays,
      String lastBy,
      long moves,
      long lastAtMillis,
      long maxStallMillis,
      long movedAtMillis) {}

  sealed interface Msg permits Credit, Read {}

  /**
   * Adds {@code amount}; as a call, replies the new total.
   *
   * @param sentAtMillis when the sender sent it (wall clock)
   */
  record Credit(long amount, long sentAtMillis) implements Msg {}

  /** Replies the state. */
  record Read() implements Msg {}

  /** What a post-commit action reports: one credit committed, and whether it was a stray. */
  record Applied(Tuple tuid, boolean stray) {}

  private final UUID me;
  private final Consumer<Applied> observer;

  /**
   * @param me the member id of the runtime that runs this behaviour
   * @param observer told of each committed credit, after the commit
   */
  Ledger(UUID me, Consumer<Applied> observer) {
    this.me = Objects.requireNonNull(me);
    this.observer = observer;
  }

  @Override
  public InitResult<State> init(Object arg) {
    return InitResult.ok(new State(0, 0, 0, "", 0, 0, 0, 0));
  }

  @Override
  public Result<State> handleCastTx(TxContext tx, Msg message, State state) {
    if (message instanceof Credit c) {
      return credit(tx, c, state, false);
    }
    return Result.noReply(state);
  }

  @Override
  public Result<State> handleCallTx(TxContext tx, Msg request, From from, State state) {
    if (request instanceof Credit c) {
      return credit(tx, c, state, true);
    }
    return Result.reply(state, state);
  }

  private Result<State> credit(TxContext tx, Credit c, State s, boolean reply) {
    boolean stray = !me.equals(leaseHolder(tx));
    long now = System.currentTimeMillis();
    long stall =
        s.count() == 0 ? 0 : Math.max(0, now - Math.max(s.lastAtMillis(), c.sentAtMillis()));
    String by = me.toString();
    boolean moved = !s.lastBy().isEmpty() && !s.lastBy().equals(by);
    State next =
        new State(
            s.total() + c.amount(),
            s.count() + 1,
            s.strays() + (stray ? 1 : 0),
            by,
            s.moves() + (moved ? 1 : 0),
            now,
            Math.max(s.maxStallMillis(), stall),
            moved ? now : s.movedAtMillis());
    Tuple tuid = tx.tuid();
    List<Action<State>> report = List.of(committed -> observer.accept(new Applied(tuid, stray)));
    return reply ? Result.reply(next.total(), next, report) : Result.noReply(next, report);
  }

  /**
   * The holder of this server's bucket as the applying transaction reads it (the runtime's own
   * fence read it already at the same read version, serializably).
   */
  private static UUID leaseHolder(TxContext tx) {
    Tenant tenant = tx.tenant();
    Buckets buckets = Buckets.of(tenant.bucketCount());
    TenantKeys keys = new TenantKeys(tenant.subspace(), buckets);
    byte[] key = keys.leases().pack(Tuple.from(KIND, buckets.of(tx.tuid())));
    PlacementRecords.Lease lease =
        PlacementRecords.Lease.decode(tx.transaction().snapshot().get(key));
    return lease == null ? null : lease.owner();
  }
}
