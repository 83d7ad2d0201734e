package io.dgen.internal.codec;

import com.apple.foundationdb.tuple.Tuple;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.jspecify.annotations.Nullable;

/**
 * The stored records of a tenant's placement (see {@code docs/scale-out.md}): a member's record
 * {@code FF (9, memberId)} and a lease of {@code (kind, bucket)}, both packed tuples. The live
 * placement writes and reads them; the admin tools read them without one. Not an API.
 */
public final class PlacementRecords {

  private PlacementRecords() {}

  /**
   * A member record as stored: its heartbeat counter, lease, start, host, pid and kinds.
   *
   * @param id the member's id (the record's key, not its value)
   * @param heartbeat the counter its holder rewrites on every heartbeat
   * @param leaseMillis the member's lease duration
   * @param startedAtMillis wall-clock milliseconds when the member started
   * @param host the member's host name
   * @param pid the member's process id
   * @param kinds the kinds the member hosts
   */
  public record Member(
      UUID id,
      long heartbeat,
      long leaseMillis,
      long startedAtMillis,
      String host,
      long pid,
      List<String> kinds) {

    /**
     * The record's bytes: the tuple {@code (heartbeat, lease, started, host, pid, (kinds..))}.
     *
     * @return the packed tuple
     */
    public byte[] encode() {
      return Tuple.from(heartbeat, leaseMillis, startedAtMillis, host, pid, Tuple.fromList(kinds))
          .pack();
    }

    /**
     * Decodes a member record.
     *
     * @param id the member's id, from the record's key
     * @param value the record's bytes
     * @return the record
     */
    public static Member decode(UUID id, byte[] value) {
      Tuple t = Tuple.fromBytes(value);
      List<String> kinds = new ArrayList<>();
      for (Object k : t.getNestedTuple(5).getItems()) {
        kinds.add((String) k);
      }
      return new Member(
          id, t.getLong(0), t.getLong(1), t.getLong(2), t.getString(3), t.getLong(4), kinds);
    }
  }

  /**
   * A lease as stored: its holder (none once released) and its epoch.
   *
   * @param owner the holding member, null once released
   * @param epoch incremented by every change of holder
   */
  public record Lease(@Nullable UUID owner, long epoch) {

    /**
     * The record's bytes: the tuple {@code (owner, epoch)}.
     *
     * @return the packed tuple
     */
    public byte[] encode() {
      return Tuple.from(owner, epoch).pack();
    }

    /**
     * Decodes a lease.
     *
     * @param value the record's bytes, null for none
     * @return the lease; null for none
     */
    public static @Nullable Lease decode(byte @Nullable [] value) {
      if (value == null) {
        return null;
      }
      Tuple t = Tuple.fromBytes(value);
      return new Lease(t.getUUID(0), t.getLong(1));
    }
  }
}
