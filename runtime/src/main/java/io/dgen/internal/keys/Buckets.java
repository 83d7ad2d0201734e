package io.dgen.internal.keys;

import com.apple.foundationdb.subspace.Subspace;
import com.apple.foundationdb.tuple.Tuple;
import com.google.common.hash.Hashing;
import io.dgen.backend.Backend;
import io.dgen.backend.ReadTransaction;
import java.util.Arrays;
import java.util.Optional;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A tenant's buckets: how many there are (stored once in the tenant's placement record {@code FF
 * (8)}, never changed silently) and which bucket a server's tuid hashes to. Every runtime of a
 * tenant computes the same bucket for a server, so it rings, watches and leases the same one.
 *
 * <p>Threading: thread-safe, immutable.
 */
public final class Buckets {

  private static final Logger log = LoggerFactory.getLogger(Buckets.class);

  /** The default bucket count of a tenant: 1,024. */
  public static final int DEFAULT_COUNT = 1_024;

  /** The most buckets a tenant may have. */
  public static final int MAX_COUNT = 65_536;

  private final int count;

  private Buckets(int count) {
    this.count = count;
  }

  /** Buckets of a tenant whose count is {@code count}. */
  public static Buckets of(int count) {
    return new Buckets(checkCount(count));
  }

  /**
   * Checks a bucket count given by a user.
   *
   * @throws IllegalArgumentException unless between 1 and {@value #MAX_COUNT}
   */
  public static int checkCount(int count) {
    if (count < 1 || count > MAX_COUNT) {
      throw new IllegalArgumentException(
          "a tenant's bucket count must be between 1 and " + MAX_COUNT + ", was " + count);
    }
    return count;
  }

  /** How many buckets the tenant has. */
  public int count() {
    return count;
  }

  /** The bucket of server {@code tuid}: a fingerprint of its packed tuid, modulo the count. */
  public int of(Tuple tuid) {
    return of(tuid.pack());
  }

  /** The bucket of the server whose packed tuid is {@code packedTuid}. */
  public int of(byte[] packedTuid) {
    long h = Hashing.farmHashFingerprint64().hashBytes(packedTuid).asLong();
    return (int) Long.remainderUnsigned(h, count);
  }

  /**
   * The tenant's stored bucket count, storing {@code wanted} if none is stored yet. A stored count
   * that differs from {@code wanted} wins, with a warning: changing it would move every server to
   * another bucket.
   *
   * @param context the tenant, for the warning
   */
  public static Buckets openOrCreate(Backend backend, Subspace tenant, int wanted, String context) {
    byte[] key = placementKey(tenant);
    int stored =
        backend.run(
            tx -> {
              Integer found = decode(tx.get(key));
              if (found != null) {
                return found;
              }
              tx.set(key, Tuple.from((long) wanted).pack());
              return wanted;
            });
    if (stored != wanted) {
      log.warn(
          "this runtime is configured for {} buckets, but the tenant's stored count is {}; using"
              + " the stored count (a change would move every server): {}",
          wanted,
          stored,
          context);
    }
    return new Buckets(stored);
  }

  /** The stored bucket count, if the tenant has one (for tools that must not write). */
  public static Optional<Buckets> read(ReadTransaction tx, Subspace tenant) {
    Integer found = decode(tx.get(placementKey(tenant)));
    return found == null ? Optional.empty() : Optional.of(new Buckets(found));
  }

  private static @Nullable Integer decode(byte @Nullable [] value) {
    if (value == null) {
      return null;
    }
    return checkCount((int) Tuple.fromBytes(value).getLong(0));
  }

  @Override
  public String toString() {
    return count + " buckets";
  }

  /** The subspace of the tenant's reserved keys that holds its placement record. */
  static final long PLACEMENT = 8;

  /** The byte after the tenant's prefix that no packed tuple starts with. */
  private static final byte RESERVED = (byte) 0xFF;

  /** The prefix of {@code tenant}'s reserved keys (see {@link TenantKeys}). */
  static byte[] tenantPrefix(Subspace tenant) {
    byte[] t = tenant.getKey();
    byte[] p = Arrays.copyOf(t, t.length + 1);
    p[t.length] = RESERVED;
    return p;
  }

  /** The placement record of {@code tenant}, read before its bucket count is known. */
  static byte[] placementKey(Subspace tenant) {
    return new Subspace(tenantPrefix(tenant)).pack(Tuple.from(PLACEMENT));
  }
}
